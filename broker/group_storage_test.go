//go:build linux

package broker_test

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRecord is one record of a segment, decoded by hand.
type rawRecord struct {
	key, value []byte // value nil: tombstone
}

// readSegmentRecords decodes an uncompressed v2 segment with plain
// encoding/binary, independently of broker/record.
func readSegmentRecords(t *testing.T, path string) []rawRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []rawRecord
	for len(data) >= 61 {
		batchLen := int(binary.BigEndian.Uint32(data[8:12]))
		batch := data[:12+batchLen]
		data = data[12+batchLen:]
		require.Equal(t, byte(2), batch[16], "magic")
		crc := binary.BigEndian.Uint32(batch[17:21])
		require.Equal(t, crc, crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)), "crc")
		attrs := binary.BigEndian.Uint16(batch[21:23])
		require.Zero(t, attrs&7, "uncompressed")
		n := int(binary.BigEndian.Uint32(batch[57:61]))
		p := batch[61:]
		for range n {
			l, k := binary.Varint(p)
			rec := p[k : k+int(l)]
			p = p[k+int(l):]
			rec = rec[1:]             // attributes
			_, k = binary.Varint(rec) // timestamp delta
			rec = rec[k:]
			_, k = binary.Varint(rec) // offset delta
			rec = rec[k:]
			kl, k := binary.Varint(rec)
			rec = rec[k:]
			var r rawRecord
			if kl >= 0 {
				r.key, rec = rec[:kl], rec[kl:]
			}
			vl, k := binary.Varint(rec)
			rec = rec[k:]
			if vl >= 0 {
				r.value = rec[:vl]
			}
			out = append(out, r)
		}
	}
	return out
}

type beReader struct{ b []byte }

func (r *beReader) i16() int16 { v := int16(binary.BigEndian.Uint16(r.b)); r.b = r.b[2:]; return v }
func (r *beReader) i32() int32 { v := int32(binary.BigEndian.Uint32(r.b)); r.b = r.b[4:]; return v }
func (r *beReader) i64() int64 { v := int64(binary.BigEndian.Uint64(r.b)); r.b = r.b[8:]; return v }
func (r *beReader) str() string {
	n := r.i16()
	if n < 0 {
		return "<null>"
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
func (r *beReader) bytes() []byte { n := r.i32(); v := r.b[:n]; r.b = r.b[n:]; return v }

// TestGroupOffsetsOnDisk commits through a real consumer group and reads
// __consumer_offsets' segment from disk with a decoder written here from
// the reference's schemas (key v1 + value v3 offsets, key v2 + value v3
// group metadata).
func TestGroupOffsetsOnDisk(t *testing.T) {
	b := groupBroker(t)
	addrs := []string{b.Addr}
	createTopic(t, newAdmin(t, b.Addr), "disk", 2, nil)
	produceN(t, addrs, "disk", "v", 10)
	cl := newGroupConsumer(t, addrs, "simple-consumer-example", "disk")
	pollValues(t, cl, 10)
	require.NoError(t, cl.CommitUncommittedOffsets(testCtx(t)))
	cl.Close()

	seg := filepath.Join(b.Dir, "__consumer_offsets-16", "00000000000000000000.log") // partition 16 per §7
	offsets := map[int32]int64{}
	var groupRecords, members int
	for _, r := range readSegmentRecords(t, seg) {
		k := &beReader{b: r.key}
		switch k.i16() {
		case 1:
			require.Equal(t, "simple-consumer-example", k.str())
			require.Equal(t, "disk", k.str())
			p := k.i32()
			require.Empty(t, k.b)
			if r.value == nil {
				continue
			}
			v := &beReader{b: r.value}
			require.Equal(t, int16(3), v.i16())
			offsets[p] = v.i64()
			v.i32() // leader epoch
			v.str() // metadata
			require.Positive(t, v.i64(), "commit timestamp")
			require.Empty(t, v.b)
		case 2:
			require.Equal(t, "simple-consumer-example", k.str())
			require.Empty(t, k.b)
			if r.value == nil {
				continue
			}
			groupRecords++
			v := &beReader{b: r.value}
			require.Equal(t, int16(3), v.i16())
			require.Equal(t, "consumer", v.str())
			require.Positive(t, v.i32(), "generation")
			v.str()
			v.str()
			v.i64()
			n := v.i32()
			for range n {
				v.str() // member id
				v.str() // instance id
				v.str() // client id
				require.Equal(t, "/127.0.0.1", v.str())
				require.Positive(t, v.i32())
				require.Positive(t, v.i32())
				v.bytes()
				v.bytes()
			}
			members = max(members, int(n))
			require.Empty(t, v.b)
		default:
			t.Fatalf("unexpected key version in %x", r.key)
		}
	}
	require.Equal(t, map[int32]int64{0: 5, 1: 5}, offsets)
	require.Positive(t, groupRecords)
	require.Equal(t, 1, members)
}

// TestGroupAdminAndErrors covers List/Describe/Delete/OffsetDelete via
// kadm and the fencing errors via raw requests.
func TestGroupAdminAndErrors(t *testing.T) {
	b := groupBroker(t)
	addrs := []string{b.Addr}
	adm := newAdmin(t, b.Addr)
	ctx := testCtx(t)
	createTopic(t, adm, "adm", 2, nil)
	createTopic(t, adm, "other", 1, nil)
	produceN(t, addrs, "adm", "v", 4)

	// A simple (assign-mode) commit: generation -1, no member id.
	resp, err := adm.CommitOffsets(ctx, "simple", kadm.OffsetsFromRecords(kgo.Record{Topic: "other", Partition: 0, Offset: 6}))
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	cl := newGroupConsumer(t, addrs, "active", "adm")
	defer cl.Close()
	pollValues(t, cl, 4)
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))

	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"active", "simple"}, listed.Groups())
	stable, err := adm.ListGroups(ctx, "Stable")
	require.NoError(t, err)
	require.Equal(t, []string{"active"}, stable.Groups())

	dg, err := adm.DescribeGroups(ctx, "active", "missing")
	require.NoError(t, err)
	require.Equal(t, "Stable", dg["active"].State)
	require.Len(t, dg["active"].Members, 1)
	require.Equal(t, "Dead", dg["missing"].State)

	fo, err := adm.FetchOffsets(ctx, "active")
	require.NoError(t, err)
	require.Equal(t, int64(2), fo["adm"][0].At+fo["adm"][1].At-2)
	fo, err = adm.FetchOffsets(ctx, "simple")
	require.NoError(t, err)
	require.Equal(t, int64(7), fo["other"][0].At) // OffsetsFromRecords commits offset+1

	// NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, GROUP_SUBSCRIBED_TO_TOPIC.
	del, err := adm.DeleteGroups(ctx, "active", "missing")
	require.NoError(t, err)
	require.ErrorIs(t, del["active"].Err, kerr.NonEmptyGroup)
	require.ErrorIs(t, del["missing"].Err, kerr.GroupIDNotFound)
	od, err := adm.DeleteOffsets(ctx, "active", kadm.TopicsSet{"adm": {0: {}}})
	require.NoError(t, err)
	require.ErrorIs(t, od["adm"][0], kerr.GroupSubscribedToTopic)

	// Fencing through raw requests against the active member.
	memberID, gen := cl.GroupMetadata()
	hb := func(member string, generation int32, instance *string) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation, req.InstanceID = "active", member, generation, instance
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.ErrorCode
	}
	require.Equal(t, int16(0), hb(memberID, gen, nil))
	require.Equal(t, kerr.IllegalGeneration.Code, hb(memberID, gen+5, nil))
	require.Equal(t, kerr.UnknownMemberID.Code, hb("nobody", gen, nil))
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "fresh", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
	jr, err := join.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, kerr.MemberIDRequired.Code, jr.ErrorCode)
	require.NotEmpty(t, jr.MemberID)

	// Simple groups can be deleted, and their offsets go with them.
	cl.Close()
	waitFor(t, 10*time.Second, "the active group to be empty", func() bool {
		dg, err := adm.DescribeGroups(ctx, "active")
		return err == nil && dg["active"].State == "Empty"
	})
	del, err = adm.DeleteGroups(ctx, "active", "simple")
	require.NoError(t, err)
	require.NoError(t, del["active"].Err)
	require.NoError(t, del["simple"].Err)
	fo, err = adm.FetchOffsets(ctx, "simple")
	require.NoError(t, err)
	require.Empty(t, fo)
}
