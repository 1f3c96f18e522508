package api

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/record"
)

// openTestLog returns a log in a temp dir holding n batches of 3 records.
func openTestLog(t *testing.T, topic string, n int) *log.Log {
	t.Helper()
	l, err := log.Open(filepath.Join(t.TempDir(), topic+"-0"), log.DefaultConfig())
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	for i := range n {
		b := record.NewBuilder(record.DefaultBatchOptions())
		for j := range 3 {
			b.Append(int64(1000+i*10+j), []byte(fmt.Sprintf("k%d-%d", i, j)), []byte(fmt.Sprintf("value %d-%d", i, j)),
				[]record.Header{{Key: "h", Value: []byte{byte(j)}}})
		}
		batch, err := b.Build()
		require.NoError(t, err)
		_, err = l.Append(batch, 7)
		require.NoError(t, err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	return l
}

// readRegion returns the bytes of a file region.
func readRegion(t *testing.T, r network.FileRegion) []byte {
	t.Helper()
	b := make([]byte, r.Length)
	_, err := r.File.ReadAt(b, r.Offset)
	require.NoError(t, err)
	return b
}

// flatten concatenates the parts as the network layer would send them.
func flatten(t *testing.T, parts []network.Part) []byte {
	t.Helper()
	var out []byte
	for _, p := range parts {
		if p.Region.File != nil {
			out = append(out, readRegion(t, p.Region)...)
		} else {
			out = append(out, p.Bytes...)
		}
	}
	return out
}

// toKmsg builds the kmsg form of r, records read from the files.
func toKmsg(t *testing.T, r *fetchResponse) *kmsg.FetchResponse {
	t.Helper()
	k := kmsg.NewPtrFetchResponse()
	k.Version = r.version
	k.ThrottleMillis = r.throttleMs
	k.ErrorCode = r.errorCode
	k.SessionID = r.sessionID
	for _, ft := range r.topics {
		kt := kmsg.NewFetchResponseTopic()
		kt.Topic, kt.TopicID = ft.topic, ft.topicID
		for _, fp := range ft.partitions {
			kp := kmsg.NewFetchResponseTopicPartition()
			kp.Partition = fp.partition
			kp.ErrorCode = fp.errorCode
			kp.HighWatermark = fp.highWatermark
			kp.LastStableOffset = fp.lastStableOffset
			kp.LogStartOffset = fp.logStartOffset
			if fp.abortedTxns != nil {
				kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				for _, a := range fp.abortedTxns {
					ka := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					ka.ProducerID, ka.FirstOffset = a.producerID, a.firstOffset
					kp.AbortedTransactions = append(kp.AbortedTransactions, ka)
				}
			}
			kp.PreferredReadReplica = fp.preferredReadReplica
			kp.RecordBatches = []byte{}
			if fp.records.Length > 0 {
				kp.RecordBatches = readRegion(t, network.FileRegion{File: fp.records.File, Offset: fp.records.Position, Length: fp.records.Length})
			}
			kp.CurrentLeader.LeaderID = fp.currentLeaderID
			kp.CurrentLeader.LeaderEpoch = fp.currentLeaderEpoch
			kp.DivergingEpoch.Epoch = fp.divergingEpoch
			kp.DivergingEpoch.EndOffset = fp.divergingEndOffset
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	for _, e := range r.nodeEndpoint {
		kb := kmsg.NewFetchResponseBroker()
		kb.NodeID, kb.Host, kb.Port, kb.Rack = e.nodeID, e.host, e.port, e.rack
		k.Brokers = append(k.Brokers, kb)
	}
	return k
}

// TestFetchFrameMatchesKmsg frames responses by hand for every Fetch
// version qk serves and checks that the bytes equal what kmsg encodes, and
// that kmsg decodes them into the same struct.
func TestFetchFrameMatchesKmsg(t *testing.T) {
	orders := openTestLog(t, "orders", 5)
	audit := openTestLog(t, "audit", 2)
	whole, err := orders.Read(0, 1<<20, -1)
	require.NoError(t, err)
	require.Positive(t, whole.Region.Length)
	mid, err := orders.Read(6, 1<<20, -1) // from the third batch
	require.NoError(t, err)
	cut, err := audit.Read(0, 1, -1) // the first batch whole despite maxBytes 1
	require.NoError(t, err)
	rack := "rack-a"

	build := func(version int16) *fetchResponse {
		r := &fetchResponse{version: version, throttleMs: 12, sessionID: 0}
		p0 := newFetchPartition(0, 0)
		p0.highWatermark, p0.lastStableOffset, p0.logStartOffset = 15, 15, 0
		p0.records = whole.Region
		p1 := newFetchPartition(1, 0)
		p1.highWatermark, p1.lastStableOffset, p1.logStartOffset = 15, 15, 3
		p1.records = mid.Region
		p1.abortedTxns = []abortedTxn{}
		p2 := newFetchPartition(2, 1) // OFFSET_OUT_OF_RANGE, no records
		p3 := newFetchPartition(3, 6) // NOT_LEADER_OR_FOLLOWER with a hint
		p3.currentLeaderID, p3.currentLeaderEpoch = 2, 9
		p4 := newFetchPartition(4, 0) // a follower told where its epoch diverges
		p4.highWatermark, p4.lastStableOffset, p4.logStartOffset = 15, 15, 0
		p4.divergingEpoch, p4.divergingEndOffset = 3, 11
		p5 := newFetchPartition(5, 0) // both tags
		p5.divergingEpoch, p5.divergingEndOffset = 1, 2
		p5.currentLeaderID, p5.currentLeaderEpoch = 0, 4
		a0 := newFetchPartition(0, 0)
		a0.highWatermark, a0.lastStableOffset, a0.logStartOffset = 6, 6, 0
		a0.records = cut.Region
		a0.abortedTxns = []abortedTxn{{producerID: 4, firstOffset: 1}}
		r.topics = []fetchTopic{
			{topic: "orders", topicID: [16]byte{1, 2, 3}, partitions: []fetchPartition{p0, p1, p2, p3, p4, p5}},
			{topic: "audit", topicID: [16]byte{9}, partitions: []fetchPartition{a0}},
			{topic: "empty", topicID: [16]byte{7}},
		}
		if version >= 16 {
			r.nodeEndpoint = []fetchNodeEndpoint{{nodeID: 2, host: "h2", port: 9093, rack: &rack}}
		}
		return r
	}

	for v := int16(4); v <= (&kmsg.FetchRequest{}).MaxVersion(); v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			r := build(v)
			header := []byte{0, 0, 0, 42}
			parts := r.frame(nil, header)
			var regions int
			for _, p := range parts {
				if p.Region.File != nil {
					regions++
				}
			}
			require.Equal(t, 3, regions, "every non-empty records field is a file region")

			got := flatten(t, parts)
			require.Equal(t, header, got[:len(header)])
			body := got[len(header):]

			want := toKmsg(t, r)
			wantBytes := want.AppendTo(nil)
			require.True(t, bytes.Equal(wantBytes, body), "hand-framed body differs from kmsg's encoding\nwant %x\ngot  %x", wantBytes, body)

			var dec kmsg.FetchResponse
			dec.Version = v
			require.NoError(t, dec.ReadFrom(body))
			var ref kmsg.FetchResponse
			ref.Version = v
			require.NoError(t, ref.ReadFrom(wantBytes))
			require.Equal(t, ref, dec)
			require.Equal(t, whole.Region.Length, int64(len(dec.Topics[0].Partitions[0].RecordBatches)))
		})
	}
}
