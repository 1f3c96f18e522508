//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/internal/zktest"
)

// The transactional chain of issue 20: keyed records move from an input
// topic through levels of topics, each level a consumer group of
// transactional workers (franz-go GroupTransactSession: read_committed,
// consume, produce and commit the offsets in one transaction) that join
// and leave while the records flow. The checks are a database's:
//   - every output holds every input key exactly once (an aborted record
//     read by a read_committed consumer would be a duplicate, a lost
//     commit a gap);
//   - no worker's committed transaction consumed an offset another's
//     committed transaction had already consumed;
//   - at the end every partition's last stable offset is its high
//     watermark (no transaction left hanging).

// txnChain is one run of the chain.
type txnChain struct {
	t      *testing.T
	addrs  []string
	topics []string // topics[0] is the input; level i reads topics[i-1] and writes topics[i]
	parts  int32
	keys   int

	feeder *kgo.Client

	errs chan error
	mu   sync.Mutex
	// seen is, per level, the (partition, offset) of the records read by
	// committed transactions, with the worker that read it.
	seen      []map[partOffset]string
	workers   [][]*txnWorker
	verifiers []*verifier
	nextID    atomic.Int32
}

type partOffset struct {
	partition int32
	offset    int64
}

// newTxnChain creates the chain's topics (RF 3, parts partitions) and
// fills the input with keys records "0".."keys-1" (feed).
func newTxnChain(t *testing.T, addrs []string, levels int, parts int32, keys int) *txnChain {
	t.Helper()
	c := &txnChain{t: t, addrs: addrs, parts: parts, errs: make(chan error, 100)}
	adm := kadm.NewClient(newPlainClient(t, addrs[0], kgo.SeedBrokers(addrs...)))
	for i := 0; i <= levels; i++ {
		name := fmt.Sprintf("chain-%d", i)
		c.topics = append(c.topics, name)
		resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if i > 0 {
			c.seen = append(c.seen, map[partOffset]string{})
			c.workers = append(c.workers, nil)
		}
	}
	c.feeder = newPlainClient(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(c.topics[0]), kgo.RecordRetries(1<<30), kgo.UnknownTopicRetries(-1))
	c.feed(keys)
	return c
}

// feed appends n more keys to the input, idempotently with acks=all,
// and waits until they are acknowledged.
func (c *txnChain) feed(n int) {
	c.t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	for range n {
		k := c.keys
		c.keys++
		wg.Add(1)
		c.feeder.Produce(ctxFor(c.t, 2*time.Minute), &kgo.Record{Key: []byte(strconv.Itoa(k)), Value: []byte("v" + strconv.Itoa(k))},
			func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Store(err)
				}
				wg.Done()
			})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		c.t.Fatalf("feed %s: %v", c.topics[0], err)
	}
}

// txnWorker is one member of a level's group.
type txnWorker struct {
	id    string
	level int // 1..levels
	stop  chan struct{}
	done  chan struct{}
	txns  atomic.Int64 // committed transactions
}

// addWorker starts a worker on level (1-based).
func (c *txnChain) addWorker(level int) *txnWorker {
	w := &txnWorker{id: fmt.Sprintf("w%d-%d", level, c.nextID.Add(1)), level: level,
		stop: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.workers[level-1] = append(c.workers[level-1], w)
	c.mu.Unlock()
	go c.run(w)
	return w
}

// removeWorker stops the oldest worker of level, if it has more than one.
func (c *txnChain) removeWorker(level int) {
	c.mu.Lock()
	ws := c.workers[level-1]
	if len(ws) <= 1 {
		c.mu.Unlock()
		return
	}
	w := ws[0]
	c.workers[level-1] = ws[1:]
	c.mu.Unlock()
	close(w.stop)
	<-w.done
}

func (c *txnChain) fail(err error) {
	select {
	case c.errs <- err:
	default:
	}
}

func (c *txnChain) run(w *txnWorker) {
	restarting := false
	defer func() {
		if !restarting {
			close(w.done)
		}
	}()
	in, out := c.topics[w.level-1], c.topics[w.level]
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.addrs...),
		kgo.TransactionalID("txn-"+w.id),
		kgo.TransactionTimeout(60*time.Second),
		kgo.ConsumerGroup("chain-level-"+strconv.Itoa(w.level)),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10*time.Second),
		kgo.RequireStableFetchOffsets(),
		kgo.RecordRetries(1<<30),
		kgo.UnknownTopicRetries(-1),
		kgo.ClientID(w.id),
	)
	if err != nil {
		c.fail(fmt.Errorf("%s: %v", w.id, err))
		return
	}
	defer sess.Close()
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		// Small transactions, many of them: kills land mid-transaction.
		fetches := sess.PollRecords(ctx, 100)
		cancel()
		if err := fetches.Err0(); errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
			continue
		}
		if err := sess.Begin(); err != nil {
			c.fail(fmt.Errorf("%s: begin: %v", w.id, err))
			return
		}
		var read []partOffset
		fetches.EachRecord(func(r *kgo.Record) {
			read = append(read, partOffset{r.Partition, r.Offset})
			sess.Produce(context.Background(), &kgo.Record{Topic: out, Key: slices.Clone(r.Key), Value: slices.Clone(r.Value)},
				func(_ *kgo.Record, err error) {
					switch {
					case err == nil, errors.Is(err, kgo.ErrAborting):
					case errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.ProducerFenced):
						// The coordinator aborted the transaction (its
						// timeout passed while brokers were down) and
						// bumped the epoch: this session is fenced, its
						// EndTxn fails and the worker starts again. The
						// outputs' checks say whether anything leaked.
						c.t.Logf("%s: produce to %s fenced: %v", w.id, out, err)
					default:
						c.fail(fmt.Errorf("%s: produce to %s: %v", w.id, out, err))
					}
				})
		})
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		committed, err := sess.End(ctx, kgo.TryCommit)
		cancel()
		if err != nil {
			// The outcome is unknown (the coordinator died under the
			// EndTxn, say): as an application would, start again with
			// the same transactional id, whose InitProducerId completes
			// or aborts what this one left. Its reads are not counted:
			// the outputs say what was committed.
			c.t.Logf("%s: end transaction: %v; starting a new session", w.id, err)
			sess.Close()
			restarting = true
			go c.run(w)
			return
		}
		if !committed || len(read) == 0 {
			continue
		}
		w.txns.Add(1)
		c.mu.Lock()
		for _, po := range read {
			if other, dup := c.seen[w.level-1][po]; dup {
				c.fail(fmt.Errorf("level %d: %s-%d offset %d consumed by committed transactions of %s and %s",
					w.level, in, po.partition, po.offset, other, w.id))
			}
			c.seen[w.level-1][po] = w.id
		}
		c.mu.Unlock()
	}
}

// verifier reads one output topic with read_committed from the start,
// all along the run, counting each key: a key counted twice is a
// duplicate (an aborted record read, or a transaction applied twice).
type verifier struct {
	topic  string
	mu     sync.Mutex
	counts map[string]int
	pos    map[int32]int64 // next offset per partition (markers included)
	stop   chan struct{}
	done   chan struct{}
}

func (c *txnChain) startVerifiers() {
	for l := 1; l < len(c.topics); l++ {
		v := &verifier{topic: c.topics[l], counts: map[string]int{}, pos: map[int32]int64{},
			stop: make(chan struct{}), done: make(chan struct{})}
		c.verifiers = append(c.verifiers, v)
		cl := newPlainClient(c.t, c.addrs[0], kgo.SeedBrokers(c.addrs...), kgo.ConsumeTopics(v.topic),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.KeepControlRecords())
		go func() {
			defer close(v.done)
			for {
				select {
				case <-v.stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				fs := cl.PollFetches(ctx)
				cancel()
				v.mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					v.pos[r.Partition] = r.Offset + 1
					if !r.Attrs.IsControl() {
						v.counts[string(r.Key)]++
					}
				})
				v.mu.Unlock()
			}
		}()
	}
}

// distinct is how many keys v has read, and how many of them more than
// once.
func (v *verifier) distinct() (n, dups int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, k := range v.counts {
		if k > 1 {
			dups++
		}
	}
	return len(v.counts), dups
}

// consumed is how many input records the committed transactions of
// level have read.
func (c *txnChain) consumed(level int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen[level-1])
}

// checkErrs fails the test with the first error a worker reported.
func (c *txnChain) checkErrs() {
	c.t.Helper()
	select {
	case err := <-c.errs:
		c.t.Fatal(err)
	default:
	}
}

// waitDone waits until every level's output holds every key, as the
// read_committed verifiers see them; a duplicate fails at once.
func (c *txnChain) waitDone(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c.checkErrs()
		done := true
		var progress []string
		for l, v := range c.verifiers {
			n, dups := v.distinct()
			if dups > 0 {
				c.diagnose()
				c.t.Fatalf("%s (level %d): %d keys read more than once with read_committed", v.topic, l+1, dups)
			}
			progress = append(progress, fmt.Sprintf("%s %d", v.topic, n))
			if n < c.keys {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			c.diagnose()
			c.t.Fatalf("the chain did not finish within %v: keys per output %v of %d", timeout, progress, c.keys)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

// diagnose logs what the cluster says about the chain: the transactions,
// the groups' committed offsets, and each topic's HW and LSO.
func (c *txnChain) diagnose() {
	adm := kadm.NewClient(newPlainClient(c.t, c.addrs[0], kgo.SeedBrokers(c.addrs...)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if l, err := adm.ListTransactions(ctx, nil, nil); err == nil {
		for _, tx := range l.Sorted() {
			d, _ := adm.DescribeTransactions(ctx, tx.TxnID)
			c.t.Logf("transaction %s pid %d %s: %+v", tx.TxnID, tx.ProducerID, tx.State, d[tx.TxnID])
		}
	} else {
		c.t.Logf("list transactions: %v", err)
	}
	for l := 1; l < len(c.topics); l++ {
		g := "chain-level-" + strconv.Itoa(l)
		off, err := adm.FetchOffsets(ctx, g)
		c.t.Logf("group %s committed: %v %v", g, off, err)
	}
	hw, lso := c.ends(false), c.ends(true)
	for tp, h := range hw {
		c.t.Logf("%s-%d HW %d LSO %d", tp.Topic, tp.Partition, h, lso[tp])
	}
	for _, v := range c.verifiers {
		v.mu.Lock()
		c.t.Logf("verifier %s at %v, %d keys", v.topic, v.pos, len(v.counts))
		v.mu.Unlock()
	}
}

// stopWorkers stops every worker.
func (c *txnChain) stopWorkers() {
	c.mu.Lock()
	var all []*txnWorker
	for _, ws := range c.workers {
		all = append(all, ws...)
	}
	c.mu.Unlock()
	for _, w := range all {
		close(w.stop)
	}
	for _, w := range all {
		<-w.done
	}
}

// verifyOutputs waits until every verifier has read its topic to its
// last stable offset, then requires each key exactly once in every
// output; then that each partition's last stable offset equals its high
// watermark.
func (c *txnChain) verifyOutputs() {
	c.t.Helper()
	c.requireStable()
	lso := c.ends(true)
	for _, v := range c.verifiers {
		waitUntil(c.t, time.Minute, v.topic+" read to its end", func() bool {
			v.mu.Lock()
			defer v.mu.Unlock()
			for tp, end := range lso {
				if tp.Topic == v.topic && v.pos[tp.Partition] < end {
					return false
				}
			}
			return true
		})
		close(v.stop)
		<-v.done
		var missing, dups []string
		for k := range c.keys {
			switch n := v.counts[strconv.Itoa(k)]; n {
			case 1:
			case 0:
				missing = append(missing, strconv.Itoa(k))
			default:
				dups = append(dups, fmt.Sprintf("%d×%d", k, n))
			}
		}
		if len(missing) > 0 || len(dups) > 0 || len(v.counts) != c.keys {
			c.diagnose()
			c.t.Fatalf("%s read_committed: %d keys of %d; missing %d %v; duplicated %d %v",
				v.topic, len(v.counts), c.keys, len(missing), head(missing, 20), len(dups), head(dups, 20))
		}
		c.t.Logf("%s: every one of %d keys exactly once (read_committed)", v.topic, c.keys)
	}
}

// requireStable: for every partition of every chain topic, the last
// stable offset (ListOffsets latest, read_committed) equals the high
// watermark (read_uncommitted), so no transaction is left open.
func (c *txnChain) requireStable() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		hw, lso := c.ends(false), c.ends(true)
		var stuck []string
		for tp, h := range hw {
			if lso[tp] != h {
				stuck = append(stuck, fmt.Sprintf("%s-%d LSO %d HW %d", tp.Topic, tp.Partition, lso[tp], h))
			}
		}
		if len(stuck) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("last stable offsets behind the high watermarks: %v", stuck)
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
}

type topicPartition struct {
	Topic     string
	Partition int32
}

// ends lists the end offsets of the chain's topics at an isolation level.
func (c *txnChain) ends(committed bool) map[topicPartition]int64 {
	c.t.Helper()
	adm := kadm.NewClient(newPlainClient(c.t, c.addrs[0], kgo.SeedBrokers(c.addrs...)))
	list := adm.ListEndOffsets // read_uncommitted: the HW
	if committed {
		list = adm.ListCommittedOffsets // read_committed: the LSO
	}
	listed, err := list(ctxFor(c.t, 10*time.Second), c.topics...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		c.t.Fatalf("list end offsets: %v", err)
	}
	out := map[topicPartition]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[topicPartition{o.Topic, o.Partition}] = o.Offset })
	return out
}

func head[T any](s []T, n int) []T { return s[:min(len(s), n)] }

// requireTxnIndexesMatch compares the .txnindex files of every partition
// of topics across the stopped brokers' data dirs: the same aborted
// transactions on every replica.
func requireTxnIndexesMatch(t *testing.T, bs []*broker, topics []string, parts int32) {
	t.Helper()
	for _, topic := range topics {
		for p := range parts {
			var ref []byte
			for i, b := range bs {
				dir := filepath.Join(b.dataDir, fmt.Sprintf("%s-%d", topic, p))
				names, _ := filepath.Glob(filepath.Join(dir, "*.txnindex"))
				slices.Sort(names)
				var all []byte
				for _, n := range names {
					data, err := os.ReadFile(n)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, data...)
				}
				if i == 0 {
					ref = all
				} else if !slices.Equal(all, ref) {
					t.Fatalf("%s-%d: broker %d's .txnindex (%d bytes) differs from broker 0's (%d bytes)", topic, p, i, len(all), len(ref))
				}
			}
		}
	}
}

// TestTransactionalChains: three levels of transactional workers on 3
// `qk broker start` processes on a real ZooKeeper, workers joining and
// leaving while records flow; every output holds every key exactly once.
func TestTransactionalChains(t *testing.T) {
	keys := 3000
	if testing.Short() {
		keys = 600
	}
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "transaction.state.log.num.partitions=5",
		"offsets.topic.num.partitions=5", "offsets.topic.replication.factor=3")
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	c := newTxnChain(t, addrs, 3, 4, keys)
	c.startVerifiers()
	for l := 1; l <= 3; l++ {
		c.addWorker(l)
		c.addWorker(l)
	}
	// Rebalances: one worker joins and one leaves on each level while
	// the records flow.
	for l := 1; l <= 3; l++ {
		waitUntil(t, time.Minute, fmt.Sprintf("level %d under way", l), func() bool {
			c.checkErrs()
			n, _ := c.verifiers[l-1].distinct()
			return n > 0
		})
		c.addWorker(l)
		c.removeWorker(l)
	}
	c.waitDone(3 * time.Minute)
	c.stopWorkers()
	c.checkErrs()
	c.verifyOutputs()
}

// TestTransactionalChainsKilled: the chain while brokers are killed
// (SIGKILL) and restarted: in each of three rounds, the coordinator of
// a worker's transactional id, then the leader of a partition the
// workers write, mid-transaction. Then, with the brokers stopped, the
// replicas of every chain topic are identical, .txnindex included, and
// every key is in every output exactly once.
func TestTransactionalChainsKilled(t *testing.T) {
	keys, rounds := 3000, 3
	if testing.Short() {
		keys, rounds = 900, 2
	}
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "transaction.state.log.num.partitions=5",
		"offsets.topic.num.partitions=5", "offsets.topic.replication.factor=3", quickStop)
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	c := newTxnChain(t, addrs, 3, 4, keys/(2*rounds+1))
	c.startVerifiers()
	for l := 1; l <= 3; l++ {
		c.addWorker(l)
		c.addWorker(l)
	}
	adm := kadm.NewClient(newPlainClient(t, addrs[0], kgo.SeedBrokers(addrs...)))
	outputs := func() (sum int, last int) {
		for _, v := range c.verifiers {
			n, _ := v.distinct()
			sum, last = sum+n, n
		}
		return sum, last
	}
	progress := func(what string) {
		t.Helper()
		before, _ := outputs()
		waitUntil(t, 2*time.Minute, what, func() bool {
			c.checkErrs()
			now, last := outputs()
			return now > before+50 || last == c.keys
		})
	}
	// Each kill lands while the workers have a fresh share of the input
	// to move: in the middle of their transactions.
	kill := func(id int32, why string) {
		t.Helper()
		b := bs[id]
		c.feed(keys / (2*rounds + 1))
		sum, last := outputs()
		t.Logf("kill -9 broker %d (%s); outputs hold %d keys, the last %d, of %d", id, why, sum, last, c.keys)
		b.kill()
		progress(fmt.Sprintf("progress with broker %d down", id))
		b.restart()
		progress(fmt.Sprintf("progress after broker %d restarted", id))
	}
	for r := range rounds {
		c.mu.Lock()
		txnID := "txn-" + c.workers[0][len(c.workers[0])-1].id
		c.mu.Unlock()
		coords := adm.FindTxnCoordinators(ctxFor(t, 10*time.Second), txnID)
		co, ok := coords[txnID]
		if !ok || co.Err != nil {
			t.Fatalf("round %d: coordinator of %s: %+v", r, txnID, co)
		}
		kill(co.NodeID, "coordinator of "+txnID)
		ps := waitPartitions(t, addrs[0], c.topics[2], time.Minute, "chain-2 led", func(ps kadm.PartitionDetails) bool { return allLed(ps) })
		kill(ps[int32(r)%c.parts].Leader, fmt.Sprintf("leader of %s-%d", c.topics[2], int32(r)%c.parts))
	}
	c.waitDone(5 * time.Minute)
	c.stopWorkers()
	c.checkErrs()
	c.verifyOutputs()
	for _, topic := range c.topics {
		waitPartitions(t, addrs[0], topic, time.Minute, topic+" in full ISR", fullISR(int(c.parts)))
	}
	hws := map[string]map[int32]int64{}
	for tp, hw := range c.ends(false) {
		if hws[tp.Topic] == nil {
			hws[tp.Topic] = map[int32]int64{}
		}
		hws[tp.Topic][tp.Partition] = hw
	}
	stopAll(t, bs)
	for _, topic := range c.topics {
		requireReplicasMatch(t, bs, topic, hws[topic])
	}
	requireTxnIndexesMatch(t, bs, c.topics, c.parts)
}
