//go:build linux

package network

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteQueueCompaction advances a long write queue part way: the
// consumed head is dropped, the partly written response keeps its place,
// and every response finishes once, in order.
func TestWriteQueueCompaction(t *testing.T) {
	p := &processor{}
	c := &conn{p: p, ring: make([]*Request, 8)}
	const n = 200
	var done []int
	for i := range n {
		r := &Request{conn: c}
		r.resp = &Response{
			Parts: []Part{{Bytes: []byte{byte(i), 1, 2}}, {Bytes: nil}},
			Done: func(err error) {
				require.NoError(t, err)
				done = append(done, i)
			},
		}
		require.NoError(t, c.enqueue(r))
		c.inFlight++
	}
	require.Len(t, c.segs, 2*n, "size prefix and one non-empty part per response")

	p.advance(c, 7*150+5) // 150 responses and 5 bytes of the next
	require.Len(t, done, 150)
	require.Zero(t, c.segHead, "compacted")
	require.Len(t, c.segs, 2*50-1)
	require.Equal(t, []byte{1, 2}, c.segs[0].b, "partly written part keeps its place")
	require.Equal(t, 50, c.inFlight)

	p.advance(c, 2+7*49)
	require.Len(t, done, n)
	for i, d := range done {
		require.Equal(t, i, d)
	}
	require.False(t, c.pendingWrite())
}

func TestResponseValidate(t *testing.T) {
	f := noFd{}
	tests := []struct {
		name string
		resp Response
		size int32
		err  string
	}{
		{"empty", Response{}, 0, ""},
		{"bytes and region", Response{Parts: []Part{{Bytes: []byte("ab")}, {Region: FileRegion{File: f, Offset: 9, Length: 5}}}}, 7, ""},
		{"both in one part", Response{Parts: []Part{{Bytes: []byte("ab"), Region: FileRegion{File: f, Length: 5}}}}, 0, "both bytes and a file region"},
		{"negative length", Response{Parts: []Part{{Region: FileRegion{File: f, Length: -1}}}}, 0, "negative"},
		{"negative offset", Response{Parts: []Part{{Region: FileRegion{File: f, Offset: -1, Length: 1}}}}, 0, "negative"},
		{"over 2 GiB", Response{Parts: []Part{{Region: FileRegion{File: f, Length: 1 << 30}}, {Region: FileRegion{File: f, Length: 1 << 30}}}}, 0, "larger than 2 GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, err := tt.resp.validate()
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.size, size)
			require.EqualValues(t, size, tt.resp.Len())
		})
	}
}
