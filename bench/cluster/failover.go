package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// producer writes one record at a time to partition 0 of a topic, each
// value the next integer, and keeps the time of every acknowledgement:
// with one record in flight, the gap between two acknowledgements is
// exactly how long the partition could not take a write.
//
// It is franz-go with acks=all and idempotence (the defaults) and no
// linger. Retries back off 10 ms, doubling to at most 100 ms (KIP-580's
// shape), and metadata may be refreshed every 10 ms instead of
// franz-go's 5 s floor: with the Java client's fixed retry.backoff.ms=100
// every interruption would measure at least 100 ms, the whole
// budget for a controlled shutdown, so what is measured would be the
// client's pause and not the cluster's.
type producer struct {
	cl     *kgo.Client
	topic  string
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	acks    []ack
	failed  int         // records whose produce failed for good
	errs    []clientErr // errors the client logged (and retried) or returned
	changed chan struct{}
}

type ack struct {
	sent  time.Time // when ProduceSync was called
	at    time.Time // when it returned
	value int64
}

type clientErr struct {
	at  time.Time
	msg string
}

// maxProducerRecords bounds a producer whatever its context says.
const maxProducerRecords = 50_000_000

// startProducer starts writing to topic; deliveryTimeout bounds each
// record's retries, so a partition that never comes back shows as
// failed records rather than a hang.
func startProducer(ctx context.Context, addrs []string, topic string, deliveryTimeout time.Duration) (*producer, error) {
	p := &producer{topic: topic, done: make(chan struct{}), changed: make(chan struct{})}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addrs...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(retryBackoff),
		kgo.WithLogger(errLogger{p}),
	)
	if err != nil {
		return nil, err
	}
	p.cl = cl
	ctx, p.cancel = context.WithCancel(ctx)
	go p.run(ctx)
	return p, nil
}

func (p *producer) run(ctx context.Context) {
	defer close(p.done)
	for n := int64(0); n < maxProducerRecords && ctx.Err() == nil; n++ {
		r := &kgo.Record{Partition: 0, Value: strconv.AppendInt(nil, n, 10)}
		sent := time.Now()
		err := p.cl.ProduceSync(ctx, r).FirstErr()
		now := time.Now()
		if err != nil && ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		if err != nil {
			p.failed++
			p.errs = append(p.errs, clientErr{now, "produce failed: " + err.Error()})
		} else {
			p.acks = append(p.acks, ack{sent, now, n})
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
}

// stop ends the producer and waits for it; it may be called again.
func (p *producer) stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.cl.Close()
	})
}

// ackAfter waits for the first acknowledgement received after t.
func (p *producer) ackAfter(ctx context.Context, t time.Time, timeout time.Duration) (ack, error) {
	return p.waitAck(ctx, t, timeout, func(a ack) time.Time { return a.at })
}

// sentAfter waits for the acknowledgement of the first record sent after
// t. After a kill, the first acknowledgement received may be one the old
// leader had sent before it died; the first record sent after the kill
// can only be acknowledged by a live leader.
func (p *producer) sentAfter(ctx context.Context, t time.Time, timeout time.Duration) (ack, error) {
	return p.waitAck(ctx, t, timeout, func(a ack) time.Time { return a.sent })
}

// waitAck waits for the first acknowledgement whose key is after t; key
// (sent or at) grows with the acknowledgements, one record being in
// flight at a time.
func (p *producer) waitAck(ctx context.Context, t time.Time, timeout time.Duration, key func(ack) time.Time) (ack, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		i, _ := slices.BinarySearchFunc(p.acks, t, func(a ack, t time.Time) int { return key(a).Compare(t) })
		for i < len(p.acks) && !key(p.acks[i]).After(t) {
			i++
		}
		if i < len(p.acks) {
			a := p.acks[i]
			p.mu.Unlock()
			return a, nil
		}
		changed, failed := p.changed, p.failed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-p.done:
			return ack{}, errors.New("producer stopped")
		case <-ctx.Done():
			return ack{}, ctx.Err()
		case <-timer.C:
			return ack{}, fmt.Errorf("no acknowledgement within %v (%d records failed so far)", timeout, failed)
		}
	}
}

// retryBackoff is 10 ms for the first retry, doubling up to 100 ms.
func retryBackoff(tries int) time.Duration {
	return min(10*time.Millisecond<<max(tries-1, 0), 100*time.Millisecond)
}

// snapshot copies the acknowledgements and errors so far.
func (p *producer) snapshot() ([]ack, []clientErr, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acks), slices.Clone(p.errs), p.failed
}

// errLogger keeps every client log line that carries an error: franz-go
// retries NOT_LEADER_OR_FOLLOWER and lost connections itself, and says
// so only in its log, some of it at debug level (a retry without a
// metadata refresh). Lines without an error are dropped at once.
type errLogger struct{ p *producer }

func (errLogger) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l errLogger) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	for i := 0; i+1 < len(keyvals); i += 2 {
		if keyvals[i] == "err" && keyvals[i+1] != nil {
			l.p.mu.Lock()
			l.p.errs = append(l.p.errs, clientErr{time.Now(), fmt.Sprintf("%s: %v", msg, keyvals[i+1])})
			l.p.mu.Unlock()
			return
		}
	}
}

// maxGap is the longest gap between consecutive acknowledgements from
// the last one at or before from to the first one after to, and when it
// began; zero when there are fewer than two such acknowledgements.
func maxGap(acks []ack, from, to time.Time) (time.Duration, time.Time) {
	lo := 0
	for i, a := range acks {
		if !a.at.After(from) {
			lo = i
		}
	}
	hi := len(acks) - 1
	for i, a := range acks {
		if a.at.After(to) {
			hi = i
			break
		}
	}
	var (
		gap   time.Duration
		start time.Time
	)
	for i := lo + 1; i <= hi; i++ {
		if d := acks[i].at.Sub(acks[i-1].at); d > gap {
			gap, start = d, acks[i-1].at
		}
	}
	return gap, start
}

// errorsBetween counts the distinct client errors in [from, to].
func errorsBetween(errs []clientErr, from, to time.Time) map[string]int {
	m := make(map[string]int)
	for _, e := range errs {
		if !e.at.Before(from) && !e.at.After(to) {
			m[e.msg]++
		}
	}
	return m
}

// verifyResult is what reading the partition back found.
type verifyResult struct {
	acked      int // records acknowledged
	read       int // records in the partition
	missing    int // acknowledged and not in the partition: lost
	duplicated int // acknowledged and in the partition more than once
}

// compareAcked checks every acknowledged value against the counts of
// the values read back.
func compareAcked(acked []ack, seen map[int64]int) verifyResult {
	r := verifyResult{acked: len(acked)}
	for _, n := range seen {
		r.read += n
	}
	for _, a := range acked {
		switch seen[a.value] {
		case 0:
			r.missing++
		case 1:
		default:
			r.duplicated++
		}
	}
	return r
}

// verify reads partition 0 of topic from the start to its high
// watermark and checks every acknowledged value is there.
func verify(ctx context.Context, addrs []string, topic string, acked []ack) (verifyResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return verifyResult{}, err
	}
	adm := kadm.NewClient(admCl)
	defer adm.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return verifyResult{}, fmt.Errorf("end offset of %s: %w", topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok {
		return verifyResult{}, fmt.Errorf("no end offset for %s-0", topic)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return verifyResult{}, err
	}
	defer cl.Close()
	seen := make(map[int64]int)
	next := int64(0)
	for next < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return verifyResult{}, fmt.Errorf("read %s-0 up to offset %d of %d: %w", topic, next, end.Offset, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return verifyResult{}, fmt.Errorf("read %s-0: %w", topic, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if v, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil {
				seen[v]++
			}
			next = r.Offset + 1
		})
	}
	return compareAcked(acked, seen), nil
}

// killRun is one kill of the failover section.
type killRun struct {
	victim     int32
	controller bool // the victim was also the controller
	took       time.Duration
}

// failoverResult is the failover section at one session timeout.
type failoverResult struct {
	session int
	kills   []killRun
	verify  verifyResult
	failed  int // records the producer gave up on
}

// runFailover kills the leader of a 1-partition RF 3 topic under the
// one-record-at-a-time producer n times, timing kill to next
// acknowledgement, restarting the victim and waiting for the full ISR
// between kills; then it reads the partition back.
func runFailover(ctx context.Context, c *benchproc.Cluster, n int) (failoverResult, error) {
	res := failoverResult{session: c.Session}
	topic := fmt.Sprintf("failover-%d", c.Session)
	if err := c.CreateTopic(ctx, benchproc.TopicSpec{Name: topic, Partitions: 1, RF: 3, MinISR: 2}); err != nil {
		return res, err
	}
	defer c.DeleteTopic(ctx, topic)
	session := time.Duration(c.Session) * time.Millisecond
	p, err := startProducer(ctx, c.Addrs(), topic, 2*session+time.Minute)
	if err != nil {
		return res, err
	}
	defer p.stop()
	if _, err := p.ackAfter(ctx, time.Now().Add(time.Second), 30*time.Second); err != nil {
		return res, c.Explain(fmt.Errorf("producer before the first kill: %w", err))
	}
	for k := range n {
		victim, st, err := c.LeaderOf(ctx, topic, 0)
		if err != nil {
			return res, err
		}
		killed := time.Now()
		c.Kill(victim)
		a, err := p.sentAfter(ctx, killed, 2*session+time.Minute)
		if err != nil {
			return res, c.Explain(fmt.Errorf("kill %d of broker %d: %w", k+1, victim.ID, err))
		}
		kr := killRun{victim: victim.ID, controller: st.Controller == victim.ID, took: a.at.Sub(killed)}
		res.kills = append(res.kills, kr)
		fmt.Fprintf(c.Log, "cluster:   session %d ms, kill %d/%d of leader %d (controller: %v): next ack after %v\n",
			c.Session, k+1, n, victim.ID, kr.controller, kr.took.Round(time.Millisecond))
		if err := c.Start(ctx, victim); err != nil {
			return res, err
		}
		if err := c.WaitFullISR(ctx, topic, 0, 2*time.Minute); err != nil {
			return res, err
		}
		if _, err := p.ackAfter(ctx, time.Now().Add(500*time.Millisecond), 30*time.Second); err != nil {
			return res, c.Explain(fmt.Errorf("producer after broker %d is back: %w", victim.ID, err))
		}
	}
	p.stop()
	acks, _, failed := p.snapshot()
	res.failed = failed
	if res.verify, err = verify(ctx, c.Addrs(), topic, acks); err != nil {
		return res, c.Explain(err)
	}
	fmt.Fprintf(c.Log, "cluster:   session %d ms: %d acknowledged, %d read back, %d missing, %d duplicated, %d failed\n",
		c.Session, res.verify.acked, res.verify.read, res.verify.missing, res.verify.duplicated, failed)
	return res, nil
}

// shutdownRun is one controlled shutdown of the leader.
type shutdownRun struct {
	victim     int32
	controller bool
	gap        time.Duration // longest gap between acknowledgements around it
	gapAfter   time.Duration // when the gap began, after the SIGTERM
	stopTook   time.Duration // SIGTERM to exit
	errs       map[string]int
	exitErr    string // a SIGTERM that did not end in exit status 0
}

// shutdownResult is the controlled-shutdown section.
type shutdownResult struct {
	runs   []shutdownRun
	verify verifyResult
	failed int
}

// shutdownWindowTail is how long after the broker's exit acknowledgements
// still count as "around the shutdown": long enough for a client that
// only learns of the move when its connection drops.
const shutdownWindowTail = 500 * time.Millisecond

// runShutdown SIGTERMs the leader of a 1-partition RF 3 topic under the
// producer n times (qk moves leadership away before it stops) and takes
// the longest gap between acknowledgements from the SIGTERM to a moment
// after the exit; between shutdowns the broker is restarted and the ISR
// waited for, and the next shutdown targets whichever broker leads then.
func runShutdown(ctx context.Context, c *benchproc.Cluster, n int) (shutdownResult, error) {
	var res shutdownResult
	topic := "shutdown"
	if err := c.CreateTopic(ctx, benchproc.TopicSpec{Name: topic, Partitions: 1, RF: 3, MinISR: 2}); err != nil {
		return res, err
	}
	defer c.DeleteTopic(ctx, topic)
	p, err := startProducer(ctx, c.Addrs(), topic, time.Minute)
	if err != nil {
		return res, err
	}
	defer p.stop()
	for k := range n {
		if _, err := p.ackAfter(ctx, time.Now().Add(time.Second), 30*time.Second); err != nil {
			return res, c.Explain(fmt.Errorf("producer before shutdown %d: %w", k+1, err))
		}
		victim, st, err := c.LeaderOf(ctx, topic, 0)
		if err != nil {
			return res, err
		}
		sig := time.Now()
		sr := shutdownRun{victim: victim.ID, controller: st.Controller == victim.ID}
		if err := c.Terminate(victim); err != nil {
			sr.exitErr = err.Error()
		}
		exited := time.Now()
		sr.stopTook = exited.Sub(sig)
		end := exited.Add(shutdownWindowTail)
		if _, err := p.ackAfter(ctx, end, time.Minute); err != nil {
			return res, c.Explain(fmt.Errorf("shutdown %d of broker %d: %w", k+1, victim.ID, err))
		}
		acks, errs, _ := p.snapshot()
		var at time.Time
		sr.gap, at = maxGap(acks, sig, end)
		sr.gapAfter = at.Sub(sig)
		sr.errs = errorsBetween(errs, sig, end)
		res.runs = append(res.runs, sr)
		fmt.Fprintf(c.Log, "cluster:   shutdown %d/%d of leader %d (controller: %v): longest gap %v, exit after %v, %d client errors\n",
			k+1, n, victim.ID, sr.controller, sr.gap.Round(time.Microsecond), sr.stopTook.Round(time.Millisecond), len(sr.errs))
		if err := c.Start(ctx, victim); err != nil {
			return res, err
		}
		if err := c.WaitFullISR(ctx, topic, 0, 2*time.Minute); err != nil {
			return res, err
		}
	}
	p.stop()
	acks, _, failed := p.snapshot()
	res.failed = failed
	if res.verify, err = verify(ctx, c.Addrs(), topic, acks); err != nil {
		return res, c.Explain(err)
	}
	return res, nil
}
