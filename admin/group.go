package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupSummary is one row of `qk group list`.
type GroupSummary struct {
	Name         string `json:"name" yaml:"name"`
	State        string `json:"state" yaml:"state"`
	ProtocolType string `json:"protocol_type" yaml:"protocol_type"`
	Coordinator  int32  `json:"coordinator" yaml:"coordinator"`
}

// GroupList is the view of `qk group list`.
type GroupList []GroupSummary

// Text implements View.
func (l GroupList) Text(w *tabwriter.Writer) {
	row(w, "GROUP", "STATE", "PROTOCOL TYPE", "COORDINATOR")
	for _, g := range l {
		row(w, g.Name, g.State, g.ProtocolType, g.Coordinator)
	}
}

// ListGroups lists the cluster's groups, those in one of states if given.
func (c *Client) ListGroups(ctx context.Context, states ...string) (GroupList, error) {
	l, err := c.Client.ListGroups(ctx, states...)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := GroupList{}
	for _, name := range l.Sorted() {
		g := l[name.Group]
		out = append(out, GroupSummary{Name: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	return out, nil
}

// GroupMember is one member of a described group.
type GroupMember struct {
	MemberID   string   `json:"member_id" yaml:"member_id"`
	InstanceID string   `json:"instance_id,omitempty" yaml:"instance_id,omitempty"`
	ClientID   string   `json:"client_id" yaml:"client_id"`
	Host       string   `json:"host" yaml:"host"`
	Assignment []string `json:"assignment" yaml:"assignment"` // topic:p,p
}

// GroupPartition is one partition's committed offset and lag.
type GroupPartition struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Committed int64  `json:"committed" yaml:"committed"` // -1: none
	LogEnd    int64  `json:"log_end" yaml:"log_end"`
	Lag       int64  `json:"lag" yaml:"lag"`
	MemberID  string `json:"member_id,omitempty" yaml:"member_id,omitempty"`
}

// GroupView is one group of `qk group describe`.
type GroupView struct {
	Name         string           `json:"name" yaml:"name"`
	State        string           `json:"state" yaml:"state"`
	ProtocolType string           `json:"protocol_type" yaml:"protocol_type"`
	Protocol     string           `json:"protocol" yaml:"protocol"`
	Coordinator  int32            `json:"coordinator" yaml:"coordinator"`
	Members      []GroupMember    `json:"members" yaml:"members"`
	Partitions   []GroupPartition `json:"partitions" yaml:"partitions"`
	TotalLag     int64            `json:"total_lag" yaml:"total_lag"`
}

// GroupDescriptions is the view of `qk group describe`.
type GroupDescriptions []GroupView

func (d GroupDescriptions) Len() int { return len(d) }

// Text implements View.
func (d GroupDescriptions) Text(w *tabwriter.Writer) {
	for i, g := range d {
		if i > 0 {
			fmt.Fprintln(w)
		}
		row(w, "GROUP", g.Name)
		row(w, "STATE", g.State)
		row(w, "PROTOCOL", strings.Trim(g.ProtocolType+"/"+g.Protocol, "/"))
		row(w, "COORDINATOR", g.Coordinator)
		row(w, "TOTAL LAG", g.TotalLag)
		fmt.Fprintln(w)
		if len(g.Members) > 0 {
			row(w, "MEMBER", "CLIENT ID", "HOST", "ASSIGNMENT")
			for _, m := range g.Members {
				row(w, m.MemberID, m.ClientID, m.Host, strings.Join(m.Assignment, " "))
			}
			fmt.Fprintln(w)
		}
		row(w, "TOPIC", "PARTITION", "COMMITTED", "LOG END", "LAG", "MEMBER")
		for _, p := range g.Partitions {
			committed := "-"
			if p.Committed >= 0 {
				committed = strconv.FormatInt(p.Committed, 10)
			}
			member := p.MemberID
			if member == "" {
				member = "-"
			}
			row(w, p.Topic, p.Partition, committed, p.LogEnd, p.Lag, member)
		}
	}
}

func errUnknownGroup(g string) error {
	return fmt.Errorf("group %s: %w", g, kerr.GroupIDNotFound)
}

// DescribeGroups describes groups with their members and per-partition
// committed offsets, log end offsets and lag.
func (c *Client) DescribeGroups(ctx context.Context, groups ...string) (GroupDescriptions, error) {
	lags, err := c.Client.Lag(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("describe groups: %w", err)
	}
	var out GroupDescriptions
	var first error
	for _, name := range groups {
		l, ok := lags[name]
		if !ok {
			first = cmp.Or(first, fmt.Errorf("describe group %s: no answer", name))
			continue
		}
		if err := l.Error(); err != nil {
			first = cmp.Or(first, fmt.Errorf("describe group %s: %w", name, err))
			continue
		}
		if l.State == "Dead" && len(l.Members) == 0 && len(l.Lag) == 0 {
			first = cmp.Or(first, fmt.Errorf("describe %w", errUnknownGroup(name)))
			continue
		}
		g := GroupView{Name: name, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
			Coordinator: l.Coordinator.NodeID, Members: []GroupMember{}, Partitions: []GroupPartition{}}
		for _, m := range l.Members {
			gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: []string{}}
			if m.InstanceID != nil {
				gm.InstanceID = *m.InstanceID
			}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					ps := append([]int32(nil), t.Partitions...)
					sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
					s := make([]string, len(ps))
					for i, p := range ps {
						s[i] = strconv.Itoa(int(p))
					}
					gm.Assignment = append(gm.Assignment, t.Topic+":"+strings.Join(s, ","))
				}
				sort.Strings(gm.Assignment)
			}
			g.Members = append(g.Members, gm)
		}
		for _, ml := range l.Lag.Sorted() {
			p := GroupPartition{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, LogEnd: ml.End.Offset, Lag: ml.Lag}
			if ml.Member != nil {
				p.MemberID = ml.Member.MemberID
			}
			if p.Lag > 0 {
				g.TotalLag += p.Lag
			}
			g.Partitions = append(g.Partitions, p)
		}
		out = append(out, g)
	}
	return out, first
}

// GroupResult is one group's outcome of delete.
type GroupResult = Result

// GroupResults is the view of `qk group delete`.
type GroupResults []GroupResult

func (l GroupResults) Len() int { return len(l) }

// Text implements View.
func (l GroupResults) Text(w *tabwriter.Writer) {
	row(w, "GROUP", "STATUS")
	for _, r := range l {
		row(w, r.Name, r.Status)
	}
}

// DeleteGroups deletes groups.
func (c *Client) DeleteGroups(ctx context.Context, groups ...string) (GroupResults, error) {
	resp, err := c.Client.DeleteGroups(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("delete groups: %w", err)
	}
	out, err := collectResults("delete group", groups, resp, func(r kadm.DeleteGroupResponse) (string, error) {
		if r.Err != nil {
			return "", kafkaErr(r.Err, r.ErrMessage)
		}
		return "deleted", nil
	})
	return GroupResults(out), err
}

// ResetTo is where `qk group reset-offsets` moves the offsets: exactly one
// of its fields is set.
type ResetTo struct {
	Earliest bool
	Latest   bool
	Offset   *int64
	Datetime *time.Time
	ShiftBy  *int64
}

// ResetRow is one partition of a reset plan.
type ResetRow struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Current   int64  `json:"current" yaml:"current"` // -1: no commit
	New       int64  `json:"new" yaml:"new"`
}

// ResetPlan is the view of `qk group reset-offsets`.
type ResetPlan struct {
	Group    string     `json:"group" yaml:"group"`
	Executed bool       `json:"executed" yaml:"executed"`
	Offsets  []ResetRow `json:"offsets" yaml:"offsets"`
}

// Text implements View.
func (p *ResetPlan) Text(w *tabwriter.Writer) {
	row(w, "GROUP", "TOPIC", "PARTITION", "CURRENT", "NEW")
	for _, r := range p.Offsets {
		cur := "-"
		if r.Current >= 0 {
			cur = strconv.FormatInt(r.Current, 10)
		}
		row(w, p.Group, r.Topic, r.Partition, cur, r.New)
	}
	if !p.Executed {
		fmt.Fprintln(w, "(dry run: pass --execute to commit these offsets)")
	}
}

// ParseTopicPartitions parses T or T:p,p.
func ParseTopicPartitions(s string) (string, []int32, error) {
	t, ps, ok := strings.Cut(s, ":")
	if t == "" {
		return "", nil, fmt.Errorf("--topic %q: want TOPIC or TOPIC:p,p", s)
	}
	if !ok {
		return t, nil, nil
	}
	var out []int32
	for _, p := range strings.Split(ps, ",") {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("--topic %q: want TOPIC or TOPIC:p,p", s)
		}
		out = append(out, int32(n))
	}
	return t, out, nil
}

// ResetOffsets plans moving group's offsets on topics (topic -> partitions,
// nil for all) and commits the plan if execute. Like
// kafka-consumer-groups.sh, it refuses to commit while the group has
// members; new offsets are clamped to [log start, log end].
func (c *Client) ResetOffsets(ctx context.Context, group string, topics map[string][]int32, to ResetTo, execute bool) (*ResetPlan, error) {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	if execute {
		d, err := c.Client.DescribeGroups(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("describe group %s: %w", group, err)
		}
		if g, ok := d[group]; ok && g.Err == nil && len(g.Members) > 0 {
			return nil, fmt.Errorf("reset offsets of group %s: the group has %d active member(s) (state %s); stop its consumers first", group, len(g.Members), g.State)
		}
	}
	starts, err := c.Client.ListStartOffsets(ctx, names...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	ends, err := c.Client.ListEndOffsets(ctx, names...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	if to.Datetime != nil {
		if byTime, err = c.Client.ListOffsetsAfterMilli(ctx, to.Datetime.UnixMilli(), names...); err != nil {
			return nil, fmt.Errorf("list offsets: %w", err)
		}
	}
	// GROUP_ID_NOT_FOUND (kfake, for a group that never committed) means
	// no committed offsets, as Kafka's empty answer does.
	committed, err := c.Client.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	plan := &ResetPlan{Group: group, Offsets: []ResetRow{}}
	commit := kadm.Offsets{}
	for _, t := range names {
		ps := topics[t]
		if ps == nil {
			for p := range ends[t] {
				ps = append(ps, p)
			}
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		for _, p := range ps {
			e, ok := ends[t][p]
			if !ok {
				return nil, fmt.Errorf("reset offsets: %s:%d: %w", t, p, kerr.UnknownTopicOrPartition)
			}
			start, end := starts[t][p].Offset, e.Offset
			cur := int64(-1)
			if o, ok := committed.Lookup(t, p); ok && o.Err == nil {
				cur = o.At
			}
			var n int64
			switch {
			case to.Earliest:
				n = start
			case to.Latest:
				n = end
			case to.Offset != nil:
				n = *to.Offset
			case to.Datetime != nil:
				n = byTime[t][p].Offset
				if n < 0 {
					n = end
				}
			case to.ShiftBy != nil:
				base := cur
				if base < 0 {
					base = start
				}
				n = base + *to.ShiftBy
			}
			n = max(start, min(n, end))
			plan.Offsets = append(plan.Offsets, ResetRow{Topic: t, Partition: p, Current: cur, New: n})
			commit.Add(kadm.Offset{Topic: t, Partition: p, At: n, LeaderEpoch: -1})
		}
	}
	if !execute {
		return plan, nil
	}
	resp, err := c.Client.CommitOffsets(ctx, group, commit)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.RebalanceInProgress) {
			err = fmt.Errorf("%w (the group has active members)", err)
		}
		return nil, fmt.Errorf("reset offsets of group %s: %w", group, err)
	}
	plan.Executed = true
	return plan, nil
}
