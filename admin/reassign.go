//lint:file-ignore ST1005 the error texts are Kafka's messages, verbatim, which scripts match

package admin

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// This file is the pure half of qk reassign-partitions, the shape of
// Kafka's kafka-reassign-partitions.sh (ReassignPartitionsCommand): the
// JSON files operators keep (reassignment and topics-to-move), their
// validation with Kafka's messages, and the text Kafka prints. The API
// calls are in reassign_client.go, the throttle arithmetic in
// reassign_throttle.go. The files and the lines are Kafka's byte for byte
// where scripts read them, so an operator's scripts work unchanged.
//
// Where Kafka 3.x's Scala tool and its Java port of 3.7 differ, qk follows
// the Scala tool (the duplicate lists "1,2", the log dir move line, the
// line break after "None of the specified partition moves are active.",
// which partitions --cancel cancels), with two exceptions taken from the
// port because they refuse bad input before anything changes: --execute
// checks that every partition exists ("Unable to find partition: ..."),
// and a log_dirs of the wrong length prints its lists as "[1, 2]".

// AnyLogDir in a reassignment's log_dirs lets the broker choose the
// directory; any other value is an absolute path to move the replica to.
const AnyLogDir = "any"

// TopicPartition names one partition; it prints as Kafka's
// TopicPartition.toString, "topic-partition".
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

func compareTP(a, b TopicPartition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// TopicPartitionReplica is one replica of a partition on a broker; it
// prints as Kafka's TopicPartitionReplica.toString, "topic-partition-broker".
type TopicPartitionReplica struct {
	Topic     string
	Partition int32
	Broker    int32
}

func (r TopicPartitionReplica) String() string {
	return fmt.Sprintf("%s-%d-%d", r.Topic, r.Partition, r.Broker)
}

// compareReplica orders by broker first, as Kafka's
// compareTopicPartitionReplicas.
func compareReplica(a, b TopicPartitionReplica) int {
	return cmp.Or(cmp.Compare(a.Broker, b.Broker), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// PartitionReassignment is one entry of a reassignment file: the replicas
// a partition should have, leader first, and optionally the log dir of
// each.
type PartitionReassignment struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs"`
}

// TP is the entry's partition.
func (p PartitionReassignment) TP() TopicPartition { return TopicPartition{p.Topic, p.Partition} }

// Reassignment is a parsed reassignment file: the partitions in file
// order (duplicates kept, so that execute can refuse them as Kafka does)
// and the replicas to move to a given log dir.
type Reassignment struct {
	Partitions []PartitionReassignment
	LogDirs    map[TopicPartitionReplica]string
}

// ParseReassignment reads Kafka's reassignment JSON,
//
//	{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}
//
// as ReassignPartitionsCommand.parsePartitionReassignmentData: version
// defaults to 1 and no other is known, log_dirs is optional but when given
// has one entry per replica. It does not deduplicate: see ValidateExecute.
func ParseReassignment(data []byte) (*Reassignment, error) {
	var doc struct {
		Version    *int `json:"version"`
		Partitions []struct {
			Topic     *string   `json:"topic"`
			Partition *int32    `json:"partition"`
			Replicas  *[]int32  `json:"replicas"`
			LogDirs   *[]string `json:"log_dirs"`
		} `json:"partitions"`
	}
	if err := strictJSON(data, &doc); err != nil {
		return nil, err
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, fmt.Errorf("Not supported version field value %d", *doc.Version)
	}
	out := &Reassignment{LogDirs: map[TopicPartitionReplica]string{}}
	for i, p := range doc.Partitions {
		switch {
		case p.Topic == nil:
			return nil, fmt.Errorf("partition entry %d: no \"topic\"", i)
		case p.Partition == nil:
			return nil, fmt.Errorf("partition entry %d: no \"partition\"", i)
		case p.Replicas == nil:
			return nil, fmt.Errorf("partition entry %d: no \"replicas\"", i)
		}
		r := PartitionReassignment{Topic: *p.Topic, Partition: *p.Partition, Replicas: *p.Replicas}
		if r.Replicas == nil {
			r.Replicas = []int32{}
		}
		if p.LogDirs != nil {
			r.LogDirs = *p.LogDirs
		} else {
			for range r.Replicas {
				r.LogDirs = append(r.LogDirs, AnyLogDir)
			}
		}
		if len(r.LogDirs) != len(r.Replicas) {
			return nil, fmt.Errorf("Size of replicas list %s is different from size of log dirs list %s for partition %s",
				javaList(r.Replicas), javaList(r.LogDirs), r.TP())
		}
		for j, dir := range r.LogDirs {
			if dir != AnyLogDir {
				out.LogDirs[TopicPartitionReplica{r.Topic, r.Partition, r.Replicas[j]}] = dir
			}
		}
		out.Partitions = append(out.Partitions, r)
	}
	return out, nil
}

// strictJSON decodes one JSON value into v; trailing data is an error, as
// for Kafka's parser. Its messages are Kafka's for input that is not JSON.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("the JSON field %q has the wrong type: %w", te.Field, err)
		}
		return fmt.Errorf("The input string is not a valid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("The input string is not a valid JSON: data after the top-level value")
	}
	return nil
}

// ValidateExecute applies the checks Kafka's --execute makes on a parsed
// file (parseExecuteAssignmentArgs), in its order and with its messages,
// and returns the target replicas by partition.
func (r *Reassignment) ValidateExecute() (map[TopicPartition][]int32, error) {
	if len(r.Partitions) == 0 {
		return nil, errors.New("Partition reassignment list cannot be empty")
	}
	for _, p := range r.Partitions {
		if len(p.Replicas) == 0 {
			return nil, errors.New("Partition replica list cannot be empty")
		}
	}
	seen := map[TopicPartition]int{}
	for _, p := range r.Partitions {
		seen[p.TP()]++
	}
	var dupParts []string
	for _, tp := range slices.SortedFunc(maps.Keys(seen), compareTP) {
		if seen[tp] > 1 {
			dupParts = append(dupParts, tp.String())
		}
	}
	if len(dupParts) > 0 {
		return nil, fmt.Errorf("Partition reassignment contains duplicate topic partitions: %s", strings.Join(dupParts, ","))
	}
	var dupReplicas []string
	for _, p := range r.Partitions {
		if d := duplicates(p.Replicas); len(d) > 0 {
			dupReplicas = append(dupReplicas, fmt.Sprintf("%s contains multiple entries for %s", p.TP(), joinInts(d, ",")))
		}
	}
	if len(dupReplicas) > 0 {
		return nil, fmt.Errorf("Partition replica lists may not contain duplicate entries: %s", strings.Join(dupReplicas, ". "))
	}
	out := make(map[TopicPartition][]int32, len(r.Partitions))
	for _, p := range r.Partitions {
		out[p.TP()] = p.Replicas
	}
	return out, nil
}

// targets is the file's target replicas by partition, a later entry
// winning, as Kafka's verify and cancel read it.
func (r *Reassignment) targets() map[TopicPartition][]int32 {
	out := make(map[TopicPartition][]int32, len(r.Partitions))
	for _, p := range r.Partitions {
		out[p.TP()] = p.Replicas
	}
	return out
}

// ParseTopicsToMove reads Kafka's topics-to-move JSON,
//
//	{"version":1,"topics":[{"topic":"foo"},{"topic":"bar"}]}
func ParseTopicsToMove(data []byte) ([]string, error) {
	var doc struct {
		Version *int `json:"version"`
		Topics  []struct {
			Topic *string `json:"topic"`
		} `json:"topics"`
	}
	if err := strictJSON(data, &doc); err != nil {
		return nil, err
	}
	if doc.Version != nil && *doc.Version != 1 {
		return nil, fmt.Errorf("Not supported version field value %d", *doc.Version)
	}
	var out []string
	for i, t := range doc.Topics {
		if t.Topic == nil {
			return nil, fmt.Errorf("topic entry %d: no \"topic\"", i)
		}
		out = append(out, *t.Topic)
	}
	return out, nil
}

// ParseGenerateArgs is Kafka's parseGenerateAssignmentArgs: the broker
// list ("0,1,2") and the topics, neither with duplicates.
func ParseGenerateArgs(topicsJSON []byte, brokerList string) ([]int32, []string, error) {
	var brokers []int32
	for s := range strings.SplitSeq(brokerList, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("--broker-list %q: For input string: %q", brokerList, s)
		}
		brokers = append(brokers, int32(id))
	}
	if d := duplicates(brokers); len(d) > 0 {
		return nil, nil, fmt.Errorf("Broker list contains duplicate entries: %s", joinInts(d, ","))
	}
	topics, err := ParseTopicsToMove(topicsJSON)
	if err != nil {
		return nil, nil, err
	}
	if d := duplicates(topics); len(d) > 0 {
		return nil, nil, fmt.Errorf("List of topics to reassign contains duplicate entries: %s", strings.Join(d, ","))
	}
	return brokers, topics, nil
}

// FormatReassignmentJSON is Kafka's formatAsReassignmentJson: one line of
// compact JSON, partitions sorted by topic and partition, each replica's
// log dir from logDirs or "any". It is what --generate proposes and what
// --execute prints for rollback, so it parses back with ParseReassignment.
func FormatReassignmentJSON(parts map[TopicPartition][]int32, logDirs map[TopicPartitionReplica]string) string {
	doc := struct {
		Version    int                     `json:"version"`
		Partitions []PartitionReassignment `json:"partitions"`
	}{Version: 1, Partitions: []PartitionReassignment{}}
	for _, tp := range slices.SortedFunc(maps.Keys(parts), compareTP) {
		p := PartitionReassignment{Topic: tp.Topic, Partition: tp.Partition, Replicas: parts[tp], LogDirs: []string{}}
		if p.Replicas == nil {
			p.Replicas = []int32{}
		}
		for _, b := range p.Replicas {
			p.LogDirs = append(p.LogDirs, cmp.Or(logDirs[TopicPartitionReplica{tp.Topic, tp.Partition, b}], AnyLogDir))
		}
		doc.Partitions = append(doc.Partitions, p)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // Jackson does not escape <, > and &
	_ = enc.Encode(doc)      // cannot fail: plain strings and ints
	return strings.TrimSuffix(buf.String(), "\n")
}

// generateText is what --generate prints: the current assignment, then
// the proposal, each on one JSON line.
func generateText(current, proposed map[TopicPartition][]int32) string {
	return fmt.Sprintf("Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n",
		FormatReassignmentJSON(current, nil), FormatReassignmentJSON(proposed, nil))
}

// currentAssignmentText is what --execute prints before it starts: the
// current replicas of the partitions it moves, to keep for rollback.
func currentAssignmentText(proposed, current map[TopicPartition][]int32) string {
	moving := map[TopicPartition][]int32{}
	for tp, r := range current {
		if _, ok := proposed[tp]; ok {
			moving[tp] = r
		}
	}
	return fmt.Sprintf("Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n",
		FormatReassignmentJSON(moving, nil))
}

// PartitionState is one partition's answer to --verify.
type PartitionState struct {
	Current []int32
	Target  []int32
	// Done is false while the cluster reports a reassignment of the
	// partition in progress.
	Done bool
}

// statesText is Kafka's partitionReassignmentStatesToString.
func statesText(states map[TopicPartition]PartitionState) string {
	var b strings.Builder
	b.WriteString("Status of partition reassignment:\n")
	for _, tp := range slices.SortedFunc(maps.Keys(states), compareTP) {
		s := states[tp]
		switch {
		case !s.Done:
			fmt.Fprintf(&b, "Reassignment of partition %s is still in progress.\n", tp)
		case slices.Equal(s.Current, s.Target):
			fmt.Fprintf(&b, "Reassignment of partition %s is completed.\n", tp)
		default:
			fmt.Fprintf(&b, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n",
				tp, joinInts(s.Current, ","), joinInts(s.Target, ","))
		}
	}
	return b.String()
}

// LogDirMove is the state of one replica's move to a log dir, as Kafka's
// LogDirMoveState kinds.
type LogDirMove struct {
	Target string
	// Current and Future are the replica's log dir and the dir it is
	// being copied to ("" for none).
	Current, Future string
	// Missing: the broker has no such replica; Offline: it has, but in
	// no live log dir.
	Missing, Offline bool
}

// Done is false while a copy to another dir runs.
func (m LogDirMove) Done() bool { return m.Missing || m.Offline || m.Future == "" }

// moveStatesText is Kafka's replicaMoveStatesToString: one line a
// replica, by broker then partition; empty when no log dir was named.
func moveStatesText(states map[TopicPartitionReplica]LogDirMove) string {
	var b strings.Builder
	for _, r := range slices.SortedFunc(maps.Keys(states), compareReplica) {
		s := states[r]
		tp := TopicPartition{r.Topic, r.Partition}
		switch {
		case s.Offline:
			fmt.Fprintf(&b, "Partition %s is not found in any live log dir on broker %d. There is likely an offline log directory on the broker.\n", tp, r.Broker)
		case s.Missing:
			fmt.Fprintf(&b, "Partition %s cannot be found in any live log directory on broker %d.\n", tp, r.Broker)
		case s.Future != "" && s.Future == s.Target:
			fmt.Fprintf(&b, "Reassignment of replica %s is still in progress.\n", r)
		case s.Future != "":
			fmt.Fprintf(&b, "Partition %s on broker %d is being moved to log dir %s instead of %s.\n", tp, r.Broker, s.Future, s.Target)
		case s.Current != s.Target:
			fmt.Fprintf(&b, "Partition %s on broker %d is not being moved from log dir %s to %s.\n", tp, r.Broker, s.Current, s.Target)
		default:
			fmt.Fprintf(&b, "Reassignment of replica %s completed successfully.\n", r)
		}
	}
	return b.String()
}

// OngoingReassignment is one partition of ListPartitionReassignments:
// all its replicas during the move, and those being added and removed.
type OngoingReassignment struct {
	Replicas, Adding, Removing []int32
}

// listText is Kafka's curReassignmentsToString, for --list.
func listText(cur map[TopicPartition]OngoingReassignment) string {
	if len(cur) == 0 {
		return "No partition reassignments found.\n"
	}
	var b strings.Builder
	b.WriteString("Current partition reassignments:\n")
	for _, tp := range slices.SortedFunc(maps.Keys(cur), compareTP) {
		r := cur[tp]
		fmt.Fprintf(&b, "%s: replicas: %s.", tp, joinInts(r.Replicas, ","))
		if len(r.Adding) > 0 {
			fmt.Fprintf(&b, " adding: %s.", joinInts(r.Adding, ","))
		}
		if len(r.Removing) > 0 {
			fmt.Fprintf(&b, " removing: %s.", joinInts(r.Removing, ","))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tpList joins partitions sorted, as Kafka's messages list them.
func tpList(tps []TopicPartition, sep string) string {
	tps = slices.SortedFunc(slices.Values(tps), compareTP)
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	return strings.Join(s, sep)
}

// plural is "s" unless n is 1, for Kafka's "partition reassignment%s".
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// duplicates are the values that occur more than once, sorted (Kafka's
// ToolsUtils.duplicates gives a set; sorting makes the message stable).
func duplicates[T cmp.Ordered](vs []T) []T {
	n := map[T]int{}
	for _, v := range vs {
		n[v]++
	}
	var out []T
	for v, c := range n {
		if c > 1 {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func joinInts(vs []int32, sep string) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(int(v))
	}
	return strings.Join(s, sep)
}

// javaList prints vs as Java's List/Set toString: "[1, 2]".
func javaList[T any](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
