package perf

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDateFormat(t *testing.T) {
	at := time.Date(2024, time.March, 5, 7, 8, 9, 45_000_000, time.FixedZone("CET", 3600))
	for _, tc := range []struct{ pattern, want string }{
		{DefaultDateFormat, "2024-03-05 07:08:09:045"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2024-03-05T07:08:09.045+01:00"},
		{"yy/M/d h:m:s a", "24/3/5 7:8:9 AM"},
		{"EEE, d MMM yyyy HH:mm:ss Z", "Tue, 5 Mar 2024 07:08:09 +0100"},
		{"EEEE MMMM DDD D z", "Tuesday March 065 65 CET"},
		{"'it''s' HH 'o''clock'", "it's 07 o'clock"},
		{"S", "45"},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			df, err := ParseDateFormat(tc.pattern)
			require.NoError(t, err)
			require.Equal(t, tc.want, df.Format(at))
		})
	}
	_, err := ParseDateFormat("yyyy-ww")
	require.ErrorContains(t, err, "unsupported pattern letter 'w'")
	_, err = ParseDateFormat("'open")
	require.ErrorContains(t, err, "unterminated quote")
}

func TestJavaDouble(t *testing.T) {
	require.Equal(t, "Infinity", javaF(math.Inf(1), 4))
	require.Equal(t, "NaN", javaF(math.NaN(), 4))
	for _, tc := range []struct {
		in   float64
		prec int
		want string
	}{
		{1.23456, 4, "1.2346"}, {10.25, 1, "10.3"}, {1.005, 2, "1.01"}, {9.995, 2, "10.00"},
		{19998.40014, 6, "19998.400140"}, {0, 2, "0.00"}, {2, 0, "2"}, {0.04, 1, "0.0"}, {99.96, 1, "100.0"},
	} {
		require.Equal(t, tc.want, javaF(tc.in, tc.prec), "%v %%.%df", tc.in, tc.prec)
	}
}
