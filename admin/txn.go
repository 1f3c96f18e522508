package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction tools are kafka-transactions.sh (Kafka 3.x's
// TransactionsCommand): the same requests, the same decisions and, in
// text, the same tables (ToolsUtils.prettyPrintTable: each cell padded to
// its column's width and followed by a tab).

// kafkaTable writes headers and rows as Kafka's prettyPrintTable does.
func kafkaTable(w io.Writer, headers []string, rows [][]string) {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = len(h)
	}
	for _, r := range rows {
		for i := range headers {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len(c)))
			b.WriteByte('\t')
		}
		fmt.Fprintln(w, b.String())
	}
	line(headers)
	for _, r := range rows {
		line(r)
	}
}

func itoa[T ~int16 | ~int32 | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

// TransactionListing is one row of `qk transactions list`.
type TransactionListing struct {
	TransactionalID string `json:"transactional_id" yaml:"transactional_id"`
	Coordinator     int32  `json:"coordinator" yaml:"coordinator"`
	ProducerID      int64  `json:"producer_id" yaml:"producer_id"`
	State           string `json:"state" yaml:"state"`
}

// TransactionList is the view of `qk transactions list`.
type TransactionList []TransactionListing

func (l TransactionList) Len() int { return len(l) }

// Text implements View.
func (l TransactionList) Text(w *tabwriter.Writer) { l.RawText(w) }

// RawText writes kafka-transactions.sh list's table.
func (l TransactionList) RawText(w io.Writer) {
	rows := make([][]string, len(l))
	for i, t := range l {
		rows[i] = []string{t.TransactionalID, itoa(t.Coordinator), itoa(t.ProducerID), t.State}
	}
	kafkaTable(w, []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}, rows)
}

// ListTransactionsOptions filter `qk transactions list`: states and
// producer ids (none: all), and durationMs (ListTransactions v1, Kafka
// 3.8's --duration-filter: only transactions running longer; < 0: all).
type ListTransactionsOptions struct {
	States      []string
	ProducerIDs []int64
	DurationMs  int64
}

// ListTransactions asks every broker for the transactions it coordinates,
// as Kafka's Admin.listTransactions().allByBrokerId(). It is sent with
// kmsg, since kadm's ListTransactions has no duration filter.
func (c *Client) ListTransactions(ctx context.Context, o ListTransactionsOptions) (TransactionList, error) {
	req := kmsg.NewPtrListTransactionsRequest()
	req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = o.States, o.ProducerIDs, o.DurationMs
	out := TransactionList{}
	var errs []error
	for _, sh := range c.kgo.RequestSharded(ctx, req) {
		if sh.Err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", sh.Meta.NodeID, sh.Err))
			continue
		}
		if o.DurationMs >= 0 && sh.Req.GetVersion() < 1 {
			errs = append(errs, fmt.Errorf("broker %d: the duration filter needs ListTransactions v1 (Kafka 3.8)", sh.Meta.NodeID))
			continue
		}
		resp := sh.Resp.(*kmsg.ListTransactionsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("broker %d: %w", sh.Meta.NodeID, err))
			continue
		}
		for _, t := range resp.TransactionStates {
			out = append(out, TransactionListing{TransactionalID: t.TransactionalID, Coordinator: sh.Meta.NodeID,
				ProducerID: t.ProducerID, State: t.TransactionState})
		}
	}
	slices.SortFunc(out, func(a, b TransactionListing) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("Failed to list transactions: %w", err)
	}
	return out, nil
}

// TransactionDescription is the view of `qk transactions describe`.
type TransactionDescription struct {
	CoordinatorID   int32    `json:"coordinator_id" yaml:"coordinator_id"`
	TransactionalID string   `json:"transactional_id" yaml:"transactional_id"`
	ProducerID      int64    `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch   int16    `json:"producer_epoch" yaml:"producer_epoch"`
	State           string   `json:"state" yaml:"state"`
	TimeoutMs       int32    `json:"transaction_timeout_ms" yaml:"transaction_timeout_ms"`
	StartTimeMs     int64    `json:"current_transaction_start_time_ms" yaml:"current_transaction_start_time_ms"` // -1: none
	DurationMs      int64    `json:"transaction_duration_ms" yaml:"transaction_duration_ms"`                     // -1: none
	TopicPartitions []string `json:"topic_partitions" yaml:"topic_partitions"`                                   // topic-partition
}

// Text implements View.
func (d *TransactionDescription) Text(w *tabwriter.Writer) { d.RawText(w) }

// RawText writes kafka-transactions.sh describe's table.
func (d *TransactionDescription) RawText(w io.Writer) {
	start, duration := "None", "None"
	if d.StartTimeMs >= 0 {
		start, duration = itoa(d.StartTimeMs), itoa(d.DurationMs)
	}
	kafkaTable(w, []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
		"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"},
		[][]string{{itoa(d.CoordinatorID), d.TransactionalID, itoa(d.ProducerID), itoa(d.ProducerEpoch), d.State,
			itoa(d.TimeoutMs), start, duration, strings.Join(d.TopicPartitions, ",")}})
}

// topicPartitionNames are a set's partitions as Kafka's TopicPartition
// prints them (topic-partition), sorted.
func topicPartitionNames(s kadm.TopicsSet) []string {
	out := []string{}
	for _, t := range s.Sorted() {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	return out
}

// DescribeTransaction describes one transactional id at its coordinator;
// now is the time the duration is measured to.
func (c *Client) DescribeTransaction(ctx context.Context, id string, now time.Time) (*TransactionDescription, error) {
	ds, err := c.Client.DescribeTransactions(ctx, id)
	fail := func(err error) error {
		return fmt.Errorf("Failed to describe transaction state of transactional-id `%s`: %w", id, err)
	}
	if err != nil {
		return nil, fail(err)
	}
	d, ok := ds[id]
	switch {
	case !ok:
		return nil, fail(errors.New("no answer"))
	case d.Err != nil:
		return nil, fail(d.Err)
	}
	out := &TransactionDescription{CoordinatorID: d.Coordinator, TransactionalID: id, ProducerID: d.ProducerID,
		ProducerEpoch: d.ProducerEpoch, State: d.State, TimeoutMs: d.TimeoutMillis, StartTimeMs: -1, DurationMs: -1,
		TopicPartitions: topicPartitionNames(d.Topics)}
	if d.StartTimestamp >= 0 {
		out.StartTimeMs, out.DurationMs = d.StartTimestamp, now.UnixMilli()-d.StartTimestamp
	}
	return out, nil
}

// ProducerState is one active producer of a partition, as
// DescribeProducers reports it.
type ProducerState struct {
	ProducerID            int64 `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch         int16 `json:"producer_epoch" yaml:"producer_epoch"`
	CoordinatorEpoch      int32 `json:"latest_coordinator_epoch" yaml:"latest_coordinator_epoch"` // -1: none
	LastSequence          int32 `json:"last_sequence" yaml:"last_sequence"`
	LastTimestamp         int64 `json:"last_timestamp" yaml:"last_timestamp"`
	CurrentTxnStartOffset int64 `json:"current_transaction_start_offset" yaml:"current_transaction_start_offset"` // -1: none
}

// ProducerStates is the view of `qk transactions describe-producers`.
type ProducerStates []ProducerState

func (l ProducerStates) Len() int { return len(l) }

// Text implements View.
func (l ProducerStates) Text(w *tabwriter.Writer) { l.RawText(w) }

// RawText writes kafka-transactions.sh describe-producers' table.
func (l ProducerStates) RawText(w io.Writer) {
	rows := make([][]string, len(l))
	for i, p := range l {
		start := "None"
		if p.CurrentTxnStartOffset >= 0 {
			start = itoa(p.CurrentTxnStartOffset)
		}
		rows[i] = []string{itoa(p.ProducerID), itoa(p.ProducerEpoch), itoa(p.CoordinatorEpoch), itoa(p.LastSequence),
			itoa(p.LastTimestamp), start}
	}
	kafkaTable(w, []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
		"CurrentTransactionStartOffset"}, rows)
}

// DescribeProducers returns the active producers of partitions, asked of
// each partition's leader, or of brokerID (>= 0), as Kafka's
// DescribeProducersOptions.brokerId. Partitions that failed are in the
// error, the others are answered.
func (c *Client) DescribeProducers(ctx context.Context, tps []TopicPartition, brokerID int32) (map[TopicPartition]ProducerStates, error) {
	out := map[TopicPartition]ProducerStates{}
	var errs []error
	add := func(tp TopicPartition, err error, producers []ProducerState) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", tp, err))
			return
		}
		slices.SortFunc(producers, func(a, b ProducerState) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
		out[tp] = producers
	}
	if brokerID < 0 {
		s := kadm.TopicsSet{}
		for _, tp := range tps {
			s.Add(tp.Topic, tp.Partition)
		}
		d, err := c.Client.DescribeProducers(ctx, s)
		if err != nil && len(d) == 0 {
			return nil, err
		}
		for _, tp := range tps {
			dp, ok := d[tp.Topic].Partitions[tp.Partition]
			if !ok {
				add(tp, cmpErr(err, errors.New("no answer")), nil)
				continue
			}
			ps := []ProducerState{}
			for _, p := range dp.ActiveProducers {
				ps = append(ps, ProducerState{p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch, p.LastSequence,
					p.LastTimestamp, p.CurrentTxnStartOffset})
			}
			add(tp, dp.Err, ps)
		}
		return out, errors.Join(errs...)
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, tp := range tps {
		if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == tp.Topic {
			req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, c.kgo.Broker(int(brokerID)))
	if err != nil {
		return nil, err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			ps := []ProducerState{}
			for _, p := range rp.ActiveProducers {
				ps = append(ps, ProducerState{p.ProducerID, int16(p.ProducerEpoch), p.CoordinatorEpoch, p.LastSequence,
					p.LastTimestamp, p.CurrentTxnStartOffset})
			}
			add(TopicPartition{rt.Topic, rp.Partition}, kerr.ErrorForCode(rp.ErrorCode), ps)
		}
	}
	return out, errors.Join(errs...)
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// DescribePartitionProducers is `qk transactions describe-producers`: one
// partition's active producers, from its leader or from brokerID (>= 0).
func (c *Client) DescribePartitionProducers(ctx context.Context, tp TopicPartition, brokerID int32) (ProducerStates, error) {
	m, err := c.DescribeProducers(ctx, []TopicPartition{tp}, brokerID)
	if err == nil {
		if _, ok := m[tp]; !ok {
			err = errors.New("no answer")
		}
	}
	if err != nil {
		on := "leader"
		if brokerID >= 0 {
			on = fmt.Sprintf("broker %d", brokerID)
		}
		return nil, fmt.Errorf("Failed to describe producers for partition %s on %s: %w", tp, on, err)
	}
	return m[tp], nil
}

// AbortSpec is the transaction `qk transactions abort` ends: Kafka's
// AbortTransactionSpec.
type AbortSpec struct {
	TopicPartition
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
}

func (s AbortSpec) String() string {
	return fmt.Sprintf("AbortTransactionSpec(topicPartition=%s, producerId=%d, producerEpoch=%d, coordinatorEpoch=%d)",
		s.TopicPartition, s.ProducerID, s.ProducerEpoch, s.CoordinatorEpoch)
}

// AbortSpecAt finds, with DescribeProducers at the partition's leader, the
// producer whose open transaction starts at startOffset. A producer with
// no coordinator epoch yet (-1) is aborted with 0, as Kafka does.
func (c *Client) AbortSpecAt(ctx context.Context, tp TopicPartition, startOffset int64) (AbortSpec, error) {
	m, err := c.DescribeProducers(ctx, []TopicPartition{tp}, -1)
	if err != nil {
		return AbortSpec{}, fmt.Errorf("Failed to validate producer state for partition %s: %w", tp, err)
	}
	for _, p := range m[tp] {
		if p.CurrentTxnStartOffset >= 0 && p.CurrentTxnStartOffset == startOffset {
			return AbortSpec{TopicPartition: tp, ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
				CoordinatorEpoch: max(p.CoordinatorEpoch, 0)}, nil
		}
	}
	return AbortSpec{}, fmt.Errorf("Could not find any open transactions starting at offset %d on partition %s", startOffset, tp)
}

// AbortTransaction writes an ABORT marker for the spec's producer to the
// partition's leader (WriteTxnMarkers, as Kafka's Admin.abortTransaction;
// the principal needs CLUSTER_ACTION).
func (c *Client) AbortTransaction(ctx context.Context, s AbortSpec) error {
	rs, err := c.Client.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch,
		CoordinatorEpoch: max(s.CoordinatorEpoch, 0), Topics: kadm.TopicsSet{s.Topic: {s.Partition: {}}}})
	if err == nil {
		p, ok := rs[s.ProducerID].Topics[s.Topic].Partitions[s.Partition]
		switch {
		case !ok:
			err = errors.New("no answer")
		default:
			err = p.Err
		}
	}
	if err != nil {
		return fmt.Errorf("Failed to abort transaction %s: %w", s, err)
	}
	return nil
}

// HangingTransaction is one row of `qk transactions find-hanging`.
type HangingTransaction struct {
	Topic            string `json:"topic" yaml:"topic"`
	Partition        int32  `json:"partition" yaml:"partition"`
	ProducerID       int64  `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch    int16  `json:"producer_epoch" yaml:"producer_epoch"`
	CoordinatorEpoch int32  `json:"coordinator_epoch" yaml:"coordinator_epoch"`
	StartOffset      int64  `json:"start_offset" yaml:"start_offset"`
	LastTimestamp    int64  `json:"last_timestamp" yaml:"last_timestamp"`
	DurationMinutes  int64  `json:"duration_min" yaml:"duration_min"`
}

// HangingTransactions is the view of `qk transactions find-hanging`.
type HangingTransactions []HangingTransaction

func (l HangingTransactions) Len() int { return len(l) }

// Text implements View.
func (l HangingTransactions) Text(w *tabwriter.Writer) { l.RawText(w) }

// RawText writes kafka-transactions.sh find-hanging's table.
func (l HangingTransactions) RawText(w io.Writer) {
	rows := make([][]string, len(l))
	for i, h := range l {
		rows[i] = []string{h.Topic, itoa(h.Partition), itoa(h.ProducerID), itoa(h.ProducerEpoch), itoa(h.CoordinatorEpoch),
			itoa(h.StartOffset), itoa(h.LastTimestamp), itoa(h.DurationMinutes)}
	}
	kafkaTable(w, []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
		"LastTimestamp", "Duration(min)"}, rows)
}

// FindHangingOptions scope `qk transactions find-hanging`: BrokerID (-1:
// none) or Topic, and Partition (-1: all) within Topic.
type FindHangingOptions struct {
	BrokerID          int32
	Topic             string
	Partition         int32
	MaxTransactionAge time.Duration // --max-transaction-timeout
	Now               time.Time
}

// findHangingBatch is how many partitions one DescribeProducers asks
// about (Kafka's MAX_BATCH_SIZE).
const findHangingBatch = 500

// FindHangingTransactions finds open transactions, on the partitions of
// the scope, older than the maximum transaction timeout, that their
// coordinator does not know as ongoing on that partition: no
// transactional id has the producer id (ListTransactions), the id is
// unknown (DescribeTransactions), or its current transaction does not
// hold the partition. The coordinator will never write a marker there, so
// the partition's last stable offset is stuck until `abort`.
func (c *Client) FindHangingTransactions(ctx context.Context, o FindHangingOptions) (HangingTransactions, error) {
	if o.Topic == "" && o.BrokerID < 0 {
		return nil, errors.New("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
	}
	if o.Partition >= 0 && o.Topic == "" {
		return nil, errors.New("The --partition argument requires --topic to be provided")
	}
	tps, err := c.hangingSearchPartitions(ctx, o)
	if err != nil {
		return nil, err
	}
	type open struct {
		tp TopicPartition
		p  ProducerState
	}
	var candidates []open
	for batch := range slices.Chunk(tps, findHangingBatch) {
		m, err := c.DescribeProducers(ctx, batch, o.BrokerID)
		if err != nil {
			return nil, fmt.Errorf("Failed to describe producers for %d partitions on broker %d: %w", len(batch), o.BrokerID, err)
		}
		for _, tp := range batch {
			for _, p := range m[tp] {
				if p.CurrentTxnStartOffset >= 0 && o.Now.UnixMilli()-p.LastTimestamp > o.MaxTransactionAge.Milliseconds() {
					candidates = append(candidates, open{tp, p})
				}
			}
		}
	}
	out := HangingTransactions{}
	if len(candidates) == 0 {
		return out, nil
	}
	var pids []int64
	for _, cd := range candidates {
		if !slices.Contains(pids, cd.p.ProducerID) {
			pids = append(pids, cd.p.ProducerID)
		}
	}
	listed, err := c.Client.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, fmt.Errorf("Failed to list transactions for %d producers: %w", len(pids), err)
	}
	ids := map[int64]string{}
	for _, l := range listed {
		if slices.Contains(pids, l.ProducerID) {
			ids[l.ProducerID] = l.TxnID
		}
	}
	described := kadm.DescribedTransactions{}
	if len(ids) > 0 {
		var names []string
		for _, id := range ids {
			names = append(names, id)
		}
		described, err = c.Client.DescribeTransactions(ctx, names...)
		if err != nil && len(described) == 0 {
			return nil, fmt.Errorf("Failed to describe %d transactions: %w", len(names), err)
		}
		for _, d := range described {
			if d.Err != nil && !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
				return nil, fmt.Errorf("Failed to describe %d transactions: %s: %w", len(names), d.TxnID, d.Err)
			}
		}
	}
	for _, cd := range candidates {
		id, known := ids[cd.p.ProducerID]
		if known {
			d, ok := described[id]
			if ok && d.Err == nil {
				if _, ongoing := d.Topics[cd.tp.Topic][cd.tp.Partition]; ongoing {
					continue // the coordinator will write the marker
				}
			}
		}
		out = append(out, HangingTransaction{Topic: cd.tp.Topic, Partition: cd.tp.Partition, ProducerID: cd.p.ProducerID,
			ProducerEpoch: cd.p.ProducerEpoch, CoordinatorEpoch: cd.p.CoordinatorEpoch, StartOffset: cd.p.CurrentTxnStartOffset,
			LastTimestamp: cd.p.LastTimestamp, DurationMinutes: (o.Now.UnixMilli() - cd.p.LastTimestamp) / time.Minute.Milliseconds()})
	}
	return out, nil
}

// hangingSearchPartitions are the partitions find-hanging looks at: the
// one asked, the topic's, or every topic's (internal ones too) with a
// replica on the broker.
func (c *Client) hangingSearchPartitions(ctx context.Context, o FindHangingOptions) ([]TopicPartition, error) {
	if o.Topic != "" && o.Partition >= 0 {
		return []TopicPartition{{o.Topic, o.Partition}}, nil
	}
	var td kadm.TopicDetails
	var err error
	if o.Topic != "" {
		td, err = c.Client.ListTopics(ctx, o.Topic)
	} else {
		td, err = c.Client.ListTopicsWithInternal(ctx)
	}
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("Failed to describe topics: %w", err)
	}
	var out []TopicPartition
	for _, t := range td.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			if o.BrokerID < 0 || slices.Contains(p.Replicas, o.BrokerID) {
				out = append(out, TopicPartition{t.Topic, p.Partition})
			}
		}
	}
	return out, nil
}
