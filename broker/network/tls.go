//go:build linux

package network

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// TLS listeners.
//
// crypto/tls has no engine that a non-blocking event loop could drive
// (Java's SSLEngine, which Kafka's selector uses): it wants a net.Conn.
// So a TLS connection is terminated in front of the processors. The
// accepted socket stays with Go's poller; a goroutine does the handshake,
// then the connection gets a Unix socket pair: one end is handed to a
// processor exactly like an accepted plaintext socket, the other is
// relayed to and from the tls.Conn by two goroutines (relayIn, relayOut).
// Everything the processors do (framing, ordering, limits, backpressure,
// sendfile of file regions, into the pair) is unchanged; what it costs
// is two more copies through the kernel per byte, beside the encryption
// itself (BenchmarkFetchTLS and BenchmarkRoundTripTLS measure it).
//
// Backpressure holds: a muted processor stops reading its end, the pair's
// buffer fills, relayIn blocks writing it and stops reading the TLS
// connection, and TCP flow control slows the client. Closing: the client
// closing (or failing) makes relayIn shut the pair's write side, which the
// processor reads as the peer's EOF; the processor closing its end makes
// relayOut read EOF once it has relayed what was written before, and then
// close the TLS connection (close_notify). A client that does not read
// could hold relayOut in a write forever, so the processor's close also
// gives that write tlsLinger to finish (conn.onClose).

// tlsLinger is how long relayOut may go on writing to a TLS client once
// the processor has closed the connection: long enough for a last
// response (a SASL failure, say) to reach a client that reads.
const tlsLinger = 5 * time.Second

// relayBufSize is each relay direction's buffer: a TLS record holds at
// most 16 KiB of plaintext, and a full record per write keeps the record
// overhead small.
const relayBufSize = 16 << 10

// acceptTLS does the TLS handshake of a connection accepted on a TLS
// listener and, when it succeeds, hands the plaintext end of a socket
// pair to a processor and relays until either side closes. ip's count,
// taken by the acceptor, is released when the processor closes the
// connection, or here if it never gets that far.
func (s *Server) acceptTLS(nc net.Conn, l Listener, ip netip.Addr) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		s.quotas.dec(ip)
		return
	}
	if err := s.setBuffers(tc); err != nil {
		s.lg.Warn("cannot adopt connection", "listener", l.Name, "remote", addrString(nc.RemoteAddr()), "err", err)
		nc.Close()
		s.quotas.dec(ip)
		return
	}
	sc := tls.Server(nc, l.TLS)
	// The handshake ends at its timeout or when the server stops.
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.TLSHandshakeTimeout)
	go func() {
		select {
		case <-s.stopAccept:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := sc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		// Clients that give up, port scanners and wrong certificates all
		// end here; a line per connection names the cause, logged once
		// the connection's count is released.
		nc.Close()
		s.quotas.dec(ip)
		s.lg.Warn("closing connection: TLS handshake failed", "listener", l.Name,
			"remote", addrString(nc.RemoteAddr()), "err", handshakeErr(err))
		return
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		s.lg.Warn("cannot adopt connection", "listener", l.Name, "remote", addrString(nc.RemoteAddr()),
			"err", fmt.Errorf("socketpair: %w", err))
		nc.Close()
		s.quotas.dec(ip)
		return
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		nc.Close()
		s.quotas.dec(ip)
		return
	}
	f := os.NewFile(uintptr(fds[1]), "tls-relay")
	pc, err := net.FileConn(f) // a duplicate of fds[1], in Go's poller
	f.Close()
	if err != nil {
		unix.Close(fds[0])
		nc.Close()
		s.quotas.dec(ip)
		return
	}
	uc := pc.(*net.UnixConn)
	state := sc.ConnectionState()
	c := &conn{
		id:       s.nextConnID.Add(1),
		fd:       fds[0],
		listener: l.Name,
		remote:   nc.RemoteAddr(),
		local:    nc.LocalAddr(),
		ip:       ip,
		tls:      &state,
		maxFrame: max(l.MaxRequestSizeBeforeAuth, 0),
		onClose:  func() { nc.SetWriteDeadline(time.Now().Add(tlsLinger)) },
	}
	p := s.procs[(s.nextProc.Add(1)-1)%uint64(len(s.procs))]
	p.addConn(c)

	var wg sync.WaitGroup
	wg.Go(func() { relayIn(sc, uc) })
	relayOut(uc, sc)
	wg.Wait()
}

// relayIn copies what the client sends, decrypted, to the processor's
// end, and shuts the pair's write side when the client stops sending
// (EOF, an alert, a reset or the connection closed by relayOut).
func relayIn(sc *tls.Conn, uc *net.UnixConn) {
	buf := make([]byte, relayBufSize)
	for {
		n, err := sc.Read(buf)
		if n > 0 {
			if _, werr := uc.Write(buf[:n]); werr != nil {
				break // the processor closed its end: relayOut ends too
			}
		}
		if err != nil {
			break
		}
	}
	uc.CloseWrite()
}

// relayOut copies the processor's responses to the client, encrypted,
// until the processor closes its end, then closes the TLS connection,
// which also ends relayIn.
func relayOut(uc *net.UnixConn, sc *tls.Conn) {
	buf := make([]byte, relayBufSize)
	for {
		n, err := uc.Read(buf)
		if n > 0 {
			if _, werr := sc.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	sc.Close() // close_notify (bounded by the linger deadline), then the socket
	uc.Close()
}

// handshakeErr shortens the common handshake failures to what an
// operator needs; others are returned as they are.
func handshakeErr(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("not completed within the handshake timeout")
	case errors.Is(err, context.Canceled):
		return errors.New("broker shutting down")
	case errors.Is(err, io.EOF):
		return errors.New("client closed the connection during the handshake")
	}
	return err
}
