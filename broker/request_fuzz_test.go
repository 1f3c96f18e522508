//go:build linux

package broker_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/api"
	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/internal/fuzzcorpus"
)

var updateCorpus = flag.Bool("update", false, "rewrite the seed files of testdata/fuzz")

// The request fuzz targets drive the broker's real request path: a frame
// on a TCP connection to an in-process broker, the network layer's
// framing and header, then api.Handler's decode (kmsg) and the handler
// of the API key. There is one target per group of APIs whose bodies
// look alike, so each fuzzes its own decoders from its own seeds; every
// key of the dispatch table belongs to exactly one target
// (TestRequestFuzzTargetsCoverEveryAPI). An input is (key, version,
// body): a key outside the target's keys picks one of them, a version
// outside min-1..max+1 of the key's row is folded into it (so the
// unsupported versions on either side are fuzzed too), and body is
// everything after the client id: the header's tagged fields for a
// flexible version, then the request.
//
// The seeds are one request per key and version, encoded with kmsg and
// added with f.Add (so a version-specific field is one mutation away);
// those at each key's min and max version are also committed under
// testdata/fuzz/<target>/ (regenerate with -update). Every seed must be
// answered, not closed.
func FuzzProduceRequest(f *testing.F)  { fuzzRequests(f, "FuzzProduceRequest", produceKeys) }
func FuzzFetchRequest(f *testing.F)    { fuzzRequests(f, "FuzzFetchRequest", fetchKeys) }
func FuzzMetadataRequest(f *testing.F) { fuzzRequests(f, "FuzzMetadataRequest", metadataKeys) }
func FuzzGroupRequest(f *testing.F)    { fuzzRequests(f, "FuzzGroupRequest", groupKeys) }
func FuzzAdminRequest(f *testing.F)    { fuzzRequests(f, "FuzzAdminRequest", adminKeys) }

// FuzzControlRequest sends the controller's requests with a controller's
// client id on the inter-broker listener, so they reach their handlers.
// The controller is trusted to change leadership, replicas and the
// metadata cache, so this target checks only that the broker answers or
// closes in time, never panics and still answers a healthy connection,
// not that the protected topic keeps its leader.
func FuzzControlRequest(f *testing.F) { fuzzRequests(f, "FuzzControlRequest", controlKeys) }

// FuzzTxnRequest: the transaction APIs (coordinator and markers).
func FuzzTxnRequest(f *testing.F) { fuzzRequests(f, "FuzzTxnRequest", txnKeys) }

var (
	produceKeys  = []int16{0}
	fetchKeys    = []int16{1}
	metadataKeys = []int16{2, 3, 10, 17, 18, 23, 36, 60}
	groupKeys    = []int16{8, 9, 11, 12, 13, 14, 15, 16, 42, 47}
	adminKeys    = []int16{19, 20, 21, 22, 29, 30, 31, 32, 33, 34, 35, 37, 43, 44, 45, 46, 48, 49, 50, 51}
	controlKeys  = []int16{4, 5, 6, 7, 56}
	txnKeys      = []int16{24, 25, 26, 27, 28, 61, 65, 66}
)

// Names the targets use. Inputs that name the protected topic are not
// sent (fuzzSkip): its records are the ones checked.
const (
	fuzzTopic      = "fuzz"
	fuzzGroup      = "fuzz-group"
	protectedTopic = "qk-protected"
	protectedCount = 20
)

// fuzzEnv is one target's broker and what its inputs need.
type fuzzEnv struct {
	b        *brokertest.Broker
	control  bool
	versions map[int16][2]int16 // the dispatch table, from ApiVersions
	topicID  [16]byte           // of fuzzTopic
	panics   *lineCounter
	healthy  *fuzzConn
	batch    []byte
}

// lineCounter counts the log writes that contain needle (a TextHandler
// writes one line per Write).
type lineCounter struct {
	needle []byte
	n      atomic.Int64
	mu     sync.Mutex
	first  string
}

func (l *lineCounter) Write(p []byte) (int, error) {
	if bytes.Contains(p, l.needle) {
		if l.n.Add(1) == 1 {
			l.mu.Lock()
			l.first = string(p)
			l.mu.Unlock()
		}
	}
	return len(p), nil
}

// check fails t if lines were counted since the count was since.
func (l *lineCounter) check(t testing.TB, since int64) {
	t.Helper()
	if n := l.n.Load(); n > since {
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("%d log lines with %q, the first of the target: %s", n-since, l.needle, l.first)
	}
}

// fuzzConn is a raw connection of a fuzz target (rawConn needs a
// *testing.T, and a target's connection outlives each input's).
type fuzzConn struct {
	c        net.Conn
	clientID string
	corr     int32
}

func dialFuzz(addr, clientID string) (*fuzzConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &fuzzConn{c: c, clientID: clientID}, nil
}

// frame is a size-prefixed request: key, version, the next correlation
// id, the client id, then body as given.
func (c *fuzzConn) frame(key, version int16, body []byte) ([]byte, int32) {
	c.corr++
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	if key != 7 || version != 0 { // ControlledShutdown v0's header has no client id
		b = binary.BigEndian.AppendUint16(b, uint16(len(c.clientID)))
		b = append(b, c.clientID...)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, c.corr
}

func (c *fuzzConn) readFrame(deadline time.Time) ([]byte, error) {
	c.c.SetReadDeadline(deadline)
	var size [4]byte
	if _, err := io.ReadFull(c.c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.c, b)
	return b, err
}

// roundTrip sends a kmsg request and decodes its response.
func (c *fuzzConn) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	f, corr := c.frame(req.Key(), req.GetVersion(), requestBody(req))
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(f); err != nil {
		return err
	}
	b, err := c.readFrame(time.Now().Add(10 * time.Second))
	if err != nil {
		return err
	}
	return decodeResponse(req.Key(), req.GetVersion(), corr, b, resp)
}

// requestBody is what follows the client id: the header's empty tagged
// fields for a flexible version, then the request.
func requestBody(req kmsg.Request) []byte {
	var b []byte
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// decodeResponse checks a response frame's correlation id and decodes
// its body with kmsg.
func decodeResponse(key, version int16, corr int32, b []byte, resp kmsg.Response) error {
	if len(b) < 4 || int32(binary.BigEndian.Uint32(b)) != corr {
		return fmt.Errorf("response %d bytes, want correlation id %d", len(b), corr)
	}
	b = b[4:]
	resp.SetVersion(version)
	if resp.IsFlexible() && key != 18 {
		var ok bool
		if b, ok = skipTagsTest(b); !ok {
			return errors.New("response header tags do not decode")
		}
	}
	return resp.ReadFrom(b)
}

// skipTagsTest skips a tagged-field section.
func skipTagsTest(b []byte) ([]byte, bool) {
	r := &kbin{b}
	n, ok := r.uvarint()
	for i := uint64(0); ok && i < n; i++ {
		var size uint64
		if _, ok = r.uvarint(); !ok {
			break
		}
		if size, ok = r.uvarint(); ok && size <= uint64(len(r.b)) {
			r.b = r.b[size:]
		} else {
			ok = false
		}
	}
	return r.b, ok
}

type kbin struct{ b []byte }

func (r *kbin) uvarint() (uint64, bool) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, false
	}
	r.b = r.b[n:]
	return v, true
}

// fuzzRequests is the body of every request fuzz target.
func fuzzRequests(f *testing.F, name string, keys []int16) {
	e := startFuzzBroker(f, slices.Equal(keys, controlKeys))
	corpus := map[string][]any{}
	type input struct {
		key, version int16
		body         string
	}
	seeds := map[input]bool{}
	for _, key := range keys {
		row, ok := e.versions[key]
		require.True(f, ok, "key %d not in the dispatch table", key)
		for v := row[0]; v <= row[1]; v++ {
			req := seedRequest(e, key)
			req.SetVersion(v)
			body := requestBody(req)
			f.Add(key, v, body)
			seeds[input{key, v, string(body)}] = true
			if v == row[0] || v == row[1] {
				corpus[fmt.Sprintf("%s-v%d", strings.ReplaceAll(kmsg.NameForKey(key), " ", ""), v)] = []any{key, v, body}
			}
		}
	}
	if *updateCorpus {
		fuzzcorpus.Write(f, name, corpus)
	}
	clientID := "fuzz"
	if e.control {
		clientID = api.ControllerClientPrefix + "fuzz"
	}
	var conn *fuzzConn
	f.Cleanup(func() {
		if conn != nil {
			conn.c.Close()
		}
	})
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		if !slices.Contains(keys, key) {
			key = keys[int(uint16(key))%len(keys)]
		}
		row := e.versions[key]
		if version < row[0]-1 || version > row[1]+1 {
			version = row[0] - 1 + int16(int(uint16(version))%int(row[1]-row[0]+3))
		}
		if why := fuzzSkip(key, version, body); why != "" {
			t.Skip(why)
		}
		if conn == nil {
			var err error
			conn, err = dialFuzz(e.b.Addr, clientID)
			require.NoError(t, err)
		}
		// The input, then an ApiVersions v0 on the same connection:
		// responses come in request order, so the probe's answer says
		// the input was handled even when it gets none (acks=0).
		panics := e.panics.n.Load()
		in, corr := conn.frame(key, version, body)
		probe, probeCorr := conn.frame(18, 0, nil)
		conn.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, err := conn.c.Write(append(in, probe...))
		if err != nil && !isClosedErr(err) {
			t.Fatalf("write: %v", err)
		}
		deadline := time.Now().Add(fuzzAnswerTimeout)
		for answered := false; ; {
			b, err := conn.readFrame(deadline)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("%s v%d: neither answered nor closed within %v", kmsg.NameForKey(key), version, fuzzAnswerTimeout)
				}
				conn.c.Close()
				conn = nil // closed by the broker: reconnect for the next input
				if seeds[input{key, version, string(body)}] {
					t.Fatalf("%s v%d: a valid request (a seed) closed the connection: %v", kmsg.NameForKey(key), version, err)
				}
				break
			}
			if len(b) < 4 {
				t.Fatalf("response of %d bytes", len(b))
			}
			got := int32(binary.BigEndian.Uint32(b))
			if got == probeCorr {
				break
			}
			require.Equal(t, corr, got, "correlation id")
			require.False(t, answered, "two responses to one request")
			answered = true
			// What the broker answers must decode, at the request's
			// version, as a client would decode it.
			resp := kmsg.ResponseForKey(key)
			require.NoError(t, decodeResponse(key, version, corr, b, resp), "%s v%d response", kmsg.NameForKey(key), version)
		}
		e.panics.check(t, panics) // the line is written before the close
		e.checkHealthy(t)
	})
}

// fuzzAnswerTimeout bounds an input's answer: the slowest legitimate one
// is a JoinGroup waiting for the group's members (sessions are at most
// 3 s on the fuzz broker).
const fuzzAnswerTimeout = 10 * time.Second

func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || isReset(err)
}

// fuzzSkip says why an input is not sent, or "". Skipped are requests
// that may legitimately destroy what the target checks or wait longer
// than fuzzAnswerTimeout: that is the broker doing its job, not
// surviving hostile input.
func fuzzSkip(key, version int16, body []byte) string {
	if bytes.Contains(body, []byte(protectedTopic)) {
		return "names the protected topic"
	}
	decoded := func() kmsg.Request {
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		b := body
		if req.IsFlexible() {
			var ok bool
			if b, ok = skipTagsTest(b); !ok {
				return nil
			}
		}
		if req.ReadFrom(b) != nil {
			return nil
		}
		return req
	}
	switch key {
	case 49: // a quota written would throttle the fuzzer's own connection
		if req, ok := decoded().(*kmsg.AlterClientQuotasRequest); !ok || !req.ValidateOnly {
			return "client quota change"
		}
	case 1: // a long poll may wait its MaxWaitMillis
		if req, ok := decoded().(*kmsg.FetchRequest); ok && req.MaxWaitMillis > 1000 {
			return "long poll"
		}
	case 33: // broker-wide configs change every topic (retention) and every limit
		if req, ok := decoded().(*kmsg.AlterConfigsRequest); ok {
			for _, r := range req.Resources {
				if r.ResourceType != kmsg.ConfigResourceTypeTopic {
					return "broker config"
				}
			}
		}
	case 44:
		if req, ok := decoded().(*kmsg.IncrementalAlterConfigsRequest); ok {
			for _, r := range req.Resources {
				if r.ResourceType != kmsg.ConfigResourceTypeTopic {
					return "broker config"
				}
			}
		}
	}
	return ""
}

// startFuzzBroker starts a target's broker with a topic (fuzzTopic), a
// group with committed offsets (fuzzGroup) and protectedCount records in
// the protected topic, checked again when the target ends.
func startFuzzBroker(f *testing.F, control bool) *fuzzEnv {
	panics := &lineCounter{needle: []byte("handler panicked")}
	b := brokertest.StartBroker(f,
		brokertest.WithLogWriter(panics),
		// ACLs on, so the ACL APIs do their work (the fuzzer's
		// connection, User:ANONYMOUS, is a super user: an ACL it
		// creates cannot lock it out).
		brokertest.WithAuthorizer(),
		brokertest.WithConfig("group.initial.rebalance.delay.ms", "0"),
		brokertest.WithConfig("group.min.session.timeout.ms", "500"),
		brokertest.WithConfig("group.max.session.timeout.ms", "3000"),
	)
	e := &fuzzEnv{b: b, control: control, panics: panics}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(f, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := f.Context()
	for topic, partitions := range map[string]int32{fuzzTopic: 2, protectedTopic: 1} {
		resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
		require.NoError(f, err)
		require.NoError(f, resp.Err)
	}
	for i := range protectedCount {
		r := &kgo.Record{Topic: protectedTopic, Value: fmt.Appendf(nil, "protected-%d", i)}
		require.NoError(f, cl.ProduceSync(ctx, r).FirstErr())
		require.NoError(f, cl.ProduceSync(ctx, &kgo.Record{Topic: fuzzTopic, Value: r.Value}).FirstErr())
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: fuzzTopic, Partition: 0, At: 1, LeaderEpoch: -1})
	committed, err := adm.CommitOffsets(ctx, fuzzGroup, offsets)
	require.NoError(f, err)
	require.NoError(f, committed.Error())
	topics, err := adm.ListTopics(ctx, fuzzTopic)
	require.NoError(f, err)
	e.topicID = topics[fuzzTopic].ID

	e.versions = dispatchTable(f, b.Addr)

	opts := record.DefaultBatchOptions()
	bld := record.NewBuilder(opts)
	bld.Append(1700000000000, []byte("k"), []byte("fuzz"), nil)
	e.batch, err = bld.Build()
	require.NoError(f, err)

	e.healthy, err = dialFuzz(b.Addr, "healthy")
	require.NoError(f, err)
	f.Cleanup(func() { e.healthy.c.Close() })
	e.checkHealthy(f)
	f.Cleanup(func() {
		// The broker stops after this (cleanups run last first).
		e.panics.check(f, 0)
		e.checkHealthy(f)
		if e.control {
			return
		}
		got := consumeFuzz(f, b.Addr, protectedTopic, protectedCount)
		for i, r := range got {
			require.Equal(f, fmt.Appendf(nil, "protected-%d", i), r.Value)
			require.Equal(f, int64(i), r.Offset)
		}
	})
	return e
}

// dispatchTable is every row of the broker's dispatch table (key to min
// and max version), from a controller's ApiVersions.
func dispatchTable(t testing.TB, addr string) map[int16][2]int16 {
	t.Helper()
	c, err := dialFuzz(addr, api.ControllerClientPrefix+"fuzz-versions")
	require.NoError(t, err)
	defer c.c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "fuzz", "1"
	resp := kmsg.NewPtrApiVersionsResponse()
	require.NoError(t, c.roundTrip(req, resp))
	require.Zero(t, resp.ErrorCode)
	out := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out
}

// checkHealthy sends an ApiVersions on the connection opened at the
// start and, but for the control target, checks the protected topic's
// log end offset.
func (e *fuzzEnv) checkHealthy(t testing.TB) {
	t.Helper()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "healthy", "1"
	avResp := kmsg.NewPtrApiVersionsResponse()
	require.NoError(t, e.healthy.roundTrip(av, avResp), "healthy connection")
	require.Zero(t, avResp.ErrorCode)
	if e.control {
		return
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = protectedTopic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	loResp := kmsg.NewPtrListOffsetsResponse()
	require.NoError(t, e.healthy.roundTrip(lo, loResp), "healthy connection")
	require.Len(t, loResp.Topics, 1)
	require.Len(t, loResp.Topics[0].Partitions, 1)
	p := loResp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode, "protected topic")
	require.Equal(t, int64(protectedCount), p.Offset, "protected topic's log end offset")
}

// consumeFuzz reads n records from the start of topic's partition 0.
func consumeFuzz(t testing.TB, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := contextWithTimeout(30 * time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(out), n)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	require.Len(t, out, n)
	return out
}
