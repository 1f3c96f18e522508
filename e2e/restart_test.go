//go:build integration

package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRestartKeepsTopicsConfigsAndData stops a broker with SIGTERM and
// starts a new process on the same directory: topics, their partition
// counts and per-topic configs (kept in the metadata store), and records
// with keys, headers and timestamps (kept in the logs, across several
// segments) must all come back, and an idempotent producer that lived
// through the restart appends at the old end.
func TestRestartKeepsTopicsConfigsAndData(t *testing.T) {
	const (
		topic      = "restart"
		partitions = 2
		n          = 3_000
	)
	configs := map[string]string{
		"cleanup.policy":         "delete",
		"retention.ms":           "604800001",
		"retention.bytes":        "1073741824",
		"segment.bytes":          "1048576", // ~1.5 MB per partition below: at least two segments
		"segment.ms":             "3600000",
		"max.message.bytes":      "2097152",
		"min.insync.replicas":    "1",
		"message.timestamp.type": "CreateTime",
	}
	b := startBroker(t)
	adm := b.admin()
	ptrs := make(map[string]*string)
	for k, v := range configs {
		ptrs[k] = kadm.StringPtr(v)
	}
	createTopic(t, adm, topic, partitions, ptrs)
	requireTopicConfigs(t, adm, topic, configs)

	base := time.Now().Truncate(time.Millisecond).Add(-time.Hour)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{
			Partition: int32(i % partitions),
			Key:       fmt.Appendf(nil, "key-%d", i),
			Value:     append(fmt.Appendf(nil, "value-%d-", i), bytes.Repeat([]byte{byte('a' + i%26)}, 1000)...),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}, {Key: "empty"}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		})
	}
	// The default franz-go producer: idempotent, acks=all.
	cl := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err := cl.ProduceSync(ctxFor(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	ends := endOffsets(t, adm, topic)

	b.stop()
	b.restart()
	adm = b.admin()
	waitTopicReady(t, adm, topic, partitions)

	requireTopicConfigs(t, adm, topic, configs)
	if got := endOffsets(t, adm, topic); !maps.Equal(got, ends) {
		t.Fatalf("end offsets after restart %v, before %v", got, ends)
	}

	got := consumeAll(t, b.addr, topic, ends, time.Minute)
	for p := range int32(partitions) {
		var want []*kgo.Record
		for _, r := range recs {
			if r.Partition == p {
				want = append(want, r)
			}
		}
		if len(got[p]) != len(want) {
			t.Fatalf("partition %d: %d records after restart, want %d", p, len(got[p]), len(want))
		}
		for i, g := range got[p] {
			w := want[i]
			if g.Offset != int64(i) || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) ||
				!g.Timestamp.Equal(w.Timestamp) || !sameHeaders(g.Headers, w.Headers) {
				t.Fatalf("partition %d offset %d after restart: key %q ts %v headers %v, want offset %d key %q ts %v headers %v (or value differs)",
					p, g.Offset, g.Key, g.Timestamp, g.Headers, i, w.Key, w.Timestamp, w.Headers)
			}
		}
	}

	// The producer outlives the broker process: it reconnects and its
	// next appends, with the same producer id and the next sequence
	// numbers, continue where the logs ended, once each.
	res := cl.ProduceSync(ctxFor(t, 30*time.Second),
		&kgo.Record{Partition: 0, Value: []byte("after restart 0")},
		&kgo.Record{Partition: 1, Value: []byte("after restart 1")})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	for _, r := range res {
		if r.Record.Offset != ends[r.Record.Partition] {
			t.Errorf("first record after restart in partition %d at offset %d, want %d", r.Record.Partition, r.Record.Offset, ends[r.Record.Partition])
		}
	}
	after := endOffsets(t, adm, topic)
	for p, end := range ends {
		if after[p] != end+1 {
			t.Errorf("partition %d ends at %d after one more record, want %d", p, after[p], end+1)
		}
	}
}

// requireTopicConfigs requires that DescribeConfigs returns each of want
// with its value, as a dynamic topic config (set for this topic).
func requireTopicConfigs(t *testing.T, adm *kadm.Client, topic string, want map[string]string) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	got := make(map[string]kadm.Config)
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		c, ok := got[k]
		if !ok {
			t.Errorf("config %s missing from DescribeConfigs", k)
			continue
		}
		if c.MaybeValue() != want[k] || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("config %s = %q (source %v), want %q (source %v)", k, c.MaybeValue(), c.Source, want[k], kmsg.ConfigSourceDynamicTopicConfig)
		}
	}
}

// sameHeaders compares headers by key and value; an empty value and a
// missing one are the same on the wire's consumer side for our purpose.
func sameHeaders(a, b []kgo.RecordHeader) bool {
	return slices.EqualFunc(a, b, func(x, y kgo.RecordHeader) bool {
		return x.Key == y.Key && bytes.Equal(x.Value, y.Value)
	})
}
