//go:build linux

package broker_test

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// dialRawFrom is dialRaw from the loopback address src.
func dialRawFrom(t *testing.T, src, addr string) *rawConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// TestBrokerConnectionLimits: the broker settings reach the network layer:
// max.connections.per.ip.overrides caps one address, a trickled request is
// closed after qk.socket.request.read.timeout.ms, and with
// queued.max.request.bytes set a producer's records all arrive.
func TestBrokerConnectionLimits(t *testing.T) {
	b := brokertest.StartBroker(t,
		brokertest.WithConfig("max.connections.per.ip.overrides", "127.0.0.2:2"),
		brokertest.WithConfig("queued.max.request.bytes", "1048576"),
		brokertest.WithConfig("qk.socket.request.read.timeout.ms", "500"))
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "limits", 1, nil)
	apiVersions := func(c *rawConn) {
		t.Helper()
		req := kmsg.NewPtrApiVersionsRequest()
		resp := kmsg.NewPtrApiVersionsResponse()
		c.roundTrip(req, resp)
		require.Equal(t, int16(0), resp.ErrorCode)
	}
	a1, a2 := dialRawFrom(t, "127.0.0.2", b.Addr), dialRawFrom(t, "127.0.0.2", b.Addr)
	apiVersions(a1)
	apiVersions(a2)
	require.True(t, dialRawFrom(t, "127.0.0.2", b.Addr).closed(), "third connection from 127.0.0.2")
	apiVersions(dialRawFrom(t, "127.0.0.3", b.Addr))

	slow := dialRawFrom(t, "127.0.0.3", b.Addr)
	_, err := slow.c.Write(binary.BigEndian.AppendUint32(nil, 10<<20))
	require.NoError(t, err)
	start := time.Now()
	require.True(t, slow.closed(), "trickled request closed")
	require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)

	prod := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("limits"))
	value := make([]byte, 64<<10)
	const n = 64
	batch := make([]*kgo.Record, n)
	for i := range batch {
		value[0] = byte(i)
		batch[i] = &kgo.Record{Value: append([]byte(nil), value...)}
	}
	require.NoError(t, prod.ProduceSync(testCtx(t), batch...).FirstErr())
	recs := consume(t, []string{b.Addr}, "limits", n)
	for i, r := range recs {
		require.Equal(t, byte(i), r.Value[0])
		require.Len(t, r.Value, len(value))
	}
	apiVersions(a1)
}
