package benchproc

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

	"github.com/qk-project/qk/internal/zktest"
)

// ZKTickTime is the benchmark's ZooKeeper tickTime in ms. ZooKeeper caps
// a session at 20 ticks; Kafka's default session (18 s) needs more than
// zktest's 500 ms ticks allow, so the benchmark runs ZooKeeper with the
// stock 2 s tick (sessions of 4-40 s).
const ZKTickTime = 2000

// zkChroot is the cluster's path in ZooKeeper.
const zkChroot = "/bench"

// Cluster is one ZooKeeper and n `qk broker start` processes, all
// under one temporary directory. Each broker keeps its port and its data
// directory across restarts, so a restarted broker is the same broker to
// the cluster and to clients.
type Cluster struct {
	QK      string
	Root    string
	ZK      *zktest.Server
	Session int // zookeeper.session.timeout.ms of the running brokers
	Brokers []*Broker
	Log     io.Writer
	Started []string // one command line of each kind, for the report
	Set     []string // extra key=value broker settings, each as --set
}

// Broker is one of the cluster's brokers. Proc is nil while it is down.
type Broker struct {
	ID     int32
	Addr   string
	Dir    string
	Proc   *Proc
	Client *kgo.Client // seeded with this broker alone: requests go to it
}

// StartCluster starts ZooKeeper and n brokers with ids 0..n-1, each with
// the extra key=value settings set, and waits until every broker sees
// all n.
func StartCluster(ctx context.Context, qk string, n, session int, log io.Writer, set ...string) (*Cluster, error) {
	root, err := os.MkdirTemp("", "qk-bench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{QK: qk, Root: root, Session: session, Log: log, Set: set}
	zkDir := filepath.Join(root, "zookeeper")
	if err := os.Mkdir(zkDir, 0o755); err != nil {
		c.Close(false)
		return nil, err
	}
	if c.ZK, err = zktest.Run(zkDir, ZKTickTime); err != nil {
		c.Close(false)
		return nil, err
	}
	c.Started = append(c.Started, c.ZK.Command())
	for i := range n {
		addr, err := FreeAddr()
		if err != nil {
			c.Close(false)
			return nil, err
		}
		b := &Broker{ID: int32(i), Addr: addr, Dir: filepath.Join(root, "broker-"+strconv.Itoa(i))}
		if err := os.Mkdir(b.Dir, 0o755); err != nil {
			c.Close(false)
			return nil, err
		}
		if b.Client, err = kgo.NewClient(kgo.SeedBrokers(addr)); err != nil {
			c.Close(false)
			return nil, err
		}
		c.Brokers = append(c.Brokers, b)
	}
	for _, b := range c.Brokers {
		if err := c.Start(ctx, b); err != nil {
			c.Close(false)
			return nil, err
		}
	}
	if err := c.WaitBrokers(ctx); err != nil {
		c.Close(false)
		return nil, err
	}
	return c, nil
}

// brokerArgs is the command line of broker id. log.segment.delete.delay.ms=0
// so that a topic deleted after a run is gone before the next one, rather
// than deleted 60 s later in the middle of a run that is then charged
// for it.
func BrokerArgs(zkConnect string, id int32, addr, dataDir string, session int) []string {
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

// Start starts broker b (again) with the cluster's session timeout.
func (c *Cluster) Start(ctx context.Context, b *Broker) error {
	args := BrokerArgs(c.ZK.Addr()+zkChroot, b.ID, b.Addr, filepath.Join(b.Dir, "data"), c.Session)
	for _, kv := range c.Set {
		args = append(args, "--set", kv)
	}
	if len(c.Started) < 2 {
		c.Started = append(c.Started, c.QK+" "+strings.Join(args, " "))
	}
	p, err := Launch(ctx, fmt.Sprintf("broker %d", b.ID), c.QK, b.Dir, args, b.Addr)
	if err != nil {
		return err
	}
	b.Proc = p
	return nil
}

// WaitBrokers waits until every running broker lists every running broker
// in its metadata: they have all registered in ZooKeeper and the
// controller has told each of the others.
func (c *Cluster) WaitBrokers(ctx context.Context) error {
	want := c.Live()
	return c.Poll(ctx, time.Minute, "every broker to see brokers "+fmt.Sprint(IDs(want)), func() error {
		for _, b := range want {
			md, err := Metadata(ctx, b, nil)
			if err != nil {
				return fmt.Errorf("broker %d: %w", b.ID, err)
			}
			var got []int32
			for _, mb := range md.Brokers {
				got = append(got, mb.NodeID)
			}
			slices.Sort(got)
			if !slices.Equal(got, IDs(want)) {
				return fmt.Errorf("broker %d sees %v", b.ID, got)
			}
		}
		return nil
	})
}

// Running says whether id names a broker of the cluster that runs.
func (c *Cluster) Running(id int32) bool {
	return id >= 0 && int(id) < len(c.Brokers) && c.Brokers[id].Proc != nil
}

// Live is the brokers that run.
func (c *Cluster) Live() []*Broker {
	var bs []*Broker
	for _, b := range c.Brokers {
		if b.Proc != nil {
			bs = append(bs, b)
		}
	}
	return bs
}

// IDs is the ids of bs.
func IDs(bs []*Broker) []int32 {
	var v []int32
	for _, b := range bs {
		v = append(v, b.ID)
	}
	return v
}

// Addrs is every broker's address, by id.
func (c *Cluster) Addrs() []string {
	var v []string
	for _, b := range c.Brokers {
		v = append(v, b.Addr)
	}
	return v
}

// Check returns an error naming every broker that should run and does
// not, with its exit status and the tail of its log: a broker that died
// under load is the finding, not the timeout that follows it.
func (c *Cluster) Check() error {
	var errs []error
	for _, b := range c.Brokers {
		if b.Proc != nil && !b.Proc.Alive() {
			errs = append(errs, fmt.Errorf("broker %d (pid %d) died: %s\nbroker %d log:\n%s",
				b.ID, b.Proc.Pid(), b.Proc.ExitStatus(), b.ID, b.Proc.LogTail(4<<10)))
		}
	}
	return errors.Join(errs...)
}

// Watch returns a context that ends when ctx does or when any broker
// running now exits, so a load in progress stops at once rather than
// waiting out a ZooKeeper session for the cluster to notice the loss. The
// caller must call stop.
func (c *Cluster) Watch(ctx context.Context) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	for _, b := range c.Live() {
		go func(p *Proc, id int32) {
			select {
			case <-p.Exited():
				cancel(fmt.Errorf("broker %d exited", id))
			case <-done:
			}
		}(b.Proc, b.ID)
	}
	return wctx, func() {
		close(done)
		cancel(nil)
	}
}

// Explain adds to err what Check finds.
func (c *Cluster) Explain(err error) error {
	if err == nil {
		return nil
	}
	if dead := c.Check(); dead != nil {
		return fmt.Errorf("%w\n%w", err, dead)
	}
	return err
}

// Poll calls cond every 50 ms until it returns nil, a broker dies, ctx
// ends or timeout passes; the error says what was awaited and cond's last
// word.
func (c *Cluster) Poll(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if dead := c.Check(); dead != nil {
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

// StopBroker stops b with SIGTERM (a controlled shutdown) and waits for
// it; it is down afterwards whatever the exit status.
func (c *Cluster) StopBroker(b *Broker) error {
	if b.Proc == nil {
		return nil
	}
	err := b.Proc.Stop(60 * time.Second)
	b.Proc = nil
	return err
}

// RestartAll restarts the brokers one at a time with a new session
// timeout, waiting after each until all see each other again. A broker
// that does not exit cleanly on SIGTERM is reported on the log: it is a
// finding, but it is down either way and the restart goes on.
func (c *Cluster) RestartAll(ctx context.Context, session int) error {
	c.Session = session
	for _, b := range c.Brokers {
		if err := c.StopBroker(b); err != nil {
			fmt.Fprintf(c.Log, "cluster: restart: %v\n", err)
		}
		if err := c.Start(ctx, b); err != nil {
			return err
		}
		if err := c.WaitBrokers(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every broker, then ZooKeeper, and removes the cluster's
// directory. Graceful, brokers get SIGTERM one at a time, the controller
// last: a broker whose ControlledShutdown request is in flight to a
// controller that stops under it waits out the request's 30 s timeout;
// an unclean exit is reported on the log, not returned, the figures being
// taken by then. Otherwise (the benchmark failed, or could not start)
// they get SIGKILL: a cluster with a dead broker can take a minute to
// shut down cleanly, and nothing is left to measure. After a failure or
// an unclean exit the brokers' logs are first copied to a directory of
// their own, named on the log.
func (c *Cluster) Close(graceful bool) {
	order := c.Brokers
	if graceful {
		order = c.stopOrder()
	}
	keep := !graceful
	for _, b := range order {
		if graceful {
			if err := c.StopBroker(b); err != nil {
				fmt.Fprintf(c.Log, "cluster: stopping broker %d: %v\n", b.ID, err)
				keep = true
			}
		} else if b.Proc != nil {
			c.Kill(b)
		}
		if b.Client != nil {
			b.Client.Close()
		}
	}
	if c.ZK != nil {
		c.ZK.Stop()
	}
	if keep {
		c.keepLogs()
	}
	os.RemoveAll(c.Root)
}

// keepLogs copies each broker's whole log out of the cluster's directory
// before it is removed, and says where: after a failure or an unclean
// exit the tail in the error is rarely all that matters.
func (c *Cluster) keepLogs() {
	dir, err := os.MkdirTemp("", "qk-bench-logs-")
	if err != nil {
		return
	}
	for _, b := range c.Brokers {
		data, err := os.ReadFile(filepath.Join(b.Dir, "broker.log"))
		if err != nil {
			continue
		}
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("broker-%d.log", b.ID)), data, 0o644)
	}
	fmt.Fprintf(c.Log, "cluster: broker logs kept in %s\n", dir)
}

// stopOrder is the brokers with the controller, as a live broker names
// it, moved to the end.
func (c *Cluster) stopOrder() []*Broker {
	order := slices.Clone(c.Brokers)
	for _, b := range c.Live() {
		md, err := Metadata(context.Background(), b, nil)
		if err != nil {
			continue
		}
		if i := slices.IndexFunc(order, func(b *Broker) bool { return b.ID == md.ControllerID }); i >= 0 {
			ctl := order[i]
			order = append(slices.Delete(order, i, i+1), ctl)
		}
		break
	}
	return order
}

// Kill ends broker b at once (SIGKILL) and waits until it is reaped.
func (c *Cluster) Kill(b *Broker) {
	b.Proc.Kill()
	b.Proc = nil
}

// Terminate sends b SIGTERM and waits up to 60 s for it to exit.
func (c *Cluster) Terminate(b *Broker) error {
	if err := b.Proc.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-b.Proc.Exited():
	case <-time.After(60 * time.Second):
		b.Proc.Kill()
		b.Proc = nil
		return fmt.Errorf("broker %d did not exit within 60 s of SIGTERM; killed", b.ID)
	}
	status := b.Proc.ExitStatus()
	b.Proc = nil
	if status != "exit status 0" {
		return fmt.Errorf("broker %d: %s after SIGTERM", b.ID, status)
	}
	return nil
}

// metadata asks broker b alone for the cluster's brokers and, with
// topics, for those topics.
func Metadata(ctx context.Context, b *Broker, topics []string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	seeds := b.Client.SeedBrokers()
	if len(seeds) == 0 {
		return nil, errors.New("no seed broker")
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// PartitionState is what one broker's metadata says of one partition.
type PartitionState struct {
	Leader     int32
	ISR        []int32
	Controller int32
}

// state asks broker b for partition p of topic.
func State(ctx context.Context, b *Broker, topic string, p int32) (PartitionState, error) {
	md, err := Metadata(ctx, b, []string{topic})
	if err != nil {
		return PartitionState{}, err
	}
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return PartitionState{}, err
		}
		for _, mp := range t.Partitions {
			if mp.Partition == p {
				isr := slices.Clone(mp.ISR)
				slices.Sort(isr)
				return PartitionState{Leader: mp.Leader, ISR: isr, Controller: md.ControllerID}, kerr.ErrorForCode(mp.ErrorCode)
			}
		}
	}
	return PartitionState{}, fmt.Errorf("%s-%d not in broker %d's metadata", topic, p, b.ID)
}

// TopicSpec is a topic a run creates, with its replicas placed by hand
// so the leader of each partition is known: partition i's replicas
// start at broker i mod 3, so with 3 partitions each broker leads one.
type TopicSpec struct {
	Name       string
	Partitions int
	RF         int
	MinISR     int // 0: the broker's default
}

// Assignment is the replica list of each partition, preferred leader
// first.
func (t TopicSpec) Assignment(brokers int) [][]int32 {
	var a [][]int32
	for p := range t.Partitions {
		var reps []int32
		for r := range t.RF {
			reps = append(reps, int32((p+r)%brokers))
		}
		a = append(a, reps)
	}
	return a
}

// CreateTopic creates t with its assignment (CreateTopics, which kgo
// sends to the controller) and waits until every live broker's metadata
// has each partition led by its preferred leader with the full ISR.
func (c *Cluster) CreateTopic(ctx context.Context, t TopicSpec) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = t.Name
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	assign := t.Assignment(len(c.Brokers))
	for p, reps := range assign {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition = int32(p)
		ra.Replicas = reps
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	if t.MinISR > 0 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name = "min.insync.replicas"
		cfg.Value = kmsg.StringPtr(strconv.Itoa(t.MinISR))
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	b := c.Live()[0]
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	resp, err := req.RequestWith(rctx, b.Client)
	cancel()
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		if err != nil && resp.Topics[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Topics[0].ErrorMessage)
		}
	}
	if err != nil {
		return c.Explain(fmt.Errorf("create topic %s: %w", t.Name, err))
	}
	return c.Poll(ctx, time.Minute, "topic "+t.Name+" led by its preferred leaders with full ISRs", func() error {
		for _, b := range c.Live() {
			for p, reps := range assign {
				st, err := State(ctx, b, t.Name, int32(p))
				if err != nil {
					return fmt.Errorf("broker %d: %w", b.ID, err)
				}
				want := slices.Sorted(slices.Values(reps))
				if st.Leader != reps[0] || !slices.Equal(st.ISR, want) {
					return fmt.Errorf("broker %d says partition %d has leader %d, ISR %v", b.ID, p, st.Leader, st.ISR)
				}
			}
		}
		return nil
	})
}

// DeleteTopic deletes topic; a failure is logged, not returned: the data
// only stays until the cluster stops. With a broker dead (the run has
// failed) it does nothing: deletion would wait for the dead replica.
func (c *Cluster) DeleteTopic(ctx context.Context, topic string) {
	if c.Check() != nil {
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
	live := c.Live()
	if len(live) == 0 {
		return
	}
	resp, err := req.RequestWith(ctx, live[0].Client)
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		fmt.Fprintf(c.Log, "cluster: delete topic %s: %v (its data stays until the cluster stops)\n", topic, err)
	}
}

// LeaderOf asks the live brokers for partition p's leader until one names
// a live broker.
func (c *Cluster) LeaderOf(ctx context.Context, topic string, p int32) (*Broker, PartitionState, error) {
	var (
		leader *Broker
		st     PartitionState
	)
	err := c.Poll(ctx, time.Minute, fmt.Sprintf("a live leader of %s-%d", topic, p), func() error {
		var last error
		for _, b := range c.Live() {
			s, err := State(ctx, b, topic, p)
			if err != nil {
				last = err
				continue
			}
			if c.Running(s.Leader) {
				leader, st = c.Brokers[s.Leader], s
				return nil
			}
			last = fmt.Errorf("broker %d names leader %d", b.ID, s.Leader)
		}
		return last
	})
	return leader, st, err
}

// WaitFullISR waits until every live broker says partition p of topic has
// every broker in its ISR and a live leader.
func (c *Cluster) WaitFullISR(ctx context.Context, topic string, p int32, timeout time.Duration) error {
	want := IDs(c.Brokers)
	return c.Poll(ctx, timeout, fmt.Sprintf("%s-%d's ISR to be %v", topic, p, want), func() error {
		for _, b := range c.Live() {
			st, err := State(ctx, b, topic, p)
			if err != nil {
				return fmt.Errorf("broker %d: %w", b.ID, err)
			}
			if !slices.Equal(st.ISR, want) || !c.Running(st.Leader) {
				return fmt.Errorf("broker %d says leader %d, ISR %v", b.ID, st.Leader, st.ISR)
			}
		}
		return nil
	})
}

// CPU is each broker's CPU-seconds so far, by id.
func (c *Cluster) CPU() ([]float64, error) {
	var v []float64
	for _, b := range c.Brokers {
		if b.Proc == nil {
			return nil, fmt.Errorf("broker %d is down", b.ID)
		}
		s, err := b.Proc.CPUSeconds()
		if err != nil {
			return nil, c.Explain(fmt.Errorf("broker %d CPU: %w", b.ID, err))
		}
		v = append(v, s)
	}
	return v, nil
}
