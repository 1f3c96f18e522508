//go:build linux

package broker_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// dropProxy forwards Kafka connections to a broker and, while drops are
// left, cuts the connection instead of delivering a Produce response: the
// broker has appended the batch, the client never hears of it and must
// retry.
type dropProxy struct {
	ln      net.Listener
	target  atomic.Value // string
	drops   atomic.Int32
	dropped atomic.Int32
	wg      sync.WaitGroup
}

func newDropProxy(t *testing.T) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &dropProxy{ln: ln}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *dropProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(b, size[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

func (p *dropProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target.Load().(string))
	if err != nil {
		return
	}
	defer server.Close()
	var mu sync.Mutex
	keys := map[int32]int16{} // correlation id -> api key
	go func() {
		defer server.Close()
		for {
			f, err := readFrame(client)
			if err != nil {
				return
			}
			mu.Lock()
			keys[int32(binary.BigEndian.Uint32(f[8:]))] = int16(binary.BigEndian.Uint16(f[4:]))
			mu.Unlock()
			if _, err := server.Write(f); err != nil {
				return
			}
		}
	}()
	for {
		f, err := readFrame(server)
		if err != nil {
			return
		}
		mu.Lock()
		key := keys[int32(binary.BigEndian.Uint32(f[4:]))]
		mu.Unlock()
		if key == 0 && p.drops.Add(-1) >= 0 {
			p.dropped.Add(1)
			return // the response is lost with the connection
		}
		if _, err := client.Write(f); err != nil {
			return
		}
	}
}

// TestIdempotentRetriesNoDuplicates produces through a proxy that loses
// Produce responses after the broker appended the batches: franz-go
// retries them with the same sequence numbers, the broker answers the
// retries from its producer state, and every record is stored exactly
// once.
func TestIdempotentRetriesNoDuplicates(t *testing.T) {
	proxy := newDropProxy(t)
	b := brokertest.StartBroker(t, brokertest.WithConfig("advertised.listeners", "PLAINTEXT://"+proxy.ln.Addr().String()))
	proxy.target.Store(b.Addr)
	adm := newAdmin(t, proxy.ln.Addr().String())
	createTopic(t, adm, "exactly-once", 2, nil)

	proxy.drops.Store(5)
	cl := newClient(t, []string{proxy.ln.Addr().String()}, kgo.DefaultProduceTopic("exactly-once"),
		kgo.MetadataMinAge(10*time.Millisecond), kgo.ProducerLinger(5*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	const n = 500
	ctx := testCtx(t)
	var wg sync.WaitGroup
	t0 := time.Now()
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	t.Logf("produced in %v", time.Since(t0))
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, proxy.dropped.Load(), "no response was dropped, so nothing was retried")

	got := consume(t, []string{b.Addr}, "exactly-once", n)
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	for v, k := range seen {
		require.Equal(t, 1, k, "record %s stored %d times", v, k)
	}
	require.Len(t, seen, n)
	end, err := newAdmin(t, b.Addr).ListEndOffsets(ctx, "exactly-once")
	require.NoError(t, err)
	var total int64
	end.Each(func(o kadm.ListedOffset) { total += o.Offset })
	require.Equal(t, int64(n), total, "end offsets count each record once")
}
