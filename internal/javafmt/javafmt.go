// Package javafmt formats numbers as Java prints them, for the places
// where qk's output must read as Kafka's: Double.toString for described
// broker configs, kafka-configs.sh's quota values and the perf tools'
// figures. One definition, used by broker/config, broker/clientquota,
// admin and perf (admin and perf may not import broker packages, so it
// lives here).
package javafmt

import (
	"math"
	"strconv"
	"strings"
)

// Double is Java's Double.toString (JDK 19+, shortest digits that round
// trip): "1048576.0", "12.5", "0.001", "1.048576E7", "1.0E-4",
// "Infinity", "NaN", "-0.0". Plain notation for magnitudes in
// [10^-3, 10^7), computerized scientific notation otherwise.
func Double(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(v, 'e', -1, 64), "e") // 1.048576e+07
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
