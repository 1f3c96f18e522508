package record

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPoolResetsOnPut(t *testing.T) {
	created := 0
	p := newPool(
		func() *[]byte { created++; return new([]byte) },
		func(b *[]byte) { *b = nil },
	)
	v := p.get()
	require.Equal(t, 1, created)
	*v = []byte("caller's buffer")
	p.put(v)
	require.Nil(t, *v, "put must run the reset hook before pooling")
}

// The codecs' pooled streams must let go of the caller's buffers when they
// go back: an idle pool would otherwise pin a batch's memory. (Reading v
// after put is only safe here, with one goroutine.)
func TestCodecPoolsDropBuffers(t *testing.T) {
	buf := payload(4<<10, 3)

	ge := gzipEncoders.get()
	ge.out.b = buf
	gzipEncoders.put(ge)
	require.Nil(t, ge.out.b, "gzip encoder")

	le := lz4Encoders.get()
	le.out.b = buf
	lz4Encoders.put(le)
	require.Nil(t, le.out.b, "lz4 encoder")

	gd := gzipDecoders.get()
	gd.in.Reset(buf)
	gzipDecoders.put(gd)
	require.Zero(t, gd.in.Size(), "gzip decoder")

	ld := lz4Decoders.get()
	ld.in.Reset(buf)
	lz4Decoders.put(ld)
	require.Zero(t, ld.in.Size(), "lz4 decoder")
}
