//go:build linux

// Package fetchfuzz fuzzes fetch-session sequences against an in-process
// cluster. It is a package of its own so that `make fuzz-short` (4000
// inputs of each Fuzz target in ./broker, ./broker/network and
// ./broker/api) does not run it: each input here costs admin round trips
// and long polls, seconds rather than microseconds.
package fetchfuzz

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
)

// answerBound is how long after its own wait (max_wait_ms) a request may
// take to be answered before the test fails: generous for a shared
// two-core machine, far below what the watchdog's request.timeout.ms
// (set to 10 s here) and a client's 30 s would notice.
const answerBound = 5 * time.Second

// syncLog collects the brokers' log lines, to find the watchdog's.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pending is a request sent and not yet answered.
type pending struct {
	corr     int32
	api      string
	deadline time.Time
	resp     kmsg.Response
	done     chan error
}

// conn is a raw connection that pipelines requests: responses are
// matched to requests in order, as the protocol sends them.
type conn struct {
	nc    net.Conn
	fmt   *kmsg.RequestFormatter
	mu    sync.Mutex
	corr  int32
	queue chan *pending
}

func dial(t testing.TB, addr string) *conn {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{nc: nc, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("fetchfuzz")), queue: make(chan *pending, 64)}
	go c.readLoop()
	t.Cleanup(func() { nc.Close() })
	return c
}

func (c *conn) readLoop() {
	r := bufio.NewReader(c.nc)
	for p := range c.queue {
		c.nc.SetReadDeadline(p.deadline)
		var size [4]byte
		_, err := io.ReadFull(r, size[:])
		var body []byte
		if err == nil {
			body = make([]byte, binary.BigEndian.Uint32(size[:]))
			_, err = io.ReadFull(r, body)
		}
		if err == nil {
			if corr := int32(binary.BigEndian.Uint32(body)); corr != p.corr {
				err = fmt.Errorf("correlation id %d, want %d", corr, p.corr)
			} else {
				body = body[4:]
				if p.resp.IsFlexible() {
					body = body[1:] // response header v1: no tagged fields
				}
				err = p.resp.ReadFrom(body)
			}
		}
		if err != nil {
			err = fmt.Errorf("%s correlation id %d: %w", p.api, p.corr, err)
		}
		p.done <- err
		if err != nil {
			c.nc.Close()
			for p := range c.queue {
				p.done <- errors.New("connection broken by an earlier failure")
			}
			return
		}
	}
}

// send writes req; the answer is due by wait + answerBound after the
// previous request's deadline (responses leave in order).
func (c *conn) send(t testing.TB, req kmsg.Request, wait time.Duration) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corr++
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	p := &pending{corr: c.corr, api: kmsg.NameForKey(req.Key()), deadline: time.Now().Add(wait + answerBound), resp: resp, done: make(chan error, 1)}
	c.nc.SetWriteDeadline(time.Now().Add(answerBound))
	if _, err := c.nc.Write(c.fmt.AppendRequest(nil, req, c.corr)); err != nil {
		t.Fatalf("write %s: %v", p.api, err)
	}
	c.queue <- p
	return p
}

func (p *pending) wait(t testing.TB) kmsg.Response {
	t.Helper()
	if err := <-p.done; err != nil {
		t.Fatalf("not answered within its max wait + %v: %v", answerBound, err)
	}
	return p.resp
}

// session is the fuzzer's view of a fetch session on one broker.
type session struct {
	id    int32
	epoch int32
	parts map[int32]bool // partitions of topic in the session
	topic string
}

type harness struct {
	cl     *brokertest.Cluster
	logs   *syncLog
	kc     *kgo.Client
	adm    *kadm.Client
	conns  []*conn
	topics [2]string
	cur    int // index of the live topic
}

const partitions = 2

func newHarness(t testing.TB) *harness {
	logs := &syncLog{}
	cl := brokertest.StartCluster(t, 3, brokertest.WithLogWriter(logs), brokertest.WithConfig("request.timeout.ms", "10000"))
	kc, err := kgo.NewClient(kgo.SeedBrokers(cl.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(3*time.Second), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	h := &harness{cl: cl, logs: logs, kc: kc, adm: kadm.NewClient(kc), topics: [2]string{"ff-a", "ff-b"}}
	h.create(t, h.topics[0])
	for _, b := range cl.Brokers {
		h.conns = append(h.conns, dial(t, b.Addr))
	}
	return h
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func (h *harness) create(t testing.TB, topic string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := h.adm.CreateTopic(ctx(t), partitions, 3, nil, topic)
		if err == nil && r.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		time.Sleep(20 * time.Millisecond) // the previous deletion is finishing; polling interval
	}
}

// fetchReq is a Fetch v12 (topics by name) of topic's parts.
func fetchReq(id, epoch int32, topic string, parts []int32, forget []int32, wait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.SessionID, req.SessionEpoch = id, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = wait, minBytes, 1<<20
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, 0, 1<<16
			rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = topic, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// run plays ops: each pair of bytes is an operation and its argument.
func (h *harness) run(t testing.TB, ops []byte) {
	sessions := make([]session, len(h.conns))
	var polls []*pending
	for i := 0; i+1 < len(ops) && i < 2*24; i += 2 {
		op, arg := ops[i]%8, ops[i+1]
		topic := h.topics[h.cur]
		// Mostly the leader of the partition the op names, so that polls
		// wait; with bit 0x80 any broker (NOT_LEADER answers).
		bi := h.leader(topic, int32(arg>>2)%partitions)
		if arg&0x80 != 0 || bi < 0 {
			bi = int(arg) % len(h.conns)
		}
		c, s := h.conns[bi], &sessions[bi]
		wait := int32(arg%4) * 100 // 0-300 ms
		switch op {
		case 0: // open a session (full fetch, epoch 0) on some partitions
			ps := []int32{int32(arg>>2) % partitions}
			if arg&0x40 != 0 {
				ps = []int32{0, 1}
			}
			r := c.send(t, fetchReq(s.id, 0, topic, ps, nil, wait, 1), time.Duration(wait)*time.Millisecond).wait(t).(*kmsg.FetchResponse)
			*s = session{}
			if r.ErrorCode == 0 && r.SessionID != 0 {
				*s = session{id: r.SessionID, epoch: 1, topic: topic, parts: map[int32]bool{}}
				for _, p := range ps {
					s.parts[p] = true
				}
			}
		case 1, 2: // incremental: add (1) or forget (2) a partition
			if s.id == 0 {
				continue
			}
			p := int32(arg>>2) % partitions
			var add, forget []int32
			if op == 1 {
				add = []int32{p}
			} else {
				forget = []int32{p}
			}
			r := c.send(t, fetchReq(s.id, s.epoch, s.topic, add, forget, wait, 1), time.Duration(wait)*time.Millisecond).wait(t).(*kmsg.FetchResponse)
			switch {
			case r.ErrorCode != 0 || r.SessionID == 0:
				*s = session{} // not found, epoch error, or closed once empty
			default:
				s.epoch++
				if op == 1 {
					s.parts[p] = true
				} else {
					delete(s.parts, p)
				}
			}
		case 3: // close, as a consumer's Close: epoch -1, no partitions, max wait 1 ms
			if s.id == 0 {
				continue
			}
			c.send(t, fetchReq(s.id, -1, s.topic, nil, nil, 1, 1), time.Millisecond).wait(t)
			*s = session{}
		case 4: // a long poll, pipelined: later requests of the connection queue behind it
			lw := 300 + int32(arg&0x3f)*10 // 0.3-0.93 s
			polls = append(polls, c.send(t, fetchReq(0, -1, topic, []int32{int32(arg>>2) % partitions}, nil, lw, 1<<20), time.Duration(lw)*time.Millisecond))
		case 5: // delete the live topic, create the other
			if _, err := h.adm.DeleteTopics(ctx(t), topic); err != nil {
				t.Fatalf("delete %s: %v", topic, err)
			}
			h.cur = 1 - h.cur
			h.create(t, h.topics[h.cur])
		case 6: // move a partition's leader: rotate its replicas, elect the preferred
			h.moveLeader(t, topic, int32(arg)%partitions)
		case 7: // a record, which wakes long polls
			h.produce(t, topic, int32(arg)%partitions)
		}
	}
	for _, p := range polls {
		p.wait(t)
	}
	if lines := overdue(h.logs.String()); lines != "" {
		t.Fatalf("the watchdog reported requests:\n%s", lines)
	}
}

// leader is the index of the conn to the partition's leader as broker 0
// knows it, or -1.
func (h *harness) leader(topic string, p int32) int {
	t, ok := h.cl.Brokers[0].Cache().Snapshot().Topics[topic]
	if !ok || int(p) >= len(t.Partitions) {
		return -1
	}
	for i, b := range h.cl.Brokers {
		if b.ID == t.Partitions[p].Leader {
			return i
		}
	}
	return -1
}

func overdue(logs string) string {
	var out strings.Builder
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "request unanswered past request.timeout.ms") {
			out.WriteString(line)
		}
	}
	return out.String()
}

func (h *harness) moveLeader(t testing.TB, topic string, p int32) {
	md, err := h.adm.ListTopics(ctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	pd, ok := md[topic].Partitions[p]
	if !ok || len(pd.Replicas) < 2 {
		return
	}
	rot := append(append([]int32{}, pd.Replicas[1:]...), pd.Replicas[0])
	a := kadm.AlterPartitionAssignmentsReq{}
	a.Assign(topic, p, rot)
	if _, err := h.adm.AlterPartitionAssignments(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	ts := kadm.TopicsSet{}
	ts.Add(topic, p)
	// Not yet in the ISR, or already elected: both are fine, the point is
	// the move while sessions and polls are open.
	_, _ = h.adm.ElectLeaders(ctx(t), kadm.ElectPreferredReplica, ts)
}

func (h *harness) produce(t testing.TB, topic string, p int32) {
	// Its topic may just have been deleted: an error is fine, the point
	// is a record that wakes the polls when there is one.
	c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h.kc.ProduceSync(c, &kgo.Record{Topic: topic, Partition: p, Value: []byte("wake")})
}

// FuzzFetchSessions plays fetch-session sequences (open, incremental
// add and forget, close as a consumer's Close sends it) mixed with
// topic deletion, leader moves, records and pipelined long polls on a
// 3-broker in-process cluster, with raw Fetch v12 requests. Every
// request must be answered within its max wait + answerBound, in order
// on its connection, and the brokers' watchdog must report nothing.
// One cluster serves every input; the seeds run in plain go test.
func FuzzFetchSessions(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 3, 0}, // open, close
		{0, 0, 4, 0, 3, 0, 0, 4, 4, 4, 3, 4, 7, 0}, // per partition: open, poll, close behind it; a record
		{0, 0x40, 1, 4, 2, 0, 2, 4, 3, 0},          // open both, add, forget both (closes), close
		{0, 0x41, 4, 1, 3, 1},                      // a long poll, then a close behind it on the same connection
		{0, 0x40, 4, 0, 5, 0, 3, 0},                // open, long poll, delete the topic, close
		{0, 0x42, 4, 2, 6, 0, 1, 6, 3, 2},          // open, long poll, leader move, incremental, close
		{4, 0, 7, 0, 4, 1, 7, 1},                   // long polls woken by records
		{0, 0, 5, 3, 1, 0, 0, 4, 3, 0},             // a session on a deleted topic, incremental, reopen
	} {
		f.Add(seed)
	}
	h := newHarness(f)
	f.Fuzz(func(t *testing.T, ops []byte) { h.run(t, ops) })
}
