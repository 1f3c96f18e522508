//lint:file-ignore ST1005 the error texts are Kafka's messages, verbatim, which scripts match

package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/internal/assign"
)

// The actions of qk reassign-partitions. Each writes Kafka's lines to w
// as it goes rather than returning a view: --execute prints the rollback
// JSON before it changes anything, so an operator has it even when a
// later step fails, and verify and cancel say what they clear before
// they clear it, as Kafka's tool does.

// ErrExistingReassignment: --execute without --additional while the
// cluster has reassignments in progress (Kafka's message).
var ErrExistingReassignment = errors.New("Cannot execute because there is an existing partition assignment.  " +
	"Use --additional to override this and create a new partition assignment in addition to the existing one. " +
	"The --additional flag can also be used to change the throttle by resubmitting the current reassignment.")

// GenerateReassignment is --generate: it proposes moving every partition
// of the topics named in topicsJSON to the brokers of brokerList with
// Kafka's assignment (rack-aware unless rackAware is false), keeping each
// topic's partition count and replication factor, and prints the current
// and proposed assignments. Kafka draws each topic's start index and
// replica shift at random; intn draws them here (rand.IntN in the
// command, a constant in tests). Brokers of the list that the cluster does
// not know are left out, as Kafka does; the rest are ordered by id.
func (c *Client) GenerateReassignment(ctx context.Context, w io.Writer, topicsJSON []byte, brokerList string, rackAware bool, intn func(int) int) (map[TopicPartition][]int32, error) {
	brokerIDs, topics, err := ParseGenerateArgs(topicsJSON, brokerList)
	if err != nil {
		return nil, err
	}
	current, err := c.topicReplicas(ctx, topics)
	if err != nil {
		return nil, err
	}
	bs, err := c.Client.ListBrokers(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	var brokers []int32
	racks := map[int32]string{}
	for _, b := range bs {
		if slices.Contains(brokerIDs, b.NodeID) {
			brokers = append(brokers, b.NodeID)
			if rackAware && b.Rack != nil && *b.Rack != "" {
				racks[b.NodeID] = *b.Rack
			}
		}
	}
	slices.Sort(brokers)
	if len(racks) != 0 && len(racks) != len(brokers) {
		return nil, errors.New("Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information.")
	}
	proposed, err := proposeAssignment(current, brokers, racks, intn)
	if err != nil {
		return nil, err
	}
	_, err = io.WriteString(w, generateText(current, proposed))
	return proposed, err
}

// proposeAssignment is Kafka's calculateAssignment over
// AdminUtils.assignReplicasToBrokers: for each topic, as many partitions
// as it has, of the replication factor of its first partition, spread
// rack-aware when racks names a rack for every broker, else rack-unaware.
func proposeAssignment(current map[TopicPartition][]int32, brokers []int32, racks map[int32]string, intn func(int) int) (map[TopicPartition][]int32, error) {
	byTopic := map[string][]TopicPartition{}
	for tp := range current {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp)
	}
	out := map[TopicPartition][]int32{}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		tps := slices.SortedFunc(slices.Values(byTopic[topic]), compareTP)
		n, rf := len(tps), len(current[tps[0]])
		switch {
		case rf <= 0:
			return nil, errors.New("Replication factor must be larger than 0.")
		case rf > len(brokers):
			return nil, fmt.Errorf("Replication factor: %d larger than available brokers: %d.", rf, len(brokers))
		}
		start, shift := intn(len(brokers)), intn(len(brokers))
		var a map[int32][]int32
		if len(racks) == 0 {
			a = assign.RackUnaware(brokers, 0, n, rf, start, shift)
		} else {
			a = assign.RackAware(racks, brokers, 0, n, rf, start, shift)
		}
		for p, r := range a {
			out[TopicPartition{topic, p}] = r
		}
	}
	return out, nil
}

// ExecuteOptions are --execute's settings.
type ExecuteOptions struct {
	// Additional allows starting while other reassignments run, and
	// changing the throttle of a running one by resubmitting it.
	Additional bool
	// Throttle is the inter-broker replication rate in bytes/s; < 0: none.
	Throttle int64
	// LogDirThrottle is the rate of moves between log dirs; < 0: none.
	LogDirThrottle int64
	// Timeout bounds the wait for the log dir moves to begin.
	Timeout time.Duration
}

// ExecuteReassignment is --execute: it checks the file as Kafka does,
// prints the current assignment for rollback, sets the throttles, starts
// the reassignments (AlterPartitionReassignments) and then the log dir
// moves (AlterReplicaLogDirs, retried until Timeout while a replica does
// not exist yet on its new broker).
func (c *Client) ExecuteReassignment(ctx context.Context, w io.Writer, data []byte, o ExecuteOptions) error {
	r, err := ParseReassignment(data)
	if err != nil {
		return err
	}
	proposed, err := r.ValidateExecute()
	if err != nil {
		return err
	}
	ongoing, err := c.ongoingReassignments(ctx, nil)
	if err != nil {
		return err
	}
	if !o.Additional && len(ongoing) > 0 {
		return ErrExistingReassignment
	}
	if err := c.checkBrokerIDs(ctx, proposed); err != nil {
		return err
	}
	current, err := c.partitionReplicas(ctx, slices.Collect(maps.Keys(proposed)))
	if err != nil {
		return err
	}
	fmt.Fprint(w, currentAssignmentText(proposed, current))

	if o.Throttle >= 0 || o.LogDirThrottle >= 0 {
		fmt.Fprintln(w, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		if o.Throttle >= 0 {
			moves, err := proposedMoves(ongoing, proposed, current)
			if err != nil {
				return err
			}
			if err := c.setReassignmentThrottle(ctx, moves, o.Throttle); err != nil {
				return err
			}
			fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s\n", o.Throttle)
		}
		if o.LogDirThrottle >= 0 {
			moving := map[int32]bool{}
			for rep := range r.LogDirs {
				moving[rep.Broker] = true
			}
			rate := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: AlterLogDirsThrottledRate, Value: ptr(strconv.FormatInt(o.LogDirThrottle, 10))}}
			if err := c.alterBrokers(ctx, rate, slices.Sorted(maps.Keys(moving))); err != nil {
				return err
			}
			fmt.Fprintf(w, "The replica-alter-dir throttle limit was set to %d B/s\n", o.LogDirThrottle)
		}
	}

	var req kadm.AlterPartitionAssignmentsReq
	for tp, replicas := range proposed {
		req.Assign(tp.Topic, tp.Partition, replicas)
	}
	if failed, err := c.alterAssignments(ctx, req); err != nil {
		return err
	} else if len(failed) > 0 {
		return fmt.Errorf("Error reassigning partition(s):\n%s", failed)
	}
	fmt.Fprintf(w, "Successfully started partition reassignment%s for %s\n", plural(len(proposed)),
		tpList(slices.Collect(maps.Keys(proposed)), ","))
	if len(r.LogDirs) > 0 {
		return c.executeMoves(ctx, w, r.LogDirs, o.Timeout)
	}
	return nil
}

// VerifyResult is what --verify found.
type VerifyResult struct {
	Partitions map[TopicPartition]PartitionState
	// PartitionsOngoing: the cluster has some reassignment in progress,
	// of these partitions or any other.
	PartitionsOngoing bool
	Moves             map[TopicPartitionReplica]LogDirMove
	MovesOngoing      bool
}

// VerifyReassignment is --verify: the state of each partition of the file
// (in progress while the cluster lists it as reassigning, else completed
// when its replicas are the file's, else not as asked), then of each log
// dir move. When nothing is in progress in the whole cluster, it clears
// every reassignment throttle, unless preserveThrottles: which brokers
// were throttled cannot be known, so, as Kafka, it clears them on every
// broker.
func (c *Client) VerifyReassignment(ctx context.Context, w io.Writer, data []byte, preserveThrottles bool) (*VerifyResult, error) {
	r, err := ParseReassignment(data)
	if err != nil {
		return nil, err
	}
	targets := r.targets()
	ongoing, err := c.ongoingReassignments(ctx, nil)
	if err != nil {
		return nil, err
	}
	res := &VerifyResult{Partitions: map[TopicPartition]PartitionState{}, PartitionsOngoing: len(ongoing) > 0}
	var lookUp []string
	for tp := range targets {
		if _, ok := ongoing[tp]; !ok && !slices.Contains(lookUp, tp.Topic) {
			lookUp = append(lookUp, tp.Topic)
		}
	}
	current, err := c.topicReplicasAllowMissing(ctx, lookUp)
	if err != nil {
		return nil, err
	}
	for tp, target := range targets {
		if o, ok := ongoing[tp]; ok {
			res.Partitions[tp] = PartitionState{Current: o.Replicas, Target: target}
		} else {
			res.Partitions[tp] = PartitionState{Current: current[tp], Target: target, Done: true}
		}
	}
	fmt.Fprint(w, statesText(res.Partitions))
	if res.Moves, err = c.logDirMoves(ctx, r.LogDirs); err != nil {
		return nil, err
	}
	for _, m := range res.Moves {
		res.MovesOngoing = res.MovesOngoing || !m.Done()
	}
	// Kafka prints the moves with println, so an empty line when none.
	fmt.Fprint(w, cmp.Or(moveStatesText(res.Moves), "\n"))
	if !res.PartitionsOngoing && !res.MovesOngoing && !preserveThrottles {
		if err := c.clearThrottles(ctx, w, targets); err != nil {
			return res, err
		}
	}
	return res, nil
}

// CancelReassignment is --cancel: it cancels the file's partitions that
// are reassigning (AlterPartitionReassignments with null replicas), puts
// the replicas being moved between log dirs back where they are, and
// clears the throttles unless preserveThrottles.
//
// A partition counts as reassigning when it adds or removes replicas, as
// in Kafka's Scala tool; the Java port of Kafka 3.7 tests "adding none or
// removing some", which leaves a plain add uncancelled.
func (c *Client) CancelReassignment(ctx context.Context, w io.Writer, data []byte, preserveThrottles bool, timeout time.Duration) error {
	r, err := ParseReassignment(data)
	if err != nil {
		return err
	}
	targets := r.targets()
	set := kadm.TopicsSet{}
	for tp := range targets {
		set.Add(tp.Topic, tp.Partition)
	}
	ongoing, err := c.ongoingReassignments(ctx, set)
	if err != nil {
		return err
	}
	var cancel []TopicPartition
	for tp, o := range ongoing {
		if len(o.Adding) > 0 || len(o.Removing) > 0 {
			cancel = append(cancel, tp)
		}
	}
	if len(cancel) > 0 {
		var req kadm.AlterPartitionAssignmentsReq
		for _, tp := range cancel {
			req.CancelAssign(tp.Topic, tp.Partition)
		}
		failed, err := c.alterAssignments(ctx, req)
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			return fmt.Errorf("Error cancelling partition reassignment%s for:\n%s", plural(len(failed)), failed)
		}
		fmt.Fprintf(w, "Successfully cancelled partition reassignment%s for: %s\n", plural(len(cancel)), tpList(cancel, ","))
	} else {
		fmt.Fprintln(w, "None of the specified partition reassignments are active.")
	}
	moves, err := c.logDirMoves(ctx, r.LogDirs)
	if err != nil {
		return err
	}
	back := map[TopicPartitionReplica]string{}
	for rep, m := range moves {
		if !m.Done() {
			back[rep] = m.Current
		}
	}
	if len(back) == 0 {
		// A line, as Kafka 3.x's Scala tool prints it (the Java port of 3.7
		// lost the newline, running "Clearing ..." into it).
		fmt.Fprintln(w, "None of the specified partition moves are active.")
	} else if err := c.executeMoves(ctx, w, back, timeout); err != nil {
		return err
	}
	if !preserveThrottles {
		return c.clearThrottles(ctx, w, targets)
	}
	return nil
}

// ListReassignments is --list: every reassignment in progress.
func (c *Client) ListReassignments(ctx context.Context, w io.Writer) (map[TopicPartition]OngoingReassignment, error) {
	ongoing, err := c.ongoingReassignments(ctx, nil)
	if err != nil {
		return nil, err
	}
	_, err = io.WriteString(w, listText(ongoing))
	return ongoing, err
}

// ongoingReassignments is ListPartitionReassignments for set, or for the
// whole cluster when set is nil (kadm's helper asks only for named
// partitions, so the request is built here: null topics means all).
func (c *Client) ongoingReassignments(ctx context.Context, set kadm.TopicsSet) (map[TopicPartition]OngoingReassignment, error) {
	if set != nil && len(set) == 0 {
		return map[TopicPartition]OngoingReassignment{}, nil // not "all"
	}
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = TimeoutMillis(c.timeout)
	for _, t := range slices.Sorted(maps.Keys(set)) {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic = t
		rt.Partitions = slices.Sorted(maps.Keys(set[t]))
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, c.kgo)
	if err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if resp.ErrorMessage != nil {
			return nil, fmt.Errorf("list partition reassignments: %w: %s", err, *resp.ErrorMessage)
		}
		return nil, fmt.Errorf("list partition reassignments: %w", err)
	}
	out := map[TopicPartition]OngoingReassignment{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[TopicPartition{t.Topic, p.Partition}] = OngoingReassignment{Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas}
		}
	}
	return out, nil
}

// alterFailures are the partitions AlterPartitionReassignments refused,
// one "topic-partition: message" line each, sorted.
type alterFailures []string

func (f alterFailures) String() string { return strings.Join(f, "\n") }

func (c *Client) alterAssignments(ctx context.Context, req kadm.AlterPartitionAssignmentsReq) (alterFailures, error) {
	resp, err := c.Client.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("alter partition reassignments: %w", err)
	}
	var failed alterFailures
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			msg := r.Err.Error()
			if r.ErrMessage != "" {
				msg = r.ErrMessage
			}
			failed = append(failed, fmt.Sprintf("%s: %s", TopicPartition{r.Topic, r.Partition}, msg))
		}
	}
	for t, ps := range req {
		for p := range ps {
			if _, ok := resp[t][p]; !ok {
				failed = append(failed, fmt.Sprintf("%s: no answer", TopicPartition{t, p}))
			}
		}
	}
	return failed, nil
}

// checkBrokerIDs is Kafka's verifyBrokerIds: every target replica is a
// broker of the cluster.
func (c *Client) checkBrokerIDs(ctx context.Context, proposed map[TopicPartition][]int32) error {
	live, err := c.brokerIDs(ctx)
	if err != nil {
		return err
	}
	var unknown []int32
	for _, rs := range proposed {
		for _, b := range rs {
			if !slices.Contains(live, b) {
				unknown = append(unknown, b)
			}
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("Unknown broker id %d", slices.Min(unknown))
	}
	return nil
}

func (c *Client) brokerIDs(ctx context.Context) ([]int32, error) {
	bs, err := c.Client.ListBrokers(ctx)
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	return slices.Sorted(slices.Values(bs.NodeIDs())), nil
}

// topicReplicas is every partition's replicas of topics; a topic the
// cluster does not have is Kafka's "Topic foo not found."
func (c *Client) topicReplicas(ctx context.Context, topics []string) (map[TopicPartition][]int32, error) {
	out := map[TopicPartition][]int32{}
	if len(topics) == 0 {
		return out, nil
	}
	td, err := c.Client.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	for _, t := range topics {
		d, ok := td[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			return nil, &topicNotFoundError{t}
		case d.Err != nil:
			return nil, fmt.Errorf("describe topic %s: %w", t, d.Err)
		}
		for p, pd := range d.Partitions {
			out[TopicPartition{t, p}] = pd.Replicas
		}
	}
	return out, nil
}

// topicReplicasAllowMissing is topicReplicas for verify, where a topic
// that is gone has no replicas rather than being an error.
func (c *Client) topicReplicasAllowMissing(ctx context.Context, topics []string) (map[TopicPartition][]int32, error) {
	out := map[TopicPartition][]int32{}
	for _, t := range topics {
		m, err := c.topicReplicas(ctx, []string{t})
		var nf *topicNotFoundError
		if err != nil && !errors.As(err, &nf) {
			return nil, err
		}
		maps.Copy(out, m)
	}
	return out, nil
}

// topicNotFoundError is Kafka's message for a topic the cluster does not
// have; verify tells it from other failures.
type topicNotFoundError struct{ topic string }

func (e *topicNotFoundError) Error() string { return "Topic " + e.topic + " not found." }

// partitionReplicas is Kafka's getReplicaAssignmentForPartitions: the
// replicas of each partition, every one of which must exist.
func (c *Client) partitionReplicas(ctx context.Context, tps []TopicPartition) (map[TopicPartition][]int32, error) {
	var topics []string
	for _, tp := range tps {
		if !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	all, err := c.topicReplicas(ctx, topics)
	if err != nil {
		return nil, err
	}
	out := map[TopicPartition][]int32{}
	var missing []TopicPartition
	for _, tp := range tps {
		if r, ok := all[tp]; ok {
			out[tp] = r
		} else {
			missing = append(missing, tp)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("Unable to find partition: %s", tpList(missing, ", "))
	}
	return out, nil
}

// setReassignmentThrottle is Kafka's modifyReassignmentThrottle: the
// leader and follower throttled replicas of each moving topic (SET, so a
// resubmission replaces them), then the rates on every broker involved.
func (c *Client) setReassignmentThrottle(ctx context.Context, moves moveMap, rate int64) error {
	leader, follower := moves.leaderThrottles(), moves.followerThrottles()
	for _, t := range slices.Sorted(maps.Keys(moves)) {
		cfg := []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: LeaderThrottledReplicas, Value: ptr(leader[t])},
			{Op: kadm.SetConfig, Name: FollowerThrottledReplicas, Value: ptr(follower[t])},
		}
		resp, err := c.Client.AlterTopicConfigs(ctx, cfg, t)
		if err := alterConfigsErr("topic", resp, err); err != nil {
			return err
		}
	}
	v := strconv.FormatInt(rate, 10)
	rates := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: LeaderThrottledRate, Value: &v},
		{Op: kadm.SetConfig, Name: FollowerThrottledRate, Value: &v},
	}
	return c.alterBrokers(ctx, rates, moves.reassigningBrokers())
}

// clearThrottles is Kafka's clearAllThrottles: the three broker rates on
// every broker of the cluster and of the targets, and the throttled
// replicas of the targets' topics.
func (c *Client) clearThrottles(ctx context.Context, w io.Writer, targets map[TopicPartition][]int32) error {
	live, err := c.brokerIDs(ctx)
	if err != nil {
		return err
	}
	brokers, topics := set(live), map[string]bool{}
	for tp, rs := range targets {
		maps.Copy(brokers, set(rs))
		topics[tp.Topic] = true
	}
	ids := slices.Sorted(maps.Keys(brokers))
	fmt.Fprintf(w, "Clearing broker-level throttles on broker%s %s\n", plural(len(ids)), joinInts(ids, ","))
	var del []kadm.AlterConfig
	for _, k := range brokerThrottles {
		del = append(del, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if err := c.alterBrokers(ctx, del, ids); err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(topics))
	fmt.Fprintf(w, "Clearing topic-level throttles on topic%s %s\n", plural(len(names)), strings.Join(names, ","))
	del = nil
	for _, k := range topicThrottles {
		del = append(del, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	resp, err := c.Client.AlterTopicConfigs(ctx, del, names...)
	return alterConfigsErr("topic", resp, err)
}

// alterBrokers applies cfg to each broker with IncrementalAlterConfigs.
func (c *Client) alterBrokers(ctx context.Context, cfg []kadm.AlterConfig, brokers []int32) error {
	if len(brokers) == 0 {
		return nil
	}
	resp, err := c.Client.AlterBrokerConfigs(ctx, cfg, brokers...)
	return alterConfigsErr("broker", resp, err)
}

func alterConfigsErr(kind string, resp kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return fmt.Errorf("alter %s configs: %w", kind, err)
	}
	for _, r := range resp {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("alter %s %s configs: %w: %s", kind, r.Name, r.Err, r.ErrMessage)
			}
			return fmt.Errorf("alter %s %s configs: %w", kind, r.Name, r.Err)
		}
	}
	return nil
}

// executeMoves is Kafka's executeMoves: AlterReplicaLogDirs for every
// replica until each has started, every 100 ms. A replica that is not on
// its broker yet (REPLICA_NOT_AVAILABLE: its partition is still being
// copied there) is asked again until timeout.
func (c *Client) executeMoves(ctx context.Context, w io.Writer, moves map[TopicPartitionReplica]string, timeout time.Duration) error {
	pending := maps.Clone(moves)
	deadline := time.Now().Add(timeout)
	for {
		var started []TopicPartitionReplica
		byBroker := map[int32]kadm.AlterReplicaLogDirsReq{}
		for r, dir := range pending {
			req := byBroker[r.Broker]
			s := kadm.TopicsSet{}
			s.Add(r.Topic, r.Partition)
			req.Add(dir, s)
			byBroker[r.Broker] = req
		}
		for _, b := range slices.Sorted(maps.Keys(byBroker)) {
			resp, err := c.Client.AlterBrokerReplicaLogDirs(ctx, b, byBroker[b])
			if err != nil {
				return fmt.Errorf("alter replica log dirs on broker %d: %w", b, err)
			}
			for _, a := range resp.Sorted() {
				r := TopicPartitionReplica{a.Topic, a.Partition, b}
				switch {
				case a.Err == nil:
					started = append(started, r)
				case errors.Is(a.Err, kerr.ReplicaNotAvailable):
				default:
					return fmt.Errorf("Failed to alter dir for %s: %w", r, a.Err)
				}
			}
		}
		if len(started) > 0 {
			slices.SortFunc(started, compareReplica)
			names := make([]string, len(started))
			for i, r := range started {
				names[i] = r.String()
				delete(pending, r)
			}
			fmt.Fprintf(w, "Successfully started log directory move%s for: %s\n", plural(len(started)), strings.Join(names, ","))
		}
		if len(pending) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			left := slices.SortedFunc(maps.Keys(pending), compareReplica)
			s := make([]string, len(left))
			for i, r := range left {
				s[i] = r.String()
			}
			return fmt.Errorf("Timed out before log directory move%s could be started for: %s", plural(len(left)), strings.Join(s, ","))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logDirMoves is Kafka's findLogDirMoveStates over DescribeLogDirs: where
// each replica named with a log dir is, and where it is being copied.
func (c *Client) logDirMoves(ctx context.Context, targets map[TopicPartitionReplica]string) (map[TopicPartitionReplica]LogDirMove, error) {
	out := map[TopicPartitionReplica]LogDirMove{}
	byBroker := map[int32]kadm.TopicsSet{}
	for r := range targets {
		s := byBroker[r.Broker]
		s.Add(r.Topic, r.Partition)
		byBroker[r.Broker] = s
	}
	for b, s := range byBroker {
		dirs, err := c.Client.DescribeBrokerLogDirs(ctx, b, s)
		for r, target := range targets {
			if r.Broker != b {
				continue
			}
			m := LogDirMove{Target: target}
			if err != nil {
				m.Missing = true // the broker did not answer
				out[r] = m
				continue
			}
			dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
				if p.Topic == r.Topic && p.Partition == r.Partition {
					if p.IsFuture {
						m.Future = p.Dir
					} else {
						m.Current = p.Dir
					}
				}
			})
			m.Offline = m.Current == ""
			out[r] = m
		}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
