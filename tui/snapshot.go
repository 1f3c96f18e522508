package tui

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Snapshot is everything `qk top` shows at one instant. The collector
// builds it off the UI goroutine and the model only renders it, so a
// snapshot recorded as JSON (testdata/*.json) drives the same screens as
// a live cluster. Values the cluster did not give are nil (null in JSON,
// "-" or "unavailable" on screen), never zero: a zero lag and an unknown
// lag must look different.
type Snapshot struct {
	Time       time.Time   `json:"time"`
	ClusterID  string      `json:"cluster_id"`
	Controller int32       `json:"controller"`
	Brokers    []Broker    `json:"brokers"`
	Partitions []Partition `json:"partitions"`
	Topics     []Topic     `json:"topics"`
	Groups     []Group     `json:"groups"`
	Rates      Rates       `json:"rates"`
	// RateSource says where the rates come from: "metrics" (the brokers'
	// /metrics counters), "high_watermark" (HW deltas: messages in only)
	// or "" (the first snapshot: no deltas yet).
	RateSource string `json:"rate_source"`
	// Errors are the requests that failed in this round, one line each;
	// the snapshot holds what the others returned.
	Errors []string `json:"errors,omitempty"`
}

// Rates are per-second rates; nil when unknown.
type Rates struct {
	MessagesIn  *float64 `json:"messages_in_per_sec"`
	MessagesOut *float64 `json:"messages_out_per_sec"` // consumed: committed offsets' progress
	BytesIn     *float64 `json:"bytes_in_per_sec"`
	BytesOut    *float64 `json:"bytes_out_per_sec"`
}

// Broker is one broker as Metadata names it or a replica list refers to
// it.
type Broker struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Registered is false for a broker named only in replica lists (gone
	// from the cluster's metadata).
	Registered bool `json:"registered"`
	// Up: it answered this round's probe within the request timeout.
	Up    bool   `json:"up"`
	Error string `json:"error,omitempty"`
	// HTTP is the broker's admin endpoint (qk.http.advertised.listener);
	// empty for a broker that is not qk or serves none.
	HTTP string `json:"http,omitempty"`
	// OfflineLogDirs are the log dirs the broker reports offline
	// (DescribeLogDirs' KAFKA_STORAGE_ERROR, KIP-112).
	OfflineLogDirs []string `json:"offline_log_dirs,omitempty"`
	Led            int      `json:"partitions_led"`
	Hosted         int      `json:"partitions_hosted"`
	BytesIn        *float64 `json:"bytes_in_per_sec"`
	BytesOut       *float64 `json:"bytes_out_per_sec"`
}

// Partition statuses, shown as text so that they survive a terminal
// without colour.
const (
	StatusOK              = ""
	StatusUnderReplicated = "UNDER-REPLICATED"
	StatusOffline         = "OFFLINE"
	// StatusLeaderDown: Metadata names a leader that did not answer this
	// round (stopped, not yet replaced by the controller).
	StatusLeaderDown = "LEADER-DOWN"
	// StatusTxnStuck: the partition's oldest open transaction is older
	// than the collector's stuck-after age (transaction.max.timeout.ms by
	// default): a hanging transaction, its last stable offset stuck and
	// read_committed consumers with it.
	StatusTxnStuck = "TXN-STUCK"
)

// Partition is one partition: what Metadata and ListOffsets give, and,
// from the brokers' /v1/partitions, each replica's LogEndOffset.
type Partition struct {
	Topic         string  `json:"topic"`
	Partition     int32   `json:"partition"`
	Leader        int32   `json:"leader"`
	LeaderEpoch   int32   `json:"leader_epoch"`
	Replicas      []int32 `json:"replicas"`
	ISR           []int32 `json:"isr"`
	HighWatermark *int64  `json:"high_watermark"`
	// LastStableOffset is the leader's last stable offset, from
	// ListOffsets read_committed (any Kafka), else from its
	// /v1/partitions; nil when neither answered. read_committed consumers
	// read below it.
	LastStableOffset *int64 `json:"last_stable_offset"`
	// OpenTransactions are the leader's open transactions, oldest first,
	// from its /v1/partitions; nil (JSON null) when unknown (the leader
	// is not qk or did not answer).
	OpenTransactions []OpenTxn `json:"open_transactions"`
	// LogEndOffsets is one entry per replica, in replica order.
	LogEndOffsets []ReplicaLEO `json:"log_end_offsets"`
	// MaxFollowerLag is the leader's LEO minus the lowest follower LEO
	// known, in records.
	MaxFollowerLag *int64 `json:"max_follower_lag"`
	SizeBytes      *int64 `json:"size_bytes"`
	Status         string `json:"status"`
	Error          string `json:"error,omitempty"`
}

// OpenTxn is one open transaction of a partition.
type OpenTxn struct {
	ProducerID  int64 `json:"producer_id"`
	FirstOffset int64 `json:"first_offset"`
	// AgeMs is how long the leader has had it open: since it appended
	// the transaction's first batch, or since it last opened the log.
	AgeMs int64 `json:"age_ms"`
}

// OldestTxnAge is the age of the partition's oldest open transaction; ok
// is false when none is open or it is unknown.
func (p *Partition) OldestTxnAge() (age time.Duration, ok bool) {
	if len(p.OpenTransactions) == 0 {
		return 0, false
	}
	oldest := p.OpenTransactions[0].AgeMs
	for _, t := range p.OpenTransactions[1:] {
		oldest = max(oldest, t.AgeMs)
	}
	return time.Duration(oldest) * time.Millisecond, true
}

// ReplicaLEO is one replica's LogEndOffset; nil (JSON null) when no qk
// endpoint reported it: the broker is not qk, or neither it nor the leader
// answered.
type ReplicaLEO struct {
	Broker       int32  `json:"broker"`
	LogEndOffset *int64 `json:"log_end_offset"`
}

// Topic aggregates its partitions.
type Topic struct {
	Name              string   `json:"name"`
	Partitions        int      `json:"partitions"`
	ReplicationFactor int      `json:"replication_factor"`
	UnderReplicated   int      `json:"under_replicated"`
	Offline           int      `json:"offline"`
	SizeBytes         *int64   `json:"size_bytes"`
	MessagesIn        *float64 `json:"messages_in_per_sec"`
	BytesIn           *float64 `json:"bytes_in_per_sec"`
	BytesOut          *float64 `json:"bytes_out_per_sec"`
}

// Group is one consumer group and its lag per topic.
type Group struct {
	ID       string     `json:"id"`
	State    string     `json:"state"`
	Members  int        `json:"members"`
	Lag      []TopicLag `json:"lag"`
	TotalLag int64      `json:"total_lag"`
	Error    string     `json:"error,omitempty"`
}

// TopicLag is a group's lag summed over one topic's partitions.
type TopicLag struct {
	Topic string `json:"topic"`
	Lag   int64  `json:"lag"`
}

// BrokersUp counts the brokers up.
func (s *Snapshot) BrokersUp() int {
	n := 0
	for _, b := range s.Brokers {
		if b.Up {
			n++
		}
	}
	return n
}

func (s *Snapshot) broker(id int32) *Broker {
	for i := range s.Brokers {
		if s.Brokers[i].ID == id {
			return &s.Brokers[i]
		}
	}
	return nil
}

// Print writes the snapshot in format "json" or "text" (what --once
// prints): brokers with up or down, then every partition with leader,
// replicas, ISR, HW and each replica's LEO.
func Print(w io.Writer, format string, s *Snapshot) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	case "text":
	default:
		return fmt.Errorf("--format %q: want text or json", format)
	}
	fmt.Fprintf(w, "cluster %s  controller %d  brokers %d/%d up\n\n", s.ClusterID, s.Controller, s.BrokersUp(), len(s.Brokers))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tHOST\tRACK\tSTATUS\tLED\tHOSTED\tHTTP")
	for _, b := range s.Brokers {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", b.ID, hostPort(b), dash(b.Rack), upDown(b), b.Led, b.Hosted, dash(b.HTTP))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tREPLICAS\tISR\tHW\tLSO\tLEO\tLAG\tSTATUS")
	for _, p := range s.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, leaderText(p.Leader),
			ids(p.Replicas), ids(p.ISR), optInt(p.HighWatermark), optInt(p.LastStableOffset), leoText(p.LogEndOffsets, "unavailable"),
			optInt(p.MaxFollowerLag), dash(p.Status))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var open []string
	for _, p := range s.Partitions {
		for _, t := range p.OpenTransactions {
			open = append(open, fmt.Sprintf("%s\t%d\t%d\t%d\t%s", p.Topic, p.Partition, t.ProducerID, t.FirstOffset, txnAge(t.AgeMs)))
		}
	}
	if len(open) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tPRODUCER ID\tFIRST OFFSET\tOPEN FOR")
		for _, l := range open {
			fmt.Fprintln(tw, l)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	return nil
}

func hostPort(b Broker) string {
	if b.Host == "" {
		return "-"
	}
	return b.Host + ":" + strconv.Itoa(int(b.Port))
}

func upDown(b Broker) string {
	switch {
	case b.Up && len(b.OfflineLogDirs) > 0:
		return "UP, DIR OFFLINE"
	case b.Up:
		return "UP"
	case !b.Registered:
		return "DOWN (gone)"
	}
	return "DOWN"
}

func leaderText(id int32) string {
	if id < 0 {
		return "none"
	}
	return strconv.Itoa(int(id))
}

// ids is broker ids as text: "0,1,2".
func ids(v []int32) string {
	var b strings.Builder
	for i, id := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// leoText is the replicas' LEOs in replica order, "1200,1200,1180"; one
// unknown is "?", all unknown is unknown.
func leoText(v []ReplicaLEO, unknown string) string {
	var b strings.Builder
	any := false
	for i, r := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		if r.LogEndOffset == nil {
			b.WriteByte('?')
			continue
		}
		any = true
		b.WriteString(strconv.FormatInt(*r.LogEndOffset, 10))
	}
	if !any {
		return unknown
	}
	return b.String()
}

// txnAge is an open transaction's age, to the second: "12m3s".
func txnAge(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}

func optInt(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
