//go:build linux

package broker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCtx is a context that ends with the test or after a minute.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a franz-go client of the given brokers, closed at the
// end of the test.
func newClient(t *testing.T, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t *testing.T, addrs ...string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, addrs))
}

// createTopic creates a topic and fails the test on any error.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t), partitions, 1, configs, topic)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// consume reads n records from the start of topic.
func consume(t *testing.T, addrs []string, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addrs, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(out), n)
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// rawConn is a bare TCP connection speaking Kafka frames, for requests a
// client library would not send.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
	// clientID of the requests ("raw-test" when empty).
	clientID string
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// writeFrame sends a size prefix and body as given.
func (r *rawConn) writeFrame(body []byte) {
	r.t.Helper()
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_, err := r.c.Write(append(b, body...))
	require.NoError(r.t, err)
}

// readFrame reads one response frame (without its size prefix).
func (r *rawConn) readFrame() ([]byte, error) {
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r.c, b)
	return b, err
}

// request encodes req with a request header (v2 for flexible versions).
func (r *rawConn) request(req kmsg.Request) []byte {
	r.corr++
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(r.corr))
	id := "raw-test"
	if r.clientID != "" {
		id = r.clientID
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// roundTrip sends req and decodes the response into resp; it returns the
// raw response body too.
func (r *rawConn) roundTrip(req kmsg.Request, resp kmsg.Response) []byte {
	r.t.Helper()
	r.writeFrame(r.request(req))
	b, err := r.readFrame()
	require.NoError(r.t, err)
	require.Equal(r.t, r.corr, int32(binary.BigEndian.Uint32(b)), "correlation id")
	b = b[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		require.Equal(r.t, byte(0), b[0], "empty response header tags")
		b = b[1:]
	}
	require.NoError(r.t, resp.ReadFrom(b))
	return b
}

// closed reports whether the broker closed the connection (EOF or reset
// within the deadline).
func (r *rawConn) closed() bool {
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	_, err := r.c.Read(b[:])
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}
