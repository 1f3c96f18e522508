package channel

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func apiKey(key, lo, hi int16) kmsg.ApiVersionsResponseApiKey {
	return kmsg.ApiVersionsResponseApiKey{ApiKey: key, MinVersion: lo, MaxVersion: hi}
}

// Each connection starts with ApiVersions v3, falling back as the broker
// says, and a request goes at the highest version both sides know.
func TestVersionNegotiation(t *testing.T) {
	kmsgMax := kmsg.NewPtrMetadataRequest().MaxVersion()
	cases := []struct {
		name            string
		keys            []kmsg.ApiVersionsResponseApiKey
		apiVersionsMax  int16
		kip511          bool
		wantApiVersions []int16
		wantMetadata    int16
	}{
		{name: "broker metadata max v4",
			keys:           []kmsg.ApiVersionsResponseApiKey{apiKey(18, 0, 3), apiKey(3, 0, 4)},
			apiVersionsMax: 3, wantApiVersions: []int16{3}, wantMetadata: 4},
		{name: "broker newer than kmsg",
			keys:           []kmsg.ApiVersionsResponseApiKey{apiKey(18, 0, 3), apiKey(3, 0, kmsgMax+20)},
			apiVersionsMax: 3, wantApiVersions: []int16{3}, wantMetadata: kmsgMax},
		{name: "ApiVersions v0 only, no KIP-511 hint",
			keys:           []kmsg.ApiVersionsResponseApiKey{apiKey(18, 0, 0), apiKey(3, 0, 8)},
			apiVersionsMax: 0, wantApiVersions: []int16{3, 0}, wantMetadata: 8},
		{name: "ApiVersions up to v2, KIP-511 hint",
			keys:           []kmsg.ApiVersionsResponseApiKey{apiKey(18, 0, 2), apiKey(3, 0, 9)},
			apiVersionsMax: 2, kip511: true, wantApiVersions: []int16{3, 2}, wantMetadata: 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(t)
			srv.apiKeys, srv.apiVersionsMax, srv.kip511 = tc.keys, tc.apiVersionsMax, tc.kip511
			srv.start(nil)
			rec := &logRecorder{}
			m := newManager(t, Config{}, rec)
			m.AddBroker(1, srv.addr)

			req := metadataRequest("v")
			r := await(t, sendAsync(t, m, 1, req))
			require.NoError(t, r.err)
			require.Equal(t, tc.wantMetadata, req.GetVersion())
			require.Equal(t, tc.wantMetadata, r.resp.GetVersion())
			require.Equal(t, "v", *r.resp.(*kmsg.MetadataResponse).Topics[0].Topic)

			var gotAV []int16
			for _, q := range srv.received(18) {
				gotAV = append(gotAV, q.version)
			}
			require.Equal(t, tc.wantApiVersions, gotAV)
			md := srv.received(3)
			require.Len(t, md, 1)
			require.Equal(t, tc.wantMetadata, md[0].version)
			require.Equal(t, 1, srv.accepted(), "the fallback is on the same connection")
			require.Empty(t, rec.lines(slog.LevelWarn))
		})
	}
}

// A request whose API the broker does not serve, at any version kmsg
// knows, fails at once with an error naming the API, without a retry and
// without being sent; the connection stays up.
func TestUnsupportedAPI(t *testing.T) {
	cases := []struct {
		name string
		keys []kmsg.ApiVersionsResponseApiKey
		req  kmsg.Request
		want string
	}{
		{name: "key not served", keys: defaultAPIKeys(), req: kmsg.NewPtrLeaderAndISRRequest(),
			want: "LeaderAndISR (key 4) not served"},
		{name: "only versions newer than kmsg",
			keys: append(defaultAPIKeys(), apiKey(5, 50, 60)), req: kmsg.NewPtrStopReplicaRequest(),
			want: "StopReplica: the broker serves v50-60"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(t)
			srv.apiKeys = tc.keys
			srv.start(nil)
			rec := &logRecorder{}
			m := newManager(t, Config{}, rec)
			m.AddBroker(1, srv.addr)

			r := await(t, sendAsync(t, m, 1, tc.req))
			require.ErrorIs(t, r.err, ErrUnsupportedAPI)
			require.ErrorContains(t, r.err, tc.want)
			require.Empty(t, srv.received(tc.req.Key()), "never sent")

			r = await(t, sendAsync(t, m, 1, metadataRequest("after")))
			require.NoError(t, r.err)
			require.Equal(t, 1, srv.accepted())
			require.Empty(t, rec.lines(slog.LevelWarn))
		})
	}
}

// The controller's own requests go through at the broker's versions
// (flexible and not), and the server decodes what was sent.
func TestControllerRequests(t *testing.T) {
	kmsgLAI := kmsg.NewPtrLeaderAndISRRequest().MaxVersion()
	kmsgUM := kmsg.NewPtrUpdateMetadataRequest().MaxVersion()
	kmsgSR := kmsg.NewPtrStopReplicaRequest().MaxVersion()
	for _, tc := range []struct {
		name string
		max  int16 // served by the broker, for every key
	}{
		{"old broker", 1},
		{"new broker", max(kmsgLAI, kmsgUM, kmsgSR)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(t)
			srv.apiKeys = append(defaultAPIKeys(), apiKey(4, 0, tc.max), apiKey(6, 0, tc.max), apiKey(5, 0, tc.max))
			srv.hook = func(sc *srvConn, r *srvReq) bool {
				switch r.key {
				case 4, 5, 6:
					sc.respond(r, r.req.ResponseKind())
					return true
				}
				return false
			}
			srv.start(nil)
			m := newManager(t, Config{ControllerID: 9}, nil)
			m.AddBroker(2, srv.addr)

			lai := kmsg.NewPtrLeaderAndISRRequest()
			lai.ControllerID, lai.ControllerEpoch = 9, 3
			um := kmsg.NewPtrUpdateMetadataRequest()
			um.ControllerID, um.ControllerEpoch = 9, 3
			sr := kmsg.NewPtrStopReplicaRequest()
			sr.ControllerID, sr.ControllerEpoch = 9, 3
			chans := []<-chan result{sendAsync(t, m, 2, lai), sendAsync(t, m, 2, um), sendAsync(t, m, 2, sr)}
			wantVersions := []int16{min(tc.max, kmsgLAI), min(tc.max, kmsgUM), min(tc.max, kmsgSR)}
			for i, ch := range chans {
				r := await(t, ch)
				require.NoError(t, r.err, "request %d", i)
				require.Equal(t, wantVersions[i], r.resp.GetVersion())
			}
			got := srv.received(-1)
			require.Len(t, got, 4)                 // ApiVersions, then the three
			for i, key := range []int16{4, 6, 5} { // LeaderAndIsr, UpdateMetadata, StopReplica
				q := got[i+1]
				require.Equal(t, key, q.key)
				require.Equal(t, wantVersions[i], q.version)
				require.Equal(t, "qk-controller-9", q.clientID)
			}
			require.Equal(t, int32(3), got[1].req.(*kmsg.LeaderAndISRRequest).ControllerEpoch)
			require.Equal(t, int32(9), got[2].req.(*kmsg.UpdateMetadataRequest).ControllerID)
			require.Equal(t, int32(3), got[3].req.(*kmsg.StopReplicaRequest).ControllerEpoch)
		})
	}
}
