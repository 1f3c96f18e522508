package admin

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTimeoutMillis(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want int32
	}{
		{110 * time.Second, 110000},
		{DefaultTimeout, 10000},
		{1500 * time.Microsecond, 1},
		{0, 1},
		{-time.Second, 1},
		{1000 * time.Hour, math.MaxInt32},
	} {
		require.Equal(t, tc.want, TimeoutMillis(tc.in), "%v", tc.in)
	}
}

// The client waits past the request's timeout_ms, so a broker that
// answers at timeout_ms (REQUEST_TIMED_OUT, or a late success) is heard.
func TestWaitOutlastsTimeout(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, time.Second, DefaultTimeout, 110 * time.Second} {
		w := Wait(d)
		require.GreaterOrEqual(t, w-d, 2*time.Second, "%v", d)
		require.GreaterOrEqual(t, w-d, d/10, "%v", d)
	}
	c := &Client{timeout: 110 * time.Second}
	ctx, cancel := c.Context(t.Context())
	defer cancel()
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	require.Greater(t, time.Until(dl), 110*time.Second)
}
