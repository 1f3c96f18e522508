package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/vfs"
)

func TestRecordRoundTrip(t *testing.T) {
	effects := []effect{
		{kind: effectPut, path: "/a", stat: metadata.Stat{Czxid: 1, Mzxid: 2, Pzxid: 3, Ctime: 4, Mtime: 5, Version: 6, CVersion: 7}, data: []byte("hello")},
		{kind: effectPut, path: "/a/b"},
		{kind: effectStat, path: "/", stat: metadata.Stat{CVersion: 9, Pzxid: 8}},
		{kind: effectDelete, path: "/a/b"},
	}
	rec := encodeRecord(42, 1700000000000, effects)
	body, reason, _ := nextFrame(rec)
	require.Empty(t, reason)
	zxid, got, err := decodeBody(body)
	require.NoError(t, err)
	require.Equal(t, int64(42), zxid)
	require.Equal(t, effects, got)

	rec = encodeRecord(43, 0, nil)
	require.Len(t, rec, recordHeaderLen+minRecordBody)
	body, reason, _ = nextFrame(rec)
	require.Empty(t, reason)
	zxid, got, err = decodeBody(body)
	require.NoError(t, err)
	require.Equal(t, int64(43), zxid)
	require.Empty(t, got)
}

func TestNextFrame(t *testing.T) {
	rec := encodeRecord(7, 0, []effect{{kind: effectPut, path: "/x", data: []byte("data")}})
	n := len(rec)
	flip := func(i int) []byte {
		b := append([]byte(nil), rec...)
		b[i] ^= 1
		return b
	}
	cases := []struct {
		name   string
		b      []byte
		reason string // "" for a good frame
		tail   bool
	}{
		{"good", rec, "", false},
		{"good with more after", append(append([]byte(nil), rec...), rec...), "", false},
		{"empty header", rec[:0], "incomplete record header", true},
		{"short header", rec[:7], "incomplete record header", true},
		{"header only", rec[:recordHeaderLen], "runs past the end", true},
		{"one byte short", rec[:n-1], "runs past the end", true},
		{"body flipped", flip(n - 1), "checksum", true},
		{"crc flipped", flip(5), "checksum", true},
		{"length shrunk", func() []byte { b := flip(3); b[3] ^= 1; b[3] -= 4; return b }(), "checksum", false},
		{"length grown", func() []byte { b := flip(3); b[3] ^= 1; b[3] += 4; return b }(), "runs past the end", true},
		{"body flipped, zeros after", append(flip(n-1), make([]byte, 64)...), "checksum", true},
		{"body flipped, data after", append(flip(n-1), rec...), "checksum", false},
		{"zero length, zeros after", make([]byte, 64), "too small", true},
		{"tiny length, data after", []byte{0, 0, 0, 1, 0, 0, 0, 0, 5}, "too small", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, reason, tail := nextFrame(tc.b)
			if tc.reason == "" {
				require.Empty(t, reason)
				require.Len(t, body, n-recordHeaderLen)
				return
			}
			require.Contains(t, reason, tc.reason)
			require.Equal(t, tc.tail, tail)
			require.Nil(t, body)
		})
	}
}

func TestDecodeBodyErrors(t *testing.T) {
	good := encodeRecord(1, 0, []effect{{kind: effectPut, path: "/x", data: []byte("d")}})[recordHeaderLen:]
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string][]byte{
		"unknown type":        mutate(func(b []byte) []byte { b[0] = 9; return b }),
		"truncated":           good[:len(good)-1],
		"trailing bytes":      append(append([]byte(nil), good...), 0),
		"too many effects":    mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[17:], 1<<30); return b }),
		"unknown effect kind": mutate(func(b []byte) []byte { b[21] = 7; return b }),
		"relative path":       mutate(func(b []byte) []byte { b[26] = 'x'; return b }),
		"huge data length": mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[len(b)-5:], 1<<31)
			return b
		}),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := decodeBody(body)
			require.Error(t, err)
		})
	}
}

func TestSnapshotCodec(t *testing.T) {
	d := newDB(nowForTest, discard())
	for _, e := range []effect{
		{kind: effectPut, path: "/b", data: []byte("1"), stat: metadata.Stat{Czxid: 3, Version: 2}},
		{kind: effectPut, path: "/a"},
		{kind: effectPut, path: "/a/c", data: []byte("deep")},
		{kind: effectStat, path: "/", stat: metadata.Stat{CVersion: 2, Pzxid: 3}},
	} {
		require.NoError(t, d.applyEffect(e))
	}
	count := d.visitPersistent(nil)
	require.Equal(t, 4, count)
	b := encodeSnapshot(17, count, func(fn func(string, *metadata.Stat, []byte)) { d.visitPersistent(fn) })

	var paths []string
	d2 := newDB(nowForTest, discard())
	zxid, err := decodeSnapshot(b, func(path string, st metadata.Stat, data []byte) error {
		paths = append(paths, path)
		return d2.applyEffect(effect{kind: effectPut, path: path, stat: st, data: data})
	})
	require.NoError(t, err)
	require.Equal(t, int64(17), zxid)
	require.Equal(t, []string{"/", "/a", "/a/c", "/b"}, paths, "pre-order, children by name")
	for p, n := range d.nodes {
		require.Equal(t, n.stat, d2.nodes[p].stat, p)
		require.Equal(t, n.data, d2.nodes[p].data, p)
	}

	for name, bad := range map[string][]byte{
		"short":       b[:10],
		"crc":         append(append([]byte(nil), b[:len(b)-1]...), b[len(b)-1]^1),
		"magic":       withCRC(append([]byte("XXXX"), b[4:len(b)-4]...)),
		"version":     withCRC(append(append([]byte("QKMS"), 2), b[5:len(b)-4]...)),
		"count":       withCRC(append(append([]byte(nil), b[:13]...), append([]byte{0, 0, 0, 9}, b[17:len(b)-4]...)...)),
		"trailing":    withCRC(append(append([]byte(nil), b[:len(b)-4]...), 0)),
		"huge count":  withCRC(append(append([]byte(nil), b[:13]...), append([]byte{0xff, 0, 0, 0}, b[17:len(b)-4]...)...)),
		"orphan node": orphanSnapshot(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeSnapshot(bad, func(path string, st metadata.Stat, data []byte) error {
				return newDB(nowForTest, discard()).applyEffect(effect{kind: effectPut, path: path, stat: st, data: data})
			})
			require.Error(t, err)
		})
	}
}

func nowForTest() time.Time { return time.Unix(1700000000, 0) }

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func crcSnapshot(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func withCRC(b []byte) []byte {
	return appendU32(b, crcSnapshot(b))
}

func orphanSnapshot() []byte {
	b := append([]byte(snapshotMagic), snapshotVersion)
	b = appendI64(b, 1)
	b = appendU32(b, 1)
	b = appendBytes(b, []byte("/no/parent"))
	b = appendStat(b, &metadata.Stat{})
	b = appendBytes(b, nil)
	return withCRC(b)
}

// FuzzReplay feeds arbitrary log contents to Open: it must never panic,
// and whenever it succeeds the store must work.
func FuzzReplay(f *testing.F) {
	var log []byte
	for i, e := range [][]effect{
		{{kind: effectPut, path: "/a", data: []byte("x")}, {kind: effectStat, path: "/", stat: metadata.Stat{CVersion: 1}}},
		{{kind: effectPut, path: "/a/b"}, {kind: effectStat, path: "/a", stat: metadata.Stat{CVersion: 1}}},
		{{kind: effectDelete, path: "/a/b"}},
		nil,
	} {
		log = append(log, encodeRecord(int64(i+1), 0, e)...)
		f.Add(append([]byte(nil), log...))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		mem := vfs.NewMem()
		require.NoError(t, mem.MkdirAll("/m", 0o755))
		f, err := mem.OpenFile("/m/"+LogFile, os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		_, err = f.Write(b)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		s, err := Open(mem, "/m")
		if err != nil {
			var ce *CorruptError
			require.True(t, errors.As(err, &ce), "%v", err)
			return
		}
		defer s.Close()
		_, err = s.Create(context.Background(), "/fuzz-probe", nil, 0)
		if err != nil {
			require.ErrorIs(t, err, metadata.ErrNodeExists)
		}
	})
}
