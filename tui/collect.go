package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AdvertisedListenerKey is the read-only broker config through which a qk
// broker names its admin HTTP endpoint; other Kafka brokers do not have
// it, which is how qk top tells them apart.
const AdvertisedListenerKey = "qk.http.advertised.listener"

// DefaultRequestTimeout bounds each request of a round: a stopped broker
// (SIGSTOP: its socket accepts, nothing answers) shows as down after this
// long, and a round never takes much longer.
const DefaultRequestTimeout = 2 * time.Second

// Collector builds Snapshots from a cluster. Every request of a round
// goes to one broker with its own timeout, in parallel, so one broker
// that does not answer costs a round at most one timeout and marks only
// that broker and its partitions. Collect is not safe for concurrent use:
// it keeps the previous round's counters for rates.
type Collector struct {
	cl      *kgo.Client
	adm     *kadm.Client
	hc      *http.Client
	timeout time.Duration
	now     func() time.Time
	// txnStuckAfter is the age past which an open transaction marks its
	// partition TXN-STUCK.
	txnStuckAfter time.Duration

	prev        *Snapshot
	prevHW      map[tp]int64
	prevCommits map[string]int64 // group -> sum of committed offsets
	prevCount   map[int32]counters
	lastGood    int32 // a broker that answered Metadata last round, or -1
	rounds      int
}

type tp struct {
	topic     string
	partition int32
}

// DefaultTxnStuckAfter is transaction.max.timeout.ms's default, as
// kafka-transactions.sh find-hanging's --max-transaction-timeout: no
// transaction may stay open longer, its coordinator aborts it first.
const DefaultTxnStuckAfter = 15 * time.Minute

// CollectorOption configures a Collector.
type CollectorOption func(*Collector)

// WithTxnStuckAfter marks a partition TXN-STUCK once its oldest open
// transaction is older than d (<= 0: DefaultTxnStuckAfter); use the
// cluster's transaction.max.timeout.ms.
func WithTxnStuckAfter(d time.Duration) CollectorOption {
	return func(c *Collector) {
		if d > 0 {
			c.txnStuckAfter = d
		}
	}
}

// NewCollector collects through cl; timeout <= 0 is DefaultRequestTimeout.
func NewCollector(cl *kgo.Client, timeout time.Duration, opts ...CollectorOption) *Collector {
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	c := &Collector{
		cl:            cl,
		adm:           kadm.NewClient(cl),
		hc:            &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}},
		timeout:       timeout,
		now:           time.Now,
		txnStuckAfter: DefaultTxnStuckAfter,
		lastGood:      -1,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// brokerRound is what one broker answered this round.
type brokerRound struct {
	up       bool
	err      error
	http     string
	parts    *endpointPartitions
	counters counters
	sizes    map[tp]int64 // from DescribeLogDirs, for a broker without the endpoint
	// offlineDirs are its log dirs that DescribeLogDirs answers
	// KAFKA_STORAGE_ERROR for (KIP-112), and why.
	offlineDirs []string
}

// Collect runs one round: Metadata, then in parallel a probe of every
// broker (DescribeConfigs for its endpoint, which also tells up from
// down) with its /v1/partitions and /metrics, ListOffsets per leader, and
// the groups. It fails only when no broker answers Metadata.
func (c *Collector) Collect(ctx context.Context) (*Snapshot, error) {
	c.rounds++
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Time: c.now(), Controller: md.ControllerID}
	if md.ClusterID != nil {
		s.ClusterID = *md.ClusterID
	}
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		s.Errors = append(s.Errors, fmt.Sprintf(format, args...))
		mu.Unlock()
	}

	// Brokers: those registered, and those only named in replica lists.
	known := map[int32]bool{}
	for _, b := range md.Brokers {
		known[b.NodeID] = true
		s.Brokers = append(s.Brokers, Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: deref(b.Rack), Registered: true})
	}
	byLeader := map[int32][]tp{}
	leaders := map[tp]int32{}
	for _, t := range md.Topics {
		if t.Topic == nil || t.IsInternal && *t.Topic != "__consumer_offsets" {
			continue
		}
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				if !known[r] {
					known[r] = true
					s.Brokers = append(s.Brokers, Broker{ID: r})
				}
			}
			if p.Leader >= 0 {
				k := tp{*t.Topic, p.Partition}
				byLeader[p.Leader] = append(byLeader[p.Leader], k)
				leaders[k] = p.Leader
			}
		}
	}
	slices.SortFunc(s.Brokers, func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })

	rounds := make(map[int32]*brokerRound, len(s.Brokers))
	hws := map[tp]int64{}
	hwErr := map[tp]string{}
	var groups []Group
	var commits map[string]int64
	var wg sync.WaitGroup
	for _, b := range s.Brokers {
		br := &brokerRound{}
		rounds[b.ID] = br
		if !b.Registered {
			br.err = errors.New("not registered")
			continue
		}
		wg.Go(func() { c.probe(ctx, b.ID, br) })
	}
	listedLSO := map[tp]int64{}
	for leader, parts := range byLeader {
		wg.Go(func() {
			got, err := c.listOffsets(ctx, leader, parts, 0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.Errors = append(s.Errors, fmt.Sprintf("ListOffsets to broker %d: %v", leader, err))
			}
			for k, v := range got {
				if v.err != nil {
					hwErr[k] = v.err.Error()
				} else {
					hws[k] = v.hw
				}
			}
		})
		// The LSO, from any Kafka (read_committed latest); a failure
		// leaves it to the qk endpoint, silently: the HW's request
		// reports the broker's trouble.
		wg.Go(func() {
			got, err := c.listOffsets(ctx, leader, parts, 1)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range got {
				if v.err == nil {
					listedLSO[k] = v.hw
				}
			}
		})
	}
	// Groups need the HWs for their lag, so they wait for ListOffsets,
	// but their own requests run beside the probes.
	groupsDone := make(chan struct{})
	var described kadm.DescribedGroups
	var offsets map[string]kadm.FetchOffsetsResponse
	go func() {
		defer close(groupsDone)
		var err error
		described, offsets, err = c.groups(ctx)
		if err != nil {
			fail("groups: %v", err)
		}
	}()
	wg.Wait()
	<-groupsDone

	// Brokers' rounds into the snapshot.
	leo := map[tp]map[int32]int64{}        // each replica's own report
	leaderView := map[tp]map[int32]int64{} // the leader's view of its followers
	sizes := map[tp]int64{}
	lsos := map[tp]int64{}     // the leader's
	txns := map[tp][]OpenTxn{} // the leader's; absent: unknown
	for i := range s.Brokers {
		b := &s.Brokers[i]
		br := rounds[b.ID]
		b.Up, b.HTTP = br.up, br.http
		if br.err != nil {
			b.Error = br.err.Error()
		}
		b.OfflineLogDirs = br.offlineDirs
		for _, d := range br.offlineDirs {
			fail("broker %d: log dir %s offline (KAFKA_STORAGE_ERROR): its partitions are offline there until the broker restarts", b.ID, d)
		}
		if br.parts == nil {
			for k, v := range br.sizes {
				if leaders[k] == b.ID {
					sizes[k] = v
				}
			}
			continue
		}
		for _, p := range br.parts.Partitions {
			k := tp{p.Topic, p.Partition}
			if leo[k] == nil {
				leo[k] = map[int32]int64{}
			}
			leo[k][b.ID] = p.LogEndOffset
			if p.Role == "leader" {
				sizes[k] = p.SizeBytes
				lsos[k] = p.LastStableOffset
				if p.OpenTransactions != nil {
					open := make([]OpenTxn, 0, len(p.OpenTransactions))
					for _, t := range p.OpenTransactions {
						open = append(open, OpenTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset, AgeMs: t.AgeMs})
					}
					txns[k] = open
				}
				lv := map[int32]int64{b.ID: p.LogEndOffset}
				for _, f := range p.Followers {
					lv[f.BrokerID] = f.LogEndOffset
				}
				leaderView[k] = lv
			}
		}
	}

	// Partitions.
	for _, t := range md.Topics {
		if t.Topic == nil || t.IsInternal && *t.Topic != "__consumer_offsets" {
			continue
		}
		for _, mp := range t.Partitions {
			k := tp{*t.Topic, mp.Partition}
			p := Partition{Topic: k.topic, Partition: k.partition, Leader: mp.Leader, LeaderEpoch: mp.LeaderEpoch,
				Replicas: mp.Replicas, ISR: mp.ISR}
			if hw, ok := hws[k]; ok {
				p.HighWatermark = &hw
			} else if e := hwErr[k]; e != "" {
				p.Error = e
			}
			if mp.ErrorCode != 0 && p.Error == "" {
				p.Error = kerr.ErrorForCode(mp.ErrorCode).Error()
			}
			for _, r := range mp.Replicas {
				rl := ReplicaLEO{Broker: r}
				if v, ok := leo[k][r]; ok {
					rl.LogEndOffset = &v
				} else if v, ok := leaderView[k][r]; ok {
					rl.LogEndOffset = &v
				}
				p.LogEndOffsets = append(p.LogEndOffsets, rl)
			}
			p.MaxFollowerLag = maxLag(p)
			if sz, ok := sizes[k]; ok {
				p.SizeBytes = &sz
			}
			// ListOffsets' LSO is taken with the HW, so the two agree;
			// the leader's endpoint is the fallback.
			if lso, ok := listedLSO[k]; ok {
				p.LastStableOffset = &lso
			} else if lso, ok := lsos[k]; ok {
				p.LastStableOffset = &lso
			}
			p.OpenTransactions = txns[k]
			age, open := p.OldestTxnAge()
			switch {
			case mp.Leader < 0:
				p.Status = StatusOffline
			case !rounds[mp.Leader].up:
				p.Status = StatusLeaderDown
			case len(mp.ISR) < len(mp.Replicas):
				p.Status = StatusUnderReplicated
			case open && age > c.txnStuckAfter:
				p.Status = StatusTxnStuck
			}
			s.Partitions = append(s.Partitions, p)
		}
	}
	slices.SortFunc(s.Partitions, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for i := range s.Brokers {
		b := &s.Brokers[i]
		for _, p := range s.Partitions {
			if p.Leader == b.ID {
				b.Led++
			}
			if slices.Contains(p.Replicas, b.ID) {
				b.Hosted++
			}
		}
	}

	groups, commits = buildGroups(described, offsets, s.Partitions)
	s.Groups = groups
	c.rates(s, rounds, commits)
	slices.Sort(s.Errors)
	c.prev = s
	return s, nil
}

// metadata asks the broker that answered last round first: kgo's own
// choice may be a stopped broker, which would cost the whole round's
// timeout. Every tenth round goes through kgo's router, which refreshes
// the client's list of brokers (so Broker(id) knows new ones).
func (c *Collector) metadata(ctx context.Context) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // all
	try := func(r func(context.Context, kmsg.Request) (kmsg.Response, error)) (*kmsg.MetadataResponse, error) {
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		resp, err := r(rctx, req)
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.MetadataResponse), nil
	}
	var firstErr error
	if c.lastGood >= 0 && c.rounds%10 != 1 {
		md, err := try(c.cl.Broker(int(c.lastGood)).Request)
		if err == nil {
			return md, nil
		}
		firstErr = err
	}
	// Through the client: kgo picks a broker and retries; bound it.
	md, err := try(c.cl.Request)
	if err == nil {
		if len(md.Brokers) > 0 {
			c.lastGood = md.Brokers[0].NodeID
			if md.ControllerID >= 0 {
				c.lastGood = md.ControllerID
			}
		}
		return md, nil
	}
	if firstErr == nil {
		firstErr = err
	}
	// Every other broker last seen up, one after the other.
	if c.prev != nil {
		for _, b := range c.prev.Brokers {
			if b.Up && b.ID != c.lastGood {
				if md, err := try(c.cl.Broker(int(b.ID)).Request); err == nil {
					c.lastGood = b.ID
					return md, nil
				}
			}
		}
	}
	c.lastGood = -1
	return nil, fmt.Errorf("metadata: %w", firstErr)
}

// probe asks broker id for its admin endpoint; an answer of any kind
// means it is up. A qk broker's endpoint is then read for the replicas'
// LEOs and the counters.
func (c *Collector) probe(ctx context.Context, id int32, br *brokerRound) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.ResourceName = fmt.Sprint(id)
	res.ConfigNames = []string{AdvertisedListenerKey}
	req.Resources = append(req.Resources, res)
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	resp, err := c.cl.Broker(int(id)).Request(rctx, req)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", c.timeout)
		}
		br.err = err
		return
	}
	br.up = true
	for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		for _, cfg := range r.Configs {
			if cfg.Name == AdvertisedListenerKey && cfg.Value != nil {
				br.http = *cfg.Value
			}
		}
	}
	if br.http == "" {
		// Not qk: the sizes come from DescribeLogDirs, which any Kafka
		// since 1.0 answers, and so do the offline dirs.
		br.sizes, br.offlineDirs = c.logDirSizes(ctx, id, nil)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		// The dirs alone (no partitions asked): which are offline.
		_, br.offlineDirs = c.logDirSizes(ctx, id, []kmsg.DescribeLogDirsRequestTopic{})
	})
	wg.Go(func() {
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		p, err := fetchPartitions(rctx, c.hc, br.http)
		if err != nil {
			br.err = fmt.Errorf("endpoint %s: %w", br.http, err)
			return
		}
		br.parts = p
	})
	wg.Go(func() {
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		if m, err := fetchMetrics(rctx, c.hc, br.http); err == nil {
			br.counters = m
		}
	})
	wg.Wait()
}

// logDirSizes asks broker id with DescribeLogDirs for the size of the
// partition replicas it holds (topics nil: all; empty: none, only the
// dirs), the sum over its log dirs leaving out future replicas, and for
// its offline log dirs; nil when it does not answer in time.
func (c *Collector) logDirSizes(ctx context.Context, id int32, topics []kmsg.DescribeLogDirsRequestTopic) (map[tp]int64, []string) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Topics = topics
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.cl.Broker(int(id)).Request(rctx, req)
	if err != nil {
		return nil, nil
	}
	out := map[tp]int64{}
	var offline []string
	for _, d := range resp.(*kmsg.DescribeLogDirsResponse).Dirs {
		if d.ErrorCode == kerr.KafkaStorageError.Code {
			offline = append(offline, d.Dir)
		}
		if d.ErrorCode != 0 {
			continue
		}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				if !p.IsFuture {
					out[tp{t.Topic, p.Partition}] += p.Size
				}
			}
		}
	}
	slices.Sort(offline)
	return out, offline
}

type listedHW struct {
	hw  int64
	err error
}

// listOffsets asks the leader for the HighWatermark (ListOffsets latest)
// of the partitions it leads, or, with isolation 1 (read_committed), for
// their last stable offsets.
func (c *Collector) listOffsets(ctx context.Context, leader int32, parts []tp, isolation int8) (map[tp]listedHW, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	byTopic := map[string]int{}
	for _, p := range parts {
		i, ok := byTopic[p.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[p.topic] = i
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = p.topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p.partition
		rp.Timestamp = -1 // latest: the HW
		rp.CurrentLeaderEpoch = -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.cl.Broker(int(leader)).Request(rctx, req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", c.timeout)
		}
		return nil, err
	}
	out := make(map[tp]listedHW, len(parts))
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			out[tp{t.Topic, p.Partition}] = listedHW{hw: p.Offset, err: kerr.ErrorForCode(p.ErrorCode)}
		}
	}
	return out, nil
}

// groups lists, describes and fetches the committed offsets of every
// group, each step bounded by the timeout.
func (c *Collector) groups(ctx context.Context) (kadm.DescribedGroups, map[string]kadm.FetchOffsetsResponse, error) {
	// Each step has its own timeout: ListGroups goes to every broker and
	// waits out a stopped one, which must not leave the others no time.
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, c.timeout) }
	lctx, cancel := step()
	listed, err := c.adm.ListGroups(lctx)
	cancel()
	if len(listed) == 0 {
		return nil, nil, err
	}
	names := listed.Groups()
	var (
		described kadm.DescribedGroups
		derr      error
		fetched   kadm.FetchOffsetsResponses
		wg        sync.WaitGroup
	)
	wg.Go(func() {
		dctx, cancel := step()
		defer cancel()
		described, derr = c.adm.DescribeGroups(dctx, names...)
	})
	wg.Go(func() {
		fctx, cancel := step()
		defer cancel()
		fetched = c.adm.FetchManyOffsets(fctx, names...)
	})
	wg.Wait()
	offsets := make(map[string]kadm.FetchOffsetsResponse, len(fetched))
	for g, r := range fetched {
		offsets[g] = r
	}
	return described, offsets, errors.Join(err, derr)
}

// buildGroups computes each group's lag from its commits and this
// round's HWs (no second ListOffsets), and the sum of its commits, whose
// progress is the consumed-messages rate.
func buildGroups(described kadm.DescribedGroups, offsets map[string]kadm.FetchOffsetsResponse, parts []Partition) ([]Group, map[string]int64) {
	if len(described) == 0 && len(offsets) == 0 {
		return nil, nil
	}
	ends := kadm.ListedOffsets{}
	for _, p := range parts {
		if p.HighWatermark == nil {
			continue
		}
		if ends[p.Topic] == nil {
			ends[p.Topic] = map[int32]kadm.ListedOffset{}
		}
		ends[p.Topic][p.Partition] = kadm.ListedOffset{Topic: p.Topic, Partition: p.Partition, Offset: *p.HighWatermark, LeaderEpoch: -1, Timestamp: -1}
	}
	var out []Group
	commits := map[string]int64{}
	for name, d := range described {
		g := Group{ID: name, State: d.State, Members: len(d.Members)}
		if d.Err != nil {
			g.Error = d.Err.Error()
		}
		fo := offsets[name]
		if fo.Err != nil && g.Error == "" {
			g.Error = fo.Err.Error()
		}
		var sum int64
		for _, ps := range fo.Fetched {
			for _, o := range ps {
				if o.Err == nil && o.At >= 0 {
					sum += o.At
				}
			}
		}
		commits[name] = sum
		lag := kadm.CalculateGroupLag(d, fo.Fetched, ends)
		perTopic := map[string]int64{}
		for t, ps := range lag {
			for _, l := range ps {
				if l.Err == nil && l.Lag > 0 {
					perTopic[t] += l.Lag
				} else if l.Err == nil {
					perTopic[t] += 0
				}
			}
		}
		for t, v := range perTopic {
			g.Lag = append(g.Lag, TopicLag{Topic: t, Lag: v})
			g.TotalLag += v
		}
		slices.SortFunc(g.Lag, func(a, b TopicLag) int { return cmp.Compare(a.Topic, b.Topic) })
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.ID, b.ID) })
	return out, commits
}

// rates fills the per-second rates from this round and the last: the
// brokers' counters when every broker up exports them, else the HWs'
// progress (messages in only). Messages out is the groups' committed
// offsets' progress, which the Kafka protocol gives on any cluster.
func (c *Collector) rates(s *Snapshot, rounds map[int32]*brokerRound, commits map[string]int64) {
	hw := make(map[tp]int64, len(s.Partitions))
	for _, p := range s.Partitions {
		if p.HighWatermark != nil {
			hw[tp{p.Topic, p.Partition}] = *p.HighWatermark
		}
	}
	count := map[int32]counters{}
	allMetrics := true
	for _, b := range s.Brokers {
		if !b.Up {
			continue
		}
		if m := rounds[b.ID].counters; m != nil {
			count[b.ID] = m
		} else {
			allMetrics = false
		}
	}
	prev, prevHW, prevCommits, prevCount := c.prev, c.prevHW, c.prevCommits, c.prevCount
	c.prevHW, c.prevCommits, c.prevCount = hw, commits, count
	// Topics, with or without rates.
	topics := map[string]*Topic{}
	var names []string
	for _, p := range s.Partitions {
		t := topics[p.Topic]
		if t == nil {
			t = &Topic{Name: p.Topic}
			topics[p.Topic] = t
			names = append(names, p.Topic)
		}
		t.Partitions++
		t.ReplicationFactor = max(t.ReplicationFactor, len(p.Replicas))
		switch p.Status {
		case StatusUnderReplicated:
			t.UnderReplicated++
		case StatusOffline, StatusLeaderDown:
			t.Offline++
		}
		if p.SizeBytes != nil {
			t.SizeBytes = ptr(deref(t.SizeBytes) + *p.SizeBytes)
		}
	}
	defer func() {
		for _, n := range names {
			s.Topics = append(s.Topics, *topics[n])
		}
	}()
	if prev == nil {
		return
	}
	dt := s.Time.Sub(prev.Time).Seconds()
	if dt <= 0 {
		return
	}
	if prevCommits != nil || commits != nil {
		var d int64
		for g, v := range commits {
			if pv, ok := prevCommits[g]; ok && v > pv {
				d += v - pv
			}
		}
		s.Rates.MessagesOut = ptr(float64(d) / dt)
	}
	if allMetrics && len(count) > 0 {
		s.RateSource = "metrics"
		rate := func(name string, b int32, topic string) (float64, bool) {
			now, ok := count[b][name][topic]
			was, ok2 := prevCount[b][name][topic]
			if !ok || !ok2 || now < was {
				return 0, ok && ok2
			}
			return (now - was) / dt, true
		}
		var in, out, msgs float64
		for i := range s.Brokers {
			b := &s.Brokers[i]
			if count[b.ID] == nil || prevCount[b.ID] == nil {
				continue
			}
			bi, _ := count[b.ID].total(metricBytesIn)
			pbi, _ := prevCount[b.ID].total(metricBytesIn)
			bo, _ := count[b.ID].total(metricBytesOut)
			pbo, _ := prevCount[b.ID].total(metricBytesOut)
			mi, _ := count[b.ID].total(metricMessagesIn)
			pmi, _ := prevCount[b.ID].total(metricMessagesIn)
			b.BytesIn, b.BytesOut = ptr(max(bi-pbi, 0)/dt), ptr(max(bo-pbo, 0)/dt)
			in, out, msgs = in+*b.BytesIn, out+*b.BytesOut, msgs+max(mi-pmi, 0)/dt
			for _, n := range names {
				t := topics[n]
				if v, ok := rate(metricBytesIn, b.ID, n); ok {
					t.BytesIn = ptr(deref(t.BytesIn) + v)
				}
				if v, ok := rate(metricBytesOut, b.ID, n); ok {
					t.BytesOut = ptr(deref(t.BytesOut) + v)
				}
				if v, ok := rate(metricMessagesIn, b.ID, n); ok {
					t.MessagesIn = ptr(deref(t.MessagesIn) + v)
				}
			}
		}
		s.Rates.BytesIn, s.Rates.BytesOut, s.Rates.MessagesIn = &in, &out, &msgs
		return
	}
	if prevHW == nil {
		return
	}
	s.RateSource = "high_watermark"
	var msgs float64
	for _, p := range s.Partitions {
		k := tp{p.Topic, p.Partition}
		now, ok := hw[k]
		was, ok2 := prevHW[k]
		if !ok || !ok2 {
			continue
		}
		v := float64(max(now-was, 0)) / dt
		t := topics[p.Topic]
		t.MessagesIn = ptr(deref(t.MessagesIn) + v)
		msgs += v
	}
	s.Rates.MessagesIn = &msgs
}

// maxLag is the leader's LEO minus the lowest follower LEO known.
func maxLag(p Partition) *int64 {
	var leader *int64
	for _, r := range p.LogEndOffsets {
		if r.Broker == p.Leader {
			leader = r.LogEndOffset
		}
	}
	if leader == nil {
		return nil
	}
	var lag *int64
	for _, r := range p.LogEndOffsets {
		if r.Broker == p.Leader || r.LogEndOffset == nil {
			continue
		}
		l := max(*leader-*r.LogEndOffset, 0)
		if lag == nil || l > *lag {
			lag = &l
		}
	}
	return lag
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
