package javafmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDouble: the union of the cases the four former copies were tested
// with (described configs, quota values, perf figures), as Java 17+
// prints them.
func TestDouble(t *testing.T) {
	for v, want := range map[float64]string{
		1048576: "1048576.0", 0: "0.0", 12.5: "12.5", 1e7: "1.0E7", 10485760: "1.048576E7",
		9999999: "9999999.0", 0.001: "0.001", 0.0001: "1.0E-4", 1.25e-5: "1.25E-5",
		9223372036854775807: "9.223372036854776E18", -3: "-3.0", 1.589512: "1.589512", 12: "12.0",
		0.5: "0.5", 1.5e7: "1.5E7", math.MaxFloat64: "1.7976931348623157E308", 1: "1.0",
		math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", math.NaN(): "NaN",
	} {
		require.Equal(t, want, Double(v), "%v", v)
	}
	require.Equal(t, "-0.0", Double(math.Copysign(0, -1)))
}
