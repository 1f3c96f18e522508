//go:build linux

package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/internal/fuzzcorpus"
)

var update = flag.Bool("update", false, "rewrite the seed files of testdata/fuzz")

// fuzzMaxFrame is socket.request.max.bytes of the stream fuzz server:
// small, so that the fuzzer reaches the over-size close with a few bit
// flips instead of a 100 MiB frame.
const fuzzMaxFrame = 4096

// fuzzMaxStream bounds an input's stream (longer inputs are cut), so a
// byte-at-a-time input stays under a second.
const fuzzMaxStream = 16 << 10

// streamWant is what the network layer must do with a byte stream: echo
// frames (each with its size prefix) in order, then either close the
// connection for the reason closeReason names (a substring of its Warn
// line), or keep it open, with a partial frame pending or not.
type streamWant struct {
	frames      [][]byte
	closeReason string
	partial     bool
}

// frameStream is the model of the processor's framing (doc.go,
// Processors): a size prefix, then size bytes; a size outside
// 0..limit, a frame shorter than the 8-byte header start or a header
// that does not parse closes the connection.
func frameStream(b []byte, limit int32) streamWant {
	var w streamWant
	for i := 0; ; {
		rest := len(b) - i
		if rest < 4 {
			w.partial = rest > 0
			return w
		}
		size := int32(binary.BigEndian.Uint32(b[i:]))
		switch {
		case size < 0 || size > limit:
			w.closeReason = "request size outside 0..socket.request.max.bytes"
			return w
		case size < minFrameSize:
			w.closeReason = "request shorter than a request header"
			return w
		case rest-4 < int(size):
			w.partial = true
			return w
		}
		var r Request
		if err := parseHeader(&r, b[i+4:i+4+int(size)], nil); err != nil {
			w.closeReason = "malformed request header"
			return w
		}
		w.frames = append(w.frames, b[i:i+4+int(size)])
		i += 4 + int(size)
	}
}

type streamSeed struct {
	name   string
	stream []byte
	step   uint8
}

// streamSeeds are inputs for FuzzFrameStream: a stream and the size of
// the writes it is cut into (step+1 bytes; 0 sends a byte at a time).
func streamSeeds() []streamSeed {
	join := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	v := frame(18, 3, 1, ptr("c"), []byte{0, 1, 2})
	v0 := frame(7, 0, 2, nil, []byte{9})[:4+8+1] // ControlledShutdown v0: no client id
	binary.BigEndian.PutUint32(v0, 9)
	big := frame(0, 9, 3, ptr("producer"), make([]byte, fuzzMaxFrame-18))
	over := binary.BigEndian.AppendUint32(nil, fuzzMaxFrame+1)
	neg := []byte{0xff, 0xff, 0xff, 0xfe}
	short := []byte{0, 0, 0, 7, 0, 18, 0, 3, 0, 0, 0}
	badID := []byte{0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0x80, 0}
	overrun := []byte{0, 0, 0, 12, 0, 18, 0, 3, 0, 0, 0, 1, 0, 9, 'a', 'b'}
	return []streamSeed{
		{"one", v, 255},
		{"three-bytewise", join(v, v, v), 0},
		{"header-v0-and-max-size", join(v, v0, big), 17},
		{"partial", join(v, v[:7]), 3},
		{"over-size", join(v, over), 255},
		{"negative", join(v, neg), 1},
		{"short", join(v, short), 255},
		{"negative-client-id", join(v, badID, v), 255},
		{"client-id-overruns", join(v, overrun), 5},
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 255},
		{"partial-size", []byte{0, 0}, 0},
	}
}

// FuzzFrameStream sends an arbitrary byte stream, in writes of step+1
// bytes, to a server whose handler echoes every request frame. The
// server must echo every complete, well-formed frame, in order, until it
// closes the connection, close it only for a reason doc.go gives
// (over-size or negative size, a frame shorter than a header, a
// malformed header) with that reason's Warn line, keep it open otherwise
// (answering one more frame when no partial frame is pending), and never
// panic. One server serves every input, each on a new connection.
func FuzzFrameStream(f *testing.F) {
	corpus := map[string][]any{}
	for _, s := range streamSeeds() {
		f.Add(s.stream, s.step)
		corpus[s.name] = []any{s.stream, s.step}
	}
	if *update {
		fuzzcorpus.Write(f, "FuzzFrameStream", corpus)
	}
	logs := &logBuffer{out: io.Discard}
	s, err := New(Config{
		Listeners:             []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1"}},
		SocketRequestMaxBytes: fuzzMaxFrame,
		NumNetworkThreads:     1,
		NumIOThreads:          2,
		Logger:                slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, echo)
	require.NoError(f, err)
	require.NoError(f, s.Start())
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(f, s.Shutdown(ctx))
	})
	addr := s.Addrs()[0].String()

	f.Fuzz(func(t *testing.T, stream []byte, step uint8) {
		if len(stream) > fuzzMaxStream {
			stream = stream[:fuzzMaxStream]
		}
		want := frameStream(stream, fuzzMaxFrame)
		probe := frame(18, 3, 0x7eadbeef, ptr("probe"), nil)
		if want.closeReason == "" && !want.partial {
			want.frames = append(want.frames, probe)
		}
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
		remote := "remote=" + c.LocalAddr().String() + " "
		// Ports are reused: only lines logged from here on are this
		// connection's (the previous one was closed and its lines
		// written before this input began).
		logStart := len(logs.String())

		// Read concurrently: the server stops reading a connection
		// whose responses are not taken (MaxInFlightPerConnection).
		type result struct {
			frames [][]byte
			err    error
		}
		done := make(chan result, 1)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		go func() {
			var res result
			br := bufio.NewReader(c)
			for len(res.frames) < len(want.frames) {
				var size [4]byte
				if _, res.err = io.ReadFull(br, size[:]); res.err != nil {
					break
				}
				b := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
				copy(b, size[:])
				if _, res.err = io.ReadFull(br, b[4:]); res.err != nil {
					break
				}
				res.frames = append(res.frames, b)
			}
			if res.err == nil && want.closeReason != "" {
				// Every frame arrived; the close must follow.
				_, res.err = br.ReadByte()
			}
			done <- res
		}()

		require.NoError(t, c.SetWriteDeadline(time.Now().Add(10*time.Second)))
		out := stream
		if want.closeReason == "" && !want.partial {
			out = append(append([]byte(nil), stream...), probe...)
		}
		var werr error
		for i := 0; i < len(out) && werr == nil; i += int(step) + 1 {
			_, werr = c.Write(out[i:min(len(out), i+int(step)+1)])
		}
		if werr != nil && want.closeReason == "" {
			t.Fatalf("write failed on a connection the server must keep open: %v", werr)
		}
		res := <-done

		require.LessOrEqual(t, len(res.frames), len(want.frames))
		for i, got := range res.frames {
			require.Equal(t, want.frames[i], got, "echo %d of %d", i, len(want.frames))
		}
		closeLines := func() []string {
			var out []string
			for line := range strings.Lines(logs.String()[logStart:]) {
				if strings.Contains(line, "closing connection") && strings.Contains(line, remote) {
					out = append(out, line)
				}
			}
			return out
		}
		if want.closeReason == "" {
			require.NoError(t, res.err, "server closed a connection it must keep open")
			require.Len(t, res.frames, len(want.frames))
			require.Empty(t, closeLines())
			return
		}
		var nerr net.Error
		if res.err == nil || errors.As(res.err, &nerr) && nerr.Timeout() {
			t.Fatalf("connection not closed (want %q): read ended with %v", want.closeReason, res.err)
		}
		// The Warn line is written before the close, so it is there.
		lines := closeLines()
		require.Len(t, lines, 1, "close lines for %s", remote)
		require.Contains(t, lines[0], want.closeReason)
	})
}

// TestFrameStreamModel pins the model against the seeds, so a change in
// the framing rules shows here before the fuzzer finds it.
func TestFrameStreamModel(t *testing.T) {
	var got []string
	for _, s := range streamSeeds() {
		w := frameStream(s.stream, fuzzMaxFrame)
		got = append(got, w.closeReason)
	}
	require.Equal(t, []string{"", "", "", "", "request size outside 0..socket.request.max.bytes",
		"request size outside 0..socket.request.max.bytes", "request shorter than a request header",
		"malformed request header", "malformed request header", "request size outside 0..socket.request.max.bytes", ""}, got)
}
