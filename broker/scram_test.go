//go:build linux

package broker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/security/scram"
)

// saltedUpsert is an upsertion with a fixed salt, so the stored
// credential is known in advance.
func saltedUpsert(t *testing.T, user string, m scram.Mechanism, password string, iterations int32) (kadm.UpsertSCRAM, scram.Credential) {
	t.Helper()
	salt := []byte("0123456789abcdef" + user)
	sp, err := m.SaltedPassword(password, salt, int(iterations))
	require.NoError(t, err)
	return kadm.UpsertSCRAM{User: user, Mechanism: kadm.ScramMechanism(m), Iterations: iterations, Salt: salt, SaltedPassword: sp},
		m.FromSaltedPassword(salt, sp, int(iterations))
}

func alterScramRaw(t *testing.T, cl *kgo.Client, req *kmsg.AlterUserSCRAMCredentialsRequest) map[string]int16 {
	t.Helper()
	resp, err := req.RequestWith(testCtx(t), cl)
	require.NoError(t, err)
	out := map[string]int16{}
	for _, r := range resp.Results {
		out[r.User] = r.ErrorCode
	}
	return out
}

func upsertion(user string, m int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = user, m, iterations
	u.Salt, u.SaltedPassword = []byte("salt"), make([]byte, 32)
	return u
}

func deletion(user string, m int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, m
	return d
}

func TestScramCredentials(t *testing.T) {
	b := brokertest.StartBroker(t)
	cl := newClient(t, []string{b.Addr})
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)

	u256, c256 := saltedUpsert(t, "alice", scram.SHA256, "alice-secret", 8192)
	u512, c512 := saltedUpsert(t, "alice", scram.SHA512, "alice-secret", 4096)
	ub, _ := saltedUpsert(t, "bob", scram.SHA512, "bob-secret", 16384)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{u256, u512, ub})
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	require.Len(t, altered, 2)

	// The broker's own cache has them once the answer came.
	snap := b.Cache().Snapshot()
	got, ok := snap.ScramCredential("alice", scram.SHA256)
	require.True(t, ok)
	require.Equal(t, c256, got)
	got, ok = snap.ScramCredential("alice", scram.SHA512)
	require.True(t, ok)
	require.Equal(t, c512, got)
	require.Equal(t, []string{"alice", "bob"}, snap.ScramUsers())

	described, err := adm.DescribeUserSCRAMs(ctx)
	require.NoError(t, err)
	require.NoError(t, described.Error())
	require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha256, Iterations: 8192}, {Mechanism: kadm.ScramSha512, Iterations: 4096}},
		described["alice"].CredInfos)
	require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha512, Iterations: 16384}}, described["bob"].CredInfos)

	// Describe errors, and never a secret on the wire.
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"alice", "nobody", "", "bob", "bob"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	dresp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	codes := map[string]int16{}
	var users []string
	for _, r := range dresp.Results {
		codes[r.User] = r.ErrorCode
		users = append(users, r.User)
	}
	require.Equal(t, []string{"alice", "nobody", "", "bob"}, users, "each user once, in request order")
	require.Equal(t, map[string]int16{"alice": 0, "nobody": kerr.ResourceNotFound.Code, "": kerr.ResourceNotFound.Code,
		"bob": kerr.DuplicateResource.Code}, codes)

	// Alter errors, each failing only its own user.
	twice := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	twice.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsertion("", 1, 4096),
		upsertion("mech", 3, 4096),
		upsertion("few", 1, 4095),
		upsertion("many", 2, 16385),
		upsertion("dup", 1, 4096),
		upsertion("ok", 1, 4096),
	}
	twice.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		deletion("dup", 1),
		deletion("bob", 1), // bob has only SCRAM-SHA-512
		deletion("delmech", 0),
	}
	require.Equal(t, map[string]int16{
		"":        kerr.UnacceptableCredential.Code,
		"mech":    kerr.UnsupportedSaslMechanism.Code,
		"few":     kerr.UnacceptableCredential.Code,
		"many":    kerr.UnacceptableCredential.Code,
		"dup":     kerr.DuplicateResource.Code,
		"ok":      0,
		"bob":     kerr.ResourceNotFound.Code,
		"delmech": kerr.UnsupportedSaslMechanism.Code,
	}, alterScramRaw(t, cl, twice))
	described, err = adm.DescribeUserSCRAMs(ctx, "few", "dup", "bob", "ok")
	require.NoError(t, err)
	require.ErrorIs(t, described["few"].Err, kerr.ResourceNotFound)
	require.ErrorIs(t, described["dup"].Err, kerr.ResourceNotFound)
	require.Len(t, described["bob"].CredInfos, 1, "a failed deletion changes nothing")
	require.NoError(t, described["ok"].Err)

	// Delete one of alice's two, then the other.
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil)
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	described, err = adm.DescribeUserSCRAMs(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha512, Iterations: 4096}}, described["alice"].CredInfos)
	_, ok = b.Cache().Snapshot().ScramCredential("alice", scram.SHA256)
	require.False(t, ok)
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil)
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	described, err = adm.DescribeUserSCRAMs(ctx, "alice")
	require.NoError(t, err)
	require.ErrorIs(t, described["alice"].Err, kerr.ResourceNotFound)
	require.NotContains(t, b.Cache().Snapshot().ScramUsers(), "alice")

	// Credentials survive a restart (the embedded store is on disk).
	b.Restart()
	waitFor(t, 10*time.Second, "bob's credential after restart", func() bool {
		_, ok := b.Cache().Snapshot().ScramCredential("bob", scram.SHA512)
		return ok
	})
}

// TestScramCredentialsCluster: the controller stores the credential in
// Kafka's node format, announces it in /config/changes, and every
// broker's cache has it; other brokers refuse the alter with
// NOT_CONTROLLER.
func TestScramCredentialsCluster(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	cl := newClient(t, c.Addrs())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)

	const user = "alice@example.com"
	up, cred := saltedUpsert(t, user, scram.SHA256, "alice-secret", 8192)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{up})
	require.NoError(t, err)
	require.NoError(t, altered.Error())

	const entity = "alice%40example.com"
	data, _, err := c.Store.Get(ctx, "/config/users/"+entity)
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"config":{"SCRAM-SHA-256":"`+cred.String()+`"}}`, string(data))
	require.Regexp(t, `^salt=[A-Za-z0-9+/=]+,stored_key=[A-Za-z0-9+/=]{44},server_key=[A-Za-z0-9+/=]{44},iterations=8192$`, cred.String())

	changes, _, err := c.Store.Children(ctx, metadata.ConfigChangesPath)
	require.NoError(t, err)
	announced := false
	for _, ch := range changes {
		d, _, err := c.Store.Get(ctx, metadata.ConfigChangesPath+"/"+ch)
		require.NoError(t, err)
		if p, err := metadata.UnmarshalConfigChange(d); err == nil && p == "users/"+entity {
			announced = true
		}
	}
	require.True(t, announced, "a /config/changes notification for users/%s", entity)

	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the credential in "+b.String()+"'s cache", func() bool {
			got, ok := b.Cache().Snapshot().ScramCredential(user, scram.SHA256)
			return ok && got.String() == cred.String()
		})
	}

	// Describe is served by any broker.
	for _, b := range c.Brokers {
		described, err := kadm.NewClient(newClient(t, []string{b.Addr})).DescribeUserSCRAMs(ctx, user)
		require.NoError(t, err)
		require.Equal(t, []kadm.CredInfo{{Mechanism: kadm.ScramSha256, Iterations: 8192}}, described[user].CredInfos, b.String())
	}

	ctrl := c.Brokers[0].Cache().Snapshot().ControllerID
	for _, b := range c.Brokers {
		if b.ID == ctrl {
			continue
		}
		rc := dialRaw(t, b.Addr)
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions = append(req.Deletions, deletion(user, 1))
		resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
		rc.roundTrip(req, resp)
		require.Len(t, resp.Results, 1)
		require.Equal(t, kerr.NotController.Code, resp.Results[0].ErrorCode, b.String())
	}

	// A deletion through the controller reaches every cache.
	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: kadm.ScramSha256}}, nil)
	require.NoError(t, err)
	require.NoError(t, altered.Error())
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "the deletion in "+b.String()+"'s cache", func() bool {
			_, ok := b.Cache().Snapshot().ScramCredential(user, scram.SHA256)
			return !ok
		})
	}
}
