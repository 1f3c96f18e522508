package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ElectionResult is one partition's answer to a leader election.
type ElectionResult struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	// Result is "elected", "not-needed" (a valid replica already leads)
	// or "failed".
	Result string `json:"result" yaml:"result"`
	Error  string `json:"error,omitempty" yaml:"error,omitempty"`
}

// Election is the answer to ElectLeaders, in kafka-leader-election.sh's
// three groups.
type Election struct {
	Type       string           `json:"election_type" yaml:"election_type"`
	Partitions []ElectionResult `json:"partitions" yaml:"partitions"`
}

// Len is how many partitions were answered.
func (e *Election) Len() int { return len(e.Partitions) }

// Text prints Kafka's LeaderElectionCommand lines.
func (e *Election) Text(w *tabwriter.Writer) {
	var elected, notNeeded []string
	for _, p := range e.Partitions {
		switch p.Result {
		case "elected":
			elected = append(elected, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
		case "not-needed":
			notNeeded = append(notNeeded, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
		}
	}
	if len(elected) > 0 {
		fmt.Fprintf(w, "Successfully completed leader election (%s) for partitions %s\n", e.Type, strings.Join(elected, ", "))
	}
	if len(notNeeded) > 0 {
		fmt.Fprintf(w, "Valid replica already elected for partitions %s\n", strings.Join(notNeeded, ", "))
	}
	for _, p := range e.Partitions {
		if p.Result == "failed" {
			fmt.Fprintf(w, "Error completing leader election (%s) for partition: %s-%d: %s\n", e.Type, p.Topic, p.Partition, p.Error)
		}
	}
}

// ErrElectionFailed: some partition's election failed (the command then
// exits non-zero, as kafka-leader-election.sh).
var ErrElectionFailed = errors.New("leader election failed for some partitions")

// ElectLeaders runs a preferred (unclean false) or unclean election for
// the partitions of set, or every partition when set is nil.
func (c *Client) ElectLeaders(ctx context.Context, unclean bool, set kadm.TopicsSet) (*Election, error) {
	how, name := kadm.ElectPreferredReplica, "PREFERRED"
	if unclean {
		how, name = kadm.ElectLiveReplica, "UNCLEAN"
	}
	res, err := c.electLeaders(ctx, how, set)
	if err != nil {
		return nil, fmt.Errorf("elect leaders: %w", err)
	}
	out := &Election{Type: name}
	failed := false
	for topic, ps := range res {
		for p, r := range ps {
			er := ElectionResult{Topic: topic, Partition: p, Result: "elected"}
			switch {
			case r.Err == nil:
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				er.Result = "not-needed"
			default:
				er.Result, er.Error, failed = "failed", r.Err.Error(), true
				if r.ErrMessage != "" {
					er.Error = r.ErrMessage
				}
			}
			out.Partitions = append(out.Partitions, er)
		}
	}
	slices.SortFunc(out.Partitions, func(a, b ElectionResult) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	if failed {
		return out, ErrElectionFailed
	}
	return out, nil
}

// electLeaders is kadm's ElectLeaders with the request's timeout_ms set to
// the client's --timeout: kadm leaves it at kmsg's default of 60 s, whatever
// SetTimeoutMillis says, so the broker would give up at a time the user did
// not choose.
func (c *Client) electLeaders(ctx context.Context, how kadm.ElectLeadersHow, set kadm.TopicsSet) (kadm.ElectLeadersResults, error) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = TimeoutMillis(c.timeout)
	req.ElectionType = int8(how)
	for _, t := range set.IntoList() {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = t.Topic, t.Partitions
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, c.kgo)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	if resp.Version == 0 { // v0 has no election type: always preferred
		how = kadm.ElectPreferredReplica
	}
	out := make(kadm.ElectLeadersResults, len(resp.Topics))
	for _, t := range resp.Topics {
		ps := make(map[int32]kadm.ElectLeadersResult, len(t.Partitions))
		out[t.Topic] = ps
		for _, p := range t.Partitions {
			r := kadm.ElectLeadersResult{Topic: t.Topic, Partition: p.Partition, How: how, Err: kerr.ErrorForCode(p.ErrorCode)}
			if p.ErrorMessage != nil {
				r.ErrMessage = *p.ErrorMessage
			}
			ps[p.Partition] = r
		}
	}
	return out, nil
}
