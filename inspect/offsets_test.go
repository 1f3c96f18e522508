package inspect

import (
	"encoding/base64"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// enc builds classic-encoding byte strings for the offsets decoder tests.
type enc []byte

func (e enc) i16(v int16) enc { return binary.BigEndian.AppendUint16(e, uint16(v)) }
func (e enc) i32(v int32) enc { return binary.BigEndian.AppendUint32(e, uint32(v)) }
func (e enc) i64(v int64) enc { return binary.BigEndian.AppendUint64(e, uint64(v)) }
func (e enc) str(s string) enc {
	return append(e.i16(int16(len(s))), s...)
}
func (e enc) bytes(b []byte) enc { return append(e.i32(int32(len(b))), b...) }

func TestOffsetCommitRecords(t *testing.T) {
	key := enc{}.i16(1).str("g").str("t").i32(3)
	wantKey := `{"type":"1","data":{"group":"g","topic":"t","partition":3}}`
	for _, tc := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"v0", enc{}.i16(0).i64(5).str("m").i64(100), `{"version":"0","data":{"offset":5,"metadata":"m","commitTimestamp":100}}`},
		{"v1", enc{}.i16(1).i64(5).str("m").i64(100).i64(200), `{"version":"1","data":{"offset":5,"metadata":"m","commitTimestamp":100,"expireTimestamp":200}}`},
		{"v2", enc{}.i16(2).i64(5).str("").i64(100), `{"version":"2","data":{"offset":5,"metadata":"","commitTimestamp":100}}`},
		{"v3", enc{}.i16(3).i64(5).i32(-1).str("\"q\"").i64(100), `{"version":"3","data":{"offset":5,"leaderEpoch":-1,"metadata":"\"q\"","commitTimestamp":100}}`},
		{"tombstone", nil, `<DELETE>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, v, ok := formatOffsetsRecord(9, key, tc.value)
			require.True(t, ok)
			require.Equal(t, wantKey, k)
			require.Equal(t, tc.want, v)
		})
	}
	// Key version 0 is the same layout.
	k, _, _ := formatOffsetsRecord(9, enc{}.i16(0).str("g").str("t").i32(0), nil)
	require.Equal(t, `{"type":"0","data":{"group":"g","topic":"t","partition":0}}`, k)
}

func TestGroupMetadataRecords(t *testing.T) {
	key := enc{}.i16(2).str("grp")
	sub := enc{}.i16(0).i32(2).str("a").str("b").i32(-1)                      // subscription v0: topics, null userData
	asg := enc{}.i16(0).i32(1).str("a").i32(2).i32(0).i32(1).bytes([]byte{7}) // assignment v0
	member := func(e enc, v int16, s, a []byte) enc {
		e = e.str("m1")
		if v >= 3 {
			e = e.i16(-1) // null groupInstanceId
		}
		e = e.str("c1").str("/h")
		if v >= 1 {
			e = e.i32(300000)
		}
		return e.i32(10000).bytes(s).bytes(a)
	}
	v0 := member(enc{}.i16(0).str("consumer").i32(4).str("range").i16(-1).i32(1), 0, sub, asg)
	k, v, ok := formatOffsetsRecord(1, key, v0)
	require.True(t, ok)
	require.Equal(t, `{"type":"2","data":{"group":"grp"}}`, k)
	require.Equal(t, `{"version":"0","data":{"protocolType":"consumer","generation":4,"protocol":"range","leader":null,"members":[`+
		`{"memberId":"m1","clientId":"c1","clientHost":"/h","sessionTimeout":10000,`+
		`"subscription":{"topics":["a","b"],"userData":null},`+
		`"assignment":{"assignedPartitions":[{"topic":"a","partitions":[0,1]}],"userData":"Bw=="}}]}}`, v)

	// v3 with a non-consumer protocol keeps the raw bytes as base64, and so
	// does a consumer group whose assignment does not decode.
	v3 := member(enc{}.i16(3).str("connect").i32(1).i16(-1).i16(-1).i64(77).i32(1), 3, sub, asg)
	_, v, ok = formatOffsetsRecord(1, key, v3)
	require.True(t, ok)
	b64 := base64.StdEncoding.EncodeToString
	require.Equal(t, `{"version":"3","data":{"protocolType":"connect","generation":1,"protocol":null,"leader":null,"currentStateTimestamp":77,"members":[`+
		`{"memberId":"m1","groupInstanceId":null,"clientId":"c1","clientHost":"/h","rebalanceTimeout":300000,"sessionTimeout":10000,`+
		`"subscription":"`+b64(sub)+`","assignment":"`+b64(asg)+`"}]}}`, v)
	bad := member(enc{}.i16(2).str("consumer").i32(1).str("range").str("m1").i64(77).i32(1), 2, sub, asg[:5])
	_, v, ok = formatOffsetsRecord(1, key, bad)
	require.True(t, ok)
	require.Contains(t, v, `"subscription":{"topics":["a","b"],"userData":null},"assignment":"`+b64(asg[:5])+`"`)
}

func TestOffsetsDecoderErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       string
	}{
		{"null key", nil, []byte{0}, "Error at offset 9, skipping. Failed to decode message at offset 9 using offset topic decoder (message had a missing key)"},
		{"unknown type", enc{}.i16(5).str("x"), nil, "Unknown record type 5 at offset 9, skipping."},
		{"short key", enc{}.i16(1).str("g"), nil, "Error at offset 9, skipping. buffer underflow reading topic length: need 2 bytes, 0 left"},
		{"value version", enc{}.i16(2).str("g"), enc{}.i16(4), "Error at offset 9, skipping. unsupported GroupMetadataValue version 4 (qk decodes 0-3)"},
		{"null string", enc{}.i16(1).str("g").str("t").i32(0), enc{}.i16(3).i64(1).i32(0).i16(-1).i64(0), "Error at offset 9, skipping. non-nullable field metadata was serialized as null"},
		{"huge count", enc{}.i16(2).str("g"), enc{}.i16(0).str("consumer").i32(1).i16(-1).i16(-1).i32(1 << 30), "Error at offset 9, skipping. buffer underflow reading members: 1073741824 elements declared, 0 bytes left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _, ok := formatOffsetsRecord(9, tc.key, tc.value)
			require.False(t, ok)
			require.Equal(t, tc.want, k)
		})
	}
}
