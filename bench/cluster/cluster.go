package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/bench/internal/benchproc"
	"github.com/qk-project/qk/internal/zktest"
)

// zkTickTime is the benchmark's ZooKeeper tickTime in ms. ZooKeeper caps
// a session at 20 ticks; Kafka's default session (18 s) needs more than
// zktest's 500 ms ticks allow, so the benchmark runs ZooKeeper with the
// stock 2 s tick (sessions of 4-40 s).
const zkTickTime = 2000

// zkChroot is the cluster's path in ZooKeeper.
const zkChroot = "/bench"

// cluster is one ZooKeeper and three `qk broker start` processes, all
// under one temporary directory. Each broker keeps its port and its data
// directory across restarts, so a restarted broker is the same broker to
// the cluster and to clients.
type cluster struct {
	qk      string
	root    string
	zk      *zktest.Server
	session int // zookeeper.session.timeout.ms of the running brokers
	brokers []*broker
	log     io.Writer
	started []string // one command line of each kind, for the report
}

// broker is one of the cluster's brokers. proc is nil while it is down.
type broker struct {
	id   int32
	addr string
	dir  string
	proc *benchproc.Proc
	cl   *kgo.Client // seeded with this broker alone: requests go to it
}

// startCluster starts ZooKeeper and n brokers with ids 0..n-1 and waits
// until every broker sees all n.
func startCluster(ctx context.Context, qk string, n, session int, log io.Writer) (*cluster, error) {
	root, err := os.MkdirTemp("", "qk-bench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &cluster{qk: qk, root: root, session: session, log: log}
	zkDir := filepath.Join(root, "zookeeper")
	if err := os.Mkdir(zkDir, 0o755); err != nil {
		c.close(false)
		return nil, err
	}
	if c.zk, err = zktest.Run(zkDir, zkTickTime); err != nil {
		c.close(false)
		return nil, err
	}
	c.started = append(c.started, c.zk.Command())
	for i := range n {
		addr, err := benchproc.FreeAddr()
		if err != nil {
			c.close(false)
			return nil, err
		}
		b := &broker{id: int32(i), addr: addr, dir: filepath.Join(root, "broker-"+strconv.Itoa(i))}
		if err := os.Mkdir(b.dir, 0o755); err != nil {
			c.close(false)
			return nil, err
		}
		if b.cl, err = kgo.NewClient(kgo.SeedBrokers(addr)); err != nil {
			c.close(false)
			return nil, err
		}
		c.brokers = append(c.brokers, b)
	}
	for _, b := range c.brokers {
		if err := c.start(ctx, b); err != nil {
			c.close(false)
			return nil, err
		}
	}
	if err := c.waitBrokers(ctx); err != nil {
		c.close(false)
		return nil, err
	}
	return c, nil
}

// brokerArgs is the command line of broker id. log.segment.delete.delay.ms=0
// so that a topic deleted after a run is gone before the next one, rather
// than deleted 60 s later in the middle of a run that is then charged
// for it.
func brokerArgs(zkConnect string, id int32, addr, dataDir string, session int) []string {
	return []string{"broker", "start",
		"--zookeeper", zkConnect,
		"--set", "broker.id=" + strconv.Itoa(int(id)),
		"--set", "listeners=PLAINTEXT://" + addr,
		"--set", "log.dirs=" + dataDir,
		"--set", "zookeeper.session.timeout.ms=" + strconv.Itoa(session),
		"--set", "log.segment.delete.delay.ms=0",
		"--set", "qk.http.listener=127.0.0.1:0", // three brokers on one host
	}
}

// start starts broker b (again) with the cluster's session timeout.
func (c *cluster) start(ctx context.Context, b *broker) error {
	args := brokerArgs(c.zk.Addr()+zkChroot, b.id, b.addr, filepath.Join(b.dir, "data"), c.session)
	if len(c.started) < 2 {
		c.started = append(c.started, c.qk+" "+strings.Join(args, " "))
	}
	p, err := benchproc.Launch(ctx, fmt.Sprintf("broker %d", b.id), c.qk, b.dir, args, b.addr)
	if err != nil {
		return err
	}
	b.proc = p
	return nil
}

// waitBrokers waits until every running broker lists every running broker
// in its metadata: they have all registered in ZooKeeper and the
// controller has told each of the others.
func (c *cluster) waitBrokers(ctx context.Context) error {
	want := c.live()
	return c.poll(ctx, time.Minute, "every broker to see brokers "+fmt.Sprint(ids(want)), func() error {
		for _, b := range want {
			md, err := metadata(ctx, b, nil)
			if err != nil {
				return fmt.Errorf("broker %d: %w", b.id, err)
			}
			var got []int32
			for _, mb := range md.Brokers {
				got = append(got, mb.NodeID)
			}
			slices.Sort(got)
			if !slices.Equal(got, ids(want)) {
				return fmt.Errorf("broker %d sees %v", b.id, got)
			}
		}
		return nil
	})
}

// running says whether id names a broker of the cluster that runs.
func (c *cluster) running(id int32) bool {
	return id >= 0 && int(id) < len(c.brokers) && c.brokers[id].proc != nil
}

// live is the brokers that run.
func (c *cluster) live() []*broker {
	var bs []*broker
	for _, b := range c.brokers {
		if b.proc != nil {
			bs = append(bs, b)
		}
	}
	return bs
}

func ids(bs []*broker) []int32 {
	var v []int32
	for _, b := range bs {
		v = append(v, b.id)
	}
	return v
}

func (c *cluster) addrs() []string {
	var v []string
	for _, b := range c.brokers {
		v = append(v, b.addr)
	}
	return v
}

// check returns an error naming every broker that should run and does
// not, with its exit status and the tail of its log: a broker that died
// under load is the finding, not the timeout that follows it.
func (c *cluster) check() error {
	var errs []error
	for _, b := range c.brokers {
		if b.proc != nil && !b.proc.Alive() {
			errs = append(errs, fmt.Errorf("broker %d (pid %d) died: %s\nbroker %d log:\n%s",
				b.id, b.proc.Pid(), b.proc.ExitStatus(), b.id, b.proc.LogTail(4<<10)))
		}
	}
	return errors.Join(errs...)
}

// watch returns a context that ends when ctx does or when any broker
// running now exits, so a load in progress stops at once rather than
// waiting out a ZooKeeper session for the cluster to notice the loss. The
// caller must call stop.
func (c *cluster) watch(ctx context.Context) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	for _, b := range c.live() {
		go func(p *benchproc.Proc, id int32) {
			select {
			case <-p.Exited():
				cancel(fmt.Errorf("broker %d exited", id))
			case <-done:
			}
		}(b.proc, b.id)
	}
	return wctx, func() {
		close(done)
		cancel(nil)
	}
}

// explain adds to err what check finds.
func (c *cluster) explain(err error) error {
	if err == nil {
		return nil
	}
	if dead := c.check(); dead != nil {
		return fmt.Errorf("%w\n%w", err, dead)
	}
	return err
}

// poll calls cond every 50 ms until it returns nil, a broker dies, ctx
// ends or timeout passes; the error says what was awaited and cond's last
// word.
func (c *cluster) poll(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if dead := c.check(); dead != nil {
			return fmt.Errorf("waiting for %s: %w", what, dead)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not within %v: %w", what, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond): // polling interval
		}
	}
}

// stopBroker stops b with SIGTERM (a controlled shutdown) and waits for
// it; it is down afterwards whatever the exit status.
func (c *cluster) stopBroker(b *broker) error {
	if b.proc == nil {
		return nil
	}
	err := b.proc.Stop(60 * time.Second)
	b.proc = nil
	return err
}

// restartAll restarts the brokers one at a time with a new session
// timeout, waiting after each until all see each other again. A broker
// that does not exit cleanly on SIGTERM is reported on the log: it is a
// finding, but it is down either way and the restart goes on.
func (c *cluster) restartAll(ctx context.Context, session int) error {
	c.session = session
	for _, b := range c.brokers {
		if err := c.stopBroker(b); err != nil {
			fmt.Fprintf(c.log, "cluster: restart: %v\n", err)
		}
		if err := c.start(ctx, b); err != nil {
			return err
		}
		if err := c.waitBrokers(ctx); err != nil {
			return err
		}
	}
	return nil
}

// close stops every broker, then ZooKeeper, and removes the cluster's
// directory. Graceful, brokers get SIGTERM one at a time, the controller
// last: a broker whose ControlledShutdown request is in flight to a
// controller that stops under it waits out the request's 30 s timeout;
// an unclean exit is reported on the log, not returned, the figures being
// taken by then. Otherwise (the benchmark failed, or could not start)
// they get SIGKILL: a cluster with a dead broker can take a minute to
// shut down cleanly, and nothing is left to measure.
func (c *cluster) close(graceful bool) {
	order := c.brokers
	if graceful {
		order = c.stopOrder()
	}
	for _, b := range order {
		if graceful {
			if err := c.stopBroker(b); err != nil {
				fmt.Fprintf(c.log, "cluster: stopping broker %d: %v\n", b.id, err)
			}
		} else if b.proc != nil {
			c.kill(b)
		}
		if b.cl != nil {
			b.cl.Close()
		}
	}
	if c.zk != nil {
		c.zk.Stop()
	}
	os.RemoveAll(c.root)
}

// stopOrder is the brokers with the controller, as a live broker names
// it, moved to the end.
func (c *cluster) stopOrder() []*broker {
	order := slices.Clone(c.brokers)
	for _, b := range c.live() {
		md, err := metadata(context.Background(), b, nil)
		if err != nil {
			continue
		}
		if i := slices.IndexFunc(order, func(b *broker) bool { return b.id == md.ControllerID }); i >= 0 {
			ctl := order[i]
			order = append(slices.Delete(order, i, i+1), ctl)
		}
		break
	}
	return order
}

// kill ends broker b at once (SIGKILL) and waits until it is reaped.
func (c *cluster) kill(b *broker) {
	b.proc.Kill()
	b.proc = nil
}

// terminate sends b SIGTERM and waits up to 60 s for it to exit.
func (c *cluster) terminate(b *broker) error {
	if err := b.proc.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-b.proc.Exited():
	case <-time.After(60 * time.Second):
		b.proc.Kill()
		b.proc = nil
		return fmt.Errorf("broker %d did not exit within 60 s of SIGTERM; killed", b.id)
	}
	status := b.proc.ExitStatus()
	b.proc = nil
	if status != "exit status 0" {
		return fmt.Errorf("broker %d: %s after SIGTERM", b.id, status)
	}
	return nil
}

// metadata asks broker b alone for the cluster's brokers and, with
// topics, for those topics.
func metadata(ctx context.Context, b *broker, topics []string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	seeds := b.cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errors.New("no seed broker")
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// partitionState is what one broker's metadata says of one partition.
type partitionState struct {
	leader     int32
	isr        []int32
	controller int32
}

// state asks broker b for partition p of topic.
func state(ctx context.Context, b *broker, topic string, p int32) (partitionState, error) {
	md, err := metadata(ctx, b, []string{topic})
	if err != nil {
		return partitionState{}, err
	}
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return partitionState{}, err
		}
		for _, mp := range t.Partitions {
			if mp.Partition == p {
				isr := slices.Clone(mp.ISR)
				slices.Sort(isr)
				return partitionState{leader: mp.Leader, isr: isr, controller: md.ControllerID}, kerr.ErrorForCode(mp.ErrorCode)
			}
		}
	}
	return partitionState{}, fmt.Errorf("%s-%d not in broker %d's metadata", topic, p, b.id)
}

// topicSpec is a topic a run creates, with its replicas placed by hand
// so the leader of each partition is known: partition i's replicas
// start at broker i mod 3, so with 3 partitions each broker leads one.
type topicSpec struct {
	name       string
	partitions int
	rf         int
	minISR     int // 0: the broker's default
}

// assignment is the replica list of each partition, preferred leader
// first.
func (t topicSpec) assignment(brokers int) [][]int32 {
	var a [][]int32
	for p := range t.partitions {
		var reps []int32
		for r := range t.rf {
			reps = append(reps, int32((p+r)%brokers))
		}
		a = append(a, reps)
	}
	return a
}

// createTopic creates t with its assignment (CreateTopics, which kgo
// sends to the controller) and waits until every live broker's metadata
// has each partition led by its preferred leader with the full ISR.
func (c *cluster) createTopic(ctx context.Context, t topicSpec) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = t.name
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	assign := t.assignment(len(c.brokers))
	for p, reps := range assign {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition = int32(p)
		ra.Replicas = reps
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	if t.minISR > 0 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name = "min.insync.replicas"
		cfg.Value = kmsg.StringPtr(strconv.Itoa(t.minISR))
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	b := c.live()[0]
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := req.RequestWith(rctx, b.cl)
	cancel()
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		if err != nil && resp.Topics[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Topics[0].ErrorMessage)
		}
	}
	if err != nil {
		return c.explain(fmt.Errorf("create topic %s: %w", t.name, err))
	}
	return c.poll(ctx, time.Minute, "topic "+t.name+" led by its preferred leaders with full ISRs", func() error {
		for _, b := range c.live() {
			for p, reps := range assign {
				st, err := state(ctx, b, t.name, int32(p))
				if err != nil {
					return fmt.Errorf("broker %d: %w", b.id, err)
				}
				want := slices.Sorted(slices.Values(reps))
				if st.leader != reps[0] || !slices.Equal(st.isr, want) {
					return fmt.Errorf("broker %d says partition %d has leader %d, ISR %v", b.id, p, st.leader, st.isr)
				}
			}
		}
		return nil
	})
}

// deleteTopic deletes topic; a failure is logged, not returned: the data
// only stays until the cluster stops. With a broker dead (the run has
// failed) it does nothing: deletion would wait for the dead replica.
func (c *cluster) deleteTopic(ctx context.Context, topic string) {
	if c.check() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.TopicNames = []string{topic}
	live := c.live()
	if len(live) == 0 {
		return
	}
	resp, err := req.RequestWith(ctx, live[0].cl)
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		fmt.Fprintf(c.log, "cluster: delete topic %s: %v (its data stays until the cluster stops)\n", topic, err)
	}
}

// leaderOf asks the live brokers for partition p's leader until one names
// a live broker.
func (c *cluster) leaderOf(ctx context.Context, topic string, p int32) (*broker, partitionState, error) {
	var (
		leader *broker
		st     partitionState
	)
	err := c.poll(ctx, time.Minute, fmt.Sprintf("a live leader of %s-%d", topic, p), func() error {
		var last error
		for _, b := range c.live() {
			s, err := state(ctx, b, topic, p)
			if err != nil {
				last = err
				continue
			}
			if c.running(s.leader) {
				leader, st = c.brokers[s.leader], s
				return nil
			}
			last = fmt.Errorf("broker %d names leader %d", b.id, s.leader)
		}
		return last
	})
	return leader, st, err
}

// waitFullISR waits until every live broker says partition p of topic has
// every broker in its ISR and a live leader.
func (c *cluster) waitFullISR(ctx context.Context, topic string, p int32, timeout time.Duration) error {
	want := ids(c.brokers)
	return c.poll(ctx, timeout, fmt.Sprintf("%s-%d's ISR to be %v", topic, p, want), func() error {
		for _, b := range c.live() {
			st, err := state(ctx, b, topic, p)
			if err != nil {
				return fmt.Errorf("broker %d: %w", b.id, err)
			}
			if !slices.Equal(st.isr, want) || !c.running(st.leader) {
				return fmt.Errorf("broker %d says leader %d, ISR %v", b.id, st.leader, st.isr)
			}
		}
		return nil
	})
}
