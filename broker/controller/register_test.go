package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

// TestRegisterWaitsForOldSession: a broker restarted before its old
// session expired finds /brokers/ids/<id> still there. Register waits for
// the old session's node to go and then registers (Kafka 3.x exits with
// NodeExists), and fails with ErrBrokerRegistered only if the node stays
// past the wait.
func TestRegisterWaitsForOldSession(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()
	old, err := st.NewSession()
	require.NoError(t, err)
	require.NoError(t, metadata.EnsureKafkaPaths(ctx, old))
	reg := Registration{BrokerID: 3, Now: time.Now(),
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "h", Port: 1}}}
	oldEpoch, err := Register(ctx, old, reg)
	require.NoError(t, err)

	// Still held: a short wait fails with the owner in the message.
	next, err := st.NewSession()
	require.NoError(t, err)
	reg.WaitForOldSession = 50 * time.Millisecond
	_, err = Register(ctx, next, reg)
	require.ErrorIs(t, err, ErrBrokerRegistered)
	require.ErrorContains(t, err, "owned by ZooKeeper session")

	// The old session expires while the new broker waits: it registers.
	reg.WaitForOldSession = time.Minute
	done := make(chan error, 1)
	var epoch int64
	go func() {
		var err error
		epoch, err = Register(ctx, next, reg)
		done <- err
	}()
	require.NoError(t, st.ExpireSession(old.SessionID()))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Register did not notice the old session's node go")
	}
	require.Greater(t, epoch, oldEpoch, "a new broker epoch")
	_, stat, err := next.Get(context.Background(), metadata.BrokerPath(3))
	require.NoError(t, err)
	require.Equal(t, next.SessionID(), stat.EphemeralOwner)
}
