package api

import (
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/network"
	"github.com/qk-project/qk/broker/replica"
)

// fetchResponse is a Fetch response whose record bytes are file regions
// rather than bytes in memory. It carries the fields of
// kmsg.FetchResponse that a broker sets; frame writes it on the wire in
// exactly the layout kmsg.FetchResponse.AppendTo would, with every
// partition's records sent from the segment file (sendfile) instead of
// being copied.
type fetchResponse struct {
	version      int16
	throttleMs   int32
	errorCode    int16
	sessionID    int32
	topics       []fetchTopic
	nodeEndpoint []fetchNodeEndpoint // v16+, tag 0: leaders named by currentLeader
}

type fetchTopic struct {
	topic      string   // v0-12
	topicID    [16]byte // v13+
	partitions []fetchPartition
}

type fetchPartition struct {
	partition        int32
	errorCode        int16
	highWatermark    int64
	lastStableOffset int64 // v4+
	logStartOffset   int64 // v5+
	// abortedTxns is nil for null (read_uncommitted), else the list (empty
	// for read_committed without aborted transactions).
	abortedTxns          []abortedTxn
	preferredReadReplica int32 // v11+
	records              log.FileRegion
	// currentLeader (v12+, tag 1) is sent when either field is not -1.
	currentLeaderID    int32
	currentLeaderEpoch int32
	// divergingEpoch (v12+, tag 0) tells a follower where its last epoch
	// ends on the leader; sent when divergingEpoch is not -1.
	divergingEpoch     int32
	divergingEndOffset int64
	// throttled: a follower fetch of a partition under the leader
	// replication quota; its records are charged to the quota once sent.
	// Not on the wire.
	throttled bool
	// countOut is the partition whose topic's BytesOut the records count
	// in (a consumer's fetch), nil otherwise. Not on the wire.
	countOut *replica.Partition
}

type abortedTxn struct {
	producerID  int64
	firstOffset int64
}

type fetchNodeEndpoint struct {
	nodeID int32
	host   string
	port   int32
	rack   *string
}

// newFetchPartition returns a partition answer with Kafka's "unknown"
// values: no offsets, no preferred replica, no leader hint.
func newFetchPartition(partition int32, errorCode int16) fetchPartition {
	return fetchPartition{
		partition:            partition,
		errorCode:            errorCode,
		highWatermark:        -1,
		lastStableOffset:     -1,
		logStartOffset:       -1,
		preferredReadReplica: -1,
		currentLeaderID:      -1,
		currentLeaderEpoch:   -1,
		divergingEpoch:       -1,
		divergingEndOffset:   -1,
	}
}

// releaseRegions releases every partition's records region (taken with
// replica.Partition.ReadForConsumer) once, and forgets them.
func (r *fetchResponse) releaseRegions() {
	for i := range r.topics {
		for j := range r.topics[i].partitions {
			p := &r.topics[i].partitions[j]
			p.records.Release()
			p.records = log.FileRegion{}
		}
	}
}

// size is the number of record bytes the response carries.
func (r *fetchResponse) recordBytes() int64 {
	var n int64
	for i := range r.topics {
		for j := range r.topics[i].partitions {
			n += r.topics[i].partitions[j].records.Length
		}
	}
	return n
}

// estimatedSize is about the size of the framed response, for the
// consumer byte-rate quota (Kafka's FetchContext.getResponseSize): the
// records plus the fixed fields, before an incremental session leaves
// out the partitions with no news.
func (r *fetchResponse) estimatedSize() int64 {
	n := int64(4 + 4 + 2 + 4 + 4) // correlation id, throttle, error, session, topics
	for i := range r.topics {
		t := &r.topics[i]
		n += int64(2+len(t.topic)) + 4 // name or id, partitions
		for j := range t.partitions {
			// partition, error, offsets, aborted, replica, records length
			n += 4 + 2 + 8 + 8 + 8 + 4 + 4 + 4 + t.partitions[j].records.Length
		}
	}
	return n
}

// frame appends the response body after header (the response header,
// already encoded) and returns the parts: runs of encoded fields as bytes,
// every non-empty records field as a file region. buf is scratch space for
// the encoded fields; the parts alias it.
func (r *fetchResponse) frame(buf, header []byte) []network.Part {
	v := r.version
	flex := v >= 12
	b := append(buf[:0], header...)
	// cuts[i] is the end, in b, of the bytes before region i.
	type cut struct {
		at     int
		region log.FileRegion
	}
	var cuts []cut

	if v >= 1 {
		b = appendInt32(b, r.throttleMs)
	}
	if v >= 7 {
		b = appendInt16(b, r.errorCode)
		b = appendInt32(b, r.sessionID)
	}
	b = appendArrayLen(b, len(r.topics), flex)
	for i := range r.topics {
		t := &r.topics[i]
		if v <= 12 {
			b = appendString(b, t.topic, flex)
		} else {
			b = append(b, t.topicID[:]...)
		}
		b = appendArrayLen(b, len(t.partitions), flex)
		for j := range t.partitions {
			p := &t.partitions[j]
			b = appendInt32(b, p.partition)
			b = appendInt16(b, p.errorCode)
			b = appendInt64(b, p.highWatermark)
			if v >= 4 {
				b = appendInt64(b, p.lastStableOffset)
			}
			if v >= 5 {
				b = appendInt64(b, p.logStartOffset)
			}
			if v >= 4 {
				if p.abortedTxns == nil {
					b = appendNullArrayLen(b, flex)
				} else {
					b = appendArrayLen(b, len(p.abortedTxns), flex)
					for _, a := range p.abortedTxns {
						b = appendInt64(b, a.producerID)
						b = appendInt64(b, a.firstOffset)
						if flex {
							b = appendEmptyTags(b)
						}
					}
				}
			}
			if v >= 11 {
				b = appendInt32(b, p.preferredReadReplica)
			}
			// Records: never null (librdkafka reads a null record set as
			// an invalid size), so an empty region is a zero length.
			b = appendBytesLen(b, int(p.records.Length), flex)
			if p.records.Length > 0 {
				cuts = append(cuts, cut{at: len(b), region: p.records})
			}
			if flex {
				diverging := p.divergingEpoch != -1
				leader := p.currentLeaderID != -1 || p.currentLeaderEpoch != -1
				switch {
				case diverging && leader:
					b = append(b, 2)
				case diverging || leader:
					b = append(b, 1) // tagged fields
				default:
					b = append(b, 0)
				}
				if diverging {
					b = append(b, 0)     // tag 0: DivergingEpoch
					b = append(b, 4+8+1) // its size
					b = appendInt32(b, p.divergingEpoch)
					b = appendInt64(b, p.divergingEndOffset)
					b = appendEmptyTags(b)
				}
				if leader {
					b = append(b, 1)     // tag 1: CurrentLeader
					b = append(b, 4+4+1) // its size
					b = appendInt32(b, p.currentLeaderID)
					b = appendInt32(b, p.currentLeaderEpoch)
					b = appendEmptyTags(b)
				}
			}
		}
		if flex {
			b = appendEmptyTags(b)
		}
	}
	if flex {
		if len(r.nodeEndpoint) > 0 && v >= 16 {
			var nb []byte
			nb = appendArrayLen(nb, len(r.nodeEndpoint), true)
			for _, e := range r.nodeEndpoint {
				nb = appendInt32(nb, e.nodeID)
				nb = appendString(nb, e.host, true)
				nb = appendInt32(nb, e.port)
				nb = appendNullableString(nb, e.rack, true)
				nb = appendEmptyTags(nb)
			}
			b = append(b, 1) // one tagged field
			b = append(b, 0) // tag 0: NodeEndpoints
			b = appendUvarint(b, uint32(len(nb)))
			b = append(b, nb...)
		} else {
			b = appendEmptyTags(b)
		}
	}

	parts := make([]network.Part, 0, 2*len(cuts)+1)
	prev := 0
	for _, c := range cuts {
		if c.at > prev {
			parts = append(parts, network.Part{Bytes: b[prev:c.at]})
		}
		parts = append(parts, network.Part{Region: network.FileRegion{
			File: c.region.File, Offset: c.region.Position, Length: c.region.Length,
		}})
		prev = c.at
	}
	if len(b) > prev {
		parts = append(parts, network.Part{Bytes: b[prev:]})
	}
	return parts
}
