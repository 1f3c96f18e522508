//go:build linux

package network

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"
)

func BenchmarkRoundTrip(b *testing.B) {
	b.Run("size=100B", func(b *testing.B) { benchRoundTrip(b, plain, 100, 1) })
	b.Run("size=1KiB", func(b *testing.B) { benchRoundTrip(b, plain, 1<<10, 1) })
	b.Run("size=16KiB", func(b *testing.B) { benchRoundTrip(b, plain, 16<<10, 1) })
	b.Run("size=1KiB/conns=4", func(b *testing.B) { benchRoundTrip(b, plain, 1<<10, 4) })
}

func BenchmarkSendfile(b *testing.B) {
	b.Run("size=1MiB/path=sendfile", func(b *testing.B) { benchFileResponse(b, plain, 1<<20, "sendfile") })
	b.Run("size=1MiB/path=copy", func(b *testing.B) { benchFileResponse(b, plain, 1<<20, "copy") })
	b.Run("size=1MiB/path=bytes", func(b *testing.B) { benchFileResponse(b, plain, 1<<20, "bytes") })
}

// BenchmarkFetchTLS is a fetch-shaped response, a 1 MiB file region
// (the sendfile path), to one client over plaintext and over TLS: over
// TLS the region is sendfile'd into the relay's socket pair, read back
// and encrypted (see tls.go). The client, in the same process, decrypts
// what it reads, so the TLS figure is both ends' cost, as a consumer on
// the broker's host would pay it.
func BenchmarkFetchTLS(b *testing.B) {
	b.Run("size=1MiB/transport=plaintext", func(b *testing.B) { benchFileResponse(b, plain, 1<<20, "sendfile") })
	b.Run("size=1MiB/transport=tls", func(b *testing.B) { benchFileResponse(b, newBenchTLS(b), 1<<20, "sendfile") })
	b.Run("size=64KiB/transport=plaintext", func(b *testing.B) { benchFileResponse(b, plain, 64<<10, "sendfile") })
	b.Run("size=64KiB/transport=tls", func(b *testing.B) { benchFileResponse(b, newBenchTLS(b), 64<<10, "sendfile") })
}

// BenchmarkRoundTripTLS is small pipelined requests and their echoes,
// produce-shaped, over plaintext and over TLS.
func BenchmarkRoundTripTLS(b *testing.B) {
	b.Run("size=1KiB/transport=plaintext", func(b *testing.B) { benchRoundTrip(b, plain, 1<<10, 1) })
	b.Run("size=1KiB/transport=tls", func(b *testing.B) { benchRoundTrip(b, newBenchTLS(b), 1<<10, 1) })
	b.Run("size=16KiB/transport=plaintext", func(b *testing.B) { benchRoundTrip(b, plain, 16<<10, 1) })
	b.Run("size=16KiB/transport=tls", func(b *testing.B) { benchRoundTrip(b, newBenchTLS(b), 16<<10, 1) })
}

// benchTransport is how a benchmark's server listens and its client
// connects: plaintext (nil) or TLS with a test CA.
type benchTransport struct {
	server, client *tls.Config
}

var plain *benchTransport

// newBenchTLS is a TLS transport with a fresh CA and Go's defaults (TLS
// 1.3, AES-128-GCM on a CPU with AES instructions).
func newBenchTLS(b *testing.B) *benchTransport {
	pki := newTestPKI(b)
	return &benchTransport{server: pki.serverConfig(tls.NoClientCert), client: &tls.Config{RootCAs: pki.pool, ServerName: "127.0.0.1"}}
}

// dial connects to addr over t and finishes the TLS handshake, so the
// timed loop has none of it.
func (t *benchTransport) dial(b *testing.B, addr string) net.Conn {
	b.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if t == nil {
		return c
	}
	tc := tls.Client(c, t.client)
	if err := tc.Handshake(); err != nil {
		b.Fatal(err)
	}
	return tc
}

func startBenchServer(b *testing.B, t *benchTransport, h Handler) string {
	b.Helper()
	l := Listener{Host: "127.0.0.1"}
	if t != nil {
		l.Name, l.TLS = "SSL", t.server
	}
	s, err := New(Config{
		Listeners: []Listener{l},
		Logger:    slog.New(slog.DiscardHandler),
	}, h)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			b.Error(err)
		}
	})
	return s.Addrs()[0].String()
}

// benchRoundTrip pipelines echo requests of size bytes (the whole frame) on
// conns connections: a writer goroutine per connection sends, the
// benchmark goroutines read the responses.
func benchRoundTrip(b *testing.B, t *benchTransport, size, conns int) {
	addr := startBenchServer(b, t, echo)
	f := frame(0, 9, 1, ptr("bench"), make([]byte, size-4-10-len("bench")))
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = t.dial(b, addr)
	}
	n := b.N
	b.ResetTimer()
	errs := make(chan error, 2*conns)
	for i, c := range cs {
		share := n / conns
		if i < n%conns {
			share++
		}
		go func() {
			w := bufio.NewWriterSize(c, 64<<10)
			for range share {
				if _, err := w.Write(f); err != nil {
					errs <- err
					return
				}
				if w.Buffered() > 16<<10 {
					w.Flush()
				}
			}
			errs <- w.Flush()
		}()
		go func() {
			r := bufio.NewReaderSize(c, 256<<10)
			var hdr [4]byte
			for range share {
				if _, err := io.ReadFull(r, hdr[:]); err != nil {
					errs <- err
					return
				}
				if _, err := r.Discard(int(binary.BigEndian.Uint32(hdr[:]))); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 * conns {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "req/s")
}

// benchFileResponse answers each request with a 4-byte header and size
// bytes of a page-cached file: with sendfile, with ReadAt+write (a file
// without descriptor), or from memory (bytes already read: the upper bound of
// any copying path).
func benchFileResponse(b *testing.B, t *benchTransport, size int, path string) {
	name := b.TempDir() + "/segment"
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 31)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var file File = f
	if path == "copy" {
		file = noFd{f}
	}
	hdr := []byte{0, 0, 0, 1}
	addr := startBenchServer(b, t, HandlerFunc(func(r *Request) {
		part := Part{Region: FileRegion{File: file, Length: int64(size)}}
		if path == "bytes" {
			part = Part{Bytes: data}
		}
		r.Respond(&Response{Parts: []Part{{Bytes: hdr}, part}})
	}))
	c := t.dial(b, addr)
	req := frame(1, 11, 1, ptr("bench"), nil)
	b.SetBytes(int64(size))
	b.ResetTimer()
	n := b.N
	errs := make(chan error, 1)
	go func() {
		for range n {
			if _, err := c.Write(req); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	buf := make([]byte, 1<<20)
	want := int64(n) * int64(4+4+size)
	for got := int64(0); got < want; {
		k, err := c.Read(buf[:min(int64(len(buf)), want-got)])
		if err != nil {
			b.Fatal(err)
		}
		got += int64(k)
	}
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
