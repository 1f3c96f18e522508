package log

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
)

func TestCountSegments(t *testing.T) {
	fsys := vfs.NewMem()
	touch := func(p string) {
		f, err := fsys.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	for _, d := range []string{"/a/t-0", "/a/t-1", "/a/u-0", "/b/t-2", "/a/t-3.abc-delete", "/a/t-4-future", "/a/__qk_metadata", "/a/x-stray"} {
		require.NoError(t, fsys.MkdirAll(d, 0o755))
	}
	touch("/a/t-0/" + "00000000000000000000.log")
	touch("/a/t-0/00000000000000000000.index")
	touch("/a/t-0/00000000000000000100.log")
	touch("/a/t-0/00000000000000000200.log.deleted") // not a live segment
	touch("/a/t-0/leader-epoch-checkpoint")
	touch("/a/t-1/00000000000000000000.log")
	// u-0 has no segment: loading makes one.
	touch("/b/t-2/00000000000000000000.log")
	touch("/b/t-2/00000000000000000050.log")
	touch("/b/t-2/00000000000000000090.log")
	touch("/a/t-3.abc-delete/00000000000000000000.log")
	touch("/a/t-4-future/00000000000000000000.log")
	touch("/a/recovery-point-offset-checkpoint")

	got, err := CountSegments(fsys, []string{"/a", "/b", "/missing"})
	require.NoError(t, err)
	require.Equal(t, DirUsage{Partitions: 4, Segments: 2 + 1 + 1 + 3}, got)
}

func TestCheckDescriptors(t *testing.T) {
	u := DirUsage{Partitions: 10_000, Segments: 11_101}
	require.NoError(t, CheckDescriptors(u, 20_000))
	require.NoError(t, CheckDescriptors(u, uint64(u.Segments+DescriptorReserve)))
	err := CheckDescriptors(u, 10_000)
	require.ErrorIs(t, err, ErrTooFewDescriptors)
	require.EqualError(t, err, "log: too few file descriptors: the log dirs hold 11101 segments in 10000 partitions, each kept open (one descriptor per segment), plus 1024 for connections and files: 12125, but the open-files limit (RLIMIT_NOFILE) is 10000; raise it to at least 12125 (ulimit -n 20000, or LimitNOFILE=20000 in the systemd unit)")
}
