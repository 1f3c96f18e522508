//go:build linux

package broker_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/record"
)

// TestHostileInput sends what no client should: each case must get the
// right error or a closed connection, while a connection opened before
// keeps working and no acknowledged record is lost.
func TestHostileInput(t *testing.T) {
	b := brokertest.StartBroker(t)
	adm := newAdmin(t, b.Addr)
	createTopic(t, adm, "safe", 1, nil)
	prod := newClient(t, []string{b.Addr}, kgo.DefaultProduceTopic("safe"))
	for i := range 5 {
		require.NoError(t, prod.ProduceSync(testCtx(t), &kgo.Record{Value: []byte{byte(i)}}).FirstErr())
	}
	healthy := dialRaw(t, b.Addr)
	apiVersionsOK := func(c *rawConn) {
		t.Helper()
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		resp := kmsg.NewPtrApiVersionsResponse()
		c.roundTrip(req, resp)
		require.Equal(t, int16(0), resp.ErrorCode)
	}
	apiVersionsOK(healthy)

	frame := func(key, version int16, body []byte) []byte {
		h := binary.BigEndian.AppendUint16(nil, uint16(key))
		h = binary.BigEndian.AppendUint16(h, uint16(version))
		h = binary.BigEndian.AppendUint32(h, 1)
		h = binary.BigEndian.AppendUint16(h, 0xffff) // null client id
		return append(h, body...)
	}
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 8
	metadata.Topics = []kmsg.MetadataRequestTopic{{Topic: ptr("safe")}}
	full := dialRaw(t, b.Addr).request(metadata)

	for _, tc := range []struct {
		name string
		send func(c *rawConn)
	}{
		{"http request", func(c *rawConn) { c.c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) }},
		{"garbage frame", func(c *rawConn) { c.writeFrame([]byte{0xde, 0xad, 0xbe, 0xef, 0xfe, 0xed, 0xfa, 0xce, 1, 2, 3, 4, 5}) }},
		{"over-size frame", func(c *rawConn) { c.c.Write(binary.BigEndian.AppendUint32(nil, 100*1024*1024+1)) }},
		{"negative size", func(c *rawConn) { c.c.Write([]byte{0xff, 0xff, 0xff, 0xfb}) }},
		{"short header", func(c *rawConn) { c.writeFrame([]byte{0, 3, 0}) }},
		{"truncated request", func(c *rawConn) { c.writeFrame(full[:len(full)-3]) }},
		{"unknown api key", func(c *rawConn) { c.writeFrame(frame(9999, 0, nil)) }},
		{"api qk does not serve", func(c *rawConn) { c.writeFrame(frame(26, 0, []byte{0, 1, 't'})) }}, // EndTxn
		{"unsupported version", func(c *rawConn) { c.writeFrame(frame(3, 99, nil)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr)
			tc.send(c)
			require.True(t, c.closed(), "connection left open")
			apiVersionsOK(healthy)
		})
	}

	t.Run("ApiVersions from the future", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		c.writeFrame(frame(18, 99, []byte{1, 2, 3}))
		body, err := c.readFrame()
		require.NoError(t, err)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		require.NoError(t, resp.ReadFrom(body[4:]))
		require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
		require.NotEmpty(t, resp.ApiKeys, "the key list, so the client can retry")
	})

	t.Run("bad batches", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		good := idempotentBatch(t, -1, -1, 3)
		badCRC := append([]byte(nil), good...)
		badCRC[len(badCRC)-1] ^= 0xff
		magic1 := append([]byte(nil), good...)
		magic1[record.MagicOffset] = 1
		badSize := append([]byte(nil), good...)
		binary.BigEndian.PutUint32(badSize[record.BatchLengthOffset:], 3)
		for _, tc := range []struct {
			name  string
			batch []byte
			want  int16
		}{
			{"bad crc", badCRC, kerr.CorruptMessage.Code},
			{"magic 1", magic1, kerr.InvalidRecord.Code},
			{"two batches", append(append([]byte(nil), good...), good...), kerr.InvalidRecord.Code},
			{"empty", []byte{}, kerr.InvalidRecord.Code},
			{"size below the minimum", badSize, kerr.CorruptMessage.Code},
			{"truncated batch", good[:len(good)-5], kerr.CorruptMessage.Code},
		} {
			p := rawProduce(t, c, "safe", tc.batch)
			require.Equal(t, tc.want, p.ErrorCode, "%s: %v", tc.name, kerr.ErrorForCode(p.ErrorCode))
		}
		apiVersionsOK(c) // errors in a response do not close the connection
	})

	// Found by FuzzAdminRequest: a count is refused before its
	// assignment is built, which took the controller's lock and all the
	// memory.
	t.Run("huge partition counts", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		for _, validateOnly := range []bool{true, false} {
			cp := kmsg.NewPtrCreatePartitionsRequest()
			cp.Version, cp.TimeoutMillis, cp.ValidateOnly = 3, 5000, validateOnly
			cpt := kmsg.NewCreatePartitionsRequestTopic()
			cpt.Topic, cpt.Count = "safe", math.MaxInt32
			cp.Topics = append(cp.Topics, cpt)
			cpResp := kmsg.NewPtrCreatePartitionsResponse()
			c.roundTrip(cp, cpResp)
			require.Equal(t, kerr.InvalidPartitions.Code, cpResp.Topics[0].ErrorCode)

			ct := kmsg.NewPtrCreateTopicsRequest()
			ct.Version, ct.TimeoutMillis, ct.ValidateOnly = 7, 5000, validateOnly
			ctt := kmsg.NewCreateTopicsRequestTopic()
			ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "huge", math.MaxInt32, 1
			ct.Topics = append(ct.Topics, ctt)
			ctResp := kmsg.NewPtrCreateTopicsResponse()
			c.roundTrip(ct, ctResp)
			require.Equal(t, kerr.InvalidPartitions.Code, ctResp.Topics[0].ErrorCode)
		}
	})

	got := consume(t, []string{b.Addr}, "safe", 5)
	require.Len(t, got, 5)
	for i, r := range got {
		require.Equal(t, []byte{byte(i)}, r.Value)
	}
	end, err := adm.ListEndOffsets(testCtx(t), "safe")
	require.NoError(t, err)
	o, _ := end.Lookup("safe", 0)
	require.Equal(t, int64(5), o.Offset, "no bad batch was stored")
	require.NoError(t, prod.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("after")}).FirstErr())
}
