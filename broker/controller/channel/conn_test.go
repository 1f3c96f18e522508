package channel

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// With ReuseResponseBuffer a connection reads each response into the
// buffer of the largest one so far, and without it into a new one: the
// bytes are right either way, and only the reusing connection shares
// memory between responses.
func TestReadFrameReusesBuffer(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		client, server := net.Pipe()
		t.Cleanup(func() { client.Close(); server.Close() })
		c := &conn{nc: client, maxResp: 1 << 20, reuse: reuse}
		frames := [][]byte{bytes.Repeat([]byte{1}, 100_000), bytes.Repeat([]byte{2}, 5_000), bytes.Repeat([]byte{3}, 70_000)}
		go func() {
			for _, f := range frames {
				_, _ = server.Write(binary.BigEndian.AppendUint32(nil, uint32(len(f))))
				_, _ = server.Write(f)
			}
		}()
		var got [][]byte
		for range frames {
			b, err := c.readFrame(c.reuse)
			require.NoError(t, err)
			require.Equal(t, frames[len(got)], b, "reuse=%v: response %d", reuse, len(got))
			got = append(got, b)
		}
		shared := &got[0][0] == &got[1][0] && &got[1][0] == &got[2][0]
		require.Equal(t, reuse, shared, "reuse=%v: one buffer for every response", reuse)
	}
}
