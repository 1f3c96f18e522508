package zkstore

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
)

// TestMapErr: go-zookeeper's errors become metadata's sentinels. A request
// whose write to the socket fails gets the net error itself from the
// library (not ErrConnectionClosed): it is a connection loss too, and on
// a Store whose session is known to have expired, that expiry.
func TestMapErr(t *testing.T) {
	brokenPipe := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	timedOut := &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		name    string
		err     error
		expired bool
		want    error
	}{
		{name: "no node", err: zk.ErrNoNode, want: metadata.ErrNoNode},
		{name: "bad version", err: zk.ErrBadVersion, want: metadata.ErrBadVersion},
		{name: "connection closed", err: zk.ErrConnectionClosed, want: metadata.ErrConnectionLoss},
		{name: "no server", err: zk.ErrNoServer, want: metadata.ErrConnectionLoss},
		{name: "write broken pipe", err: brokenPipe, want: metadata.ErrConnectionLoss},
		{name: "write timed out", err: timedOut, want: metadata.ErrConnectionLoss},
		{name: "connection reset", err: fmt.Errorf("read: %w", syscall.ECONNRESET), want: metadata.ErrConnectionLoss},
		{name: "eof", err: io.EOF, want: metadata.ErrConnectionLoss},
		{name: "broken pipe after expiry", err: brokenPipe, expired: true, want: metadata.ErrSessionExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Store{done: make(chan struct{})}
			s.expired.Store(c.expired)
			got := s.mapErr(c.err)
			require.ErrorIs(t, got, c.want)
		})
	}
	t.Run("other", func(t *testing.T) {
		other := errors.New("something else")
		got := (&Store{done: make(chan struct{})}).mapErr(other)
		require.ErrorIs(t, got, other)
		require.NotErrorIs(t, got, metadata.ErrConnectionLoss)
	})
}
