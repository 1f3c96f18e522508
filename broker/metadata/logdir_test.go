package metadata_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
)

func TestLogDirEventNotification(t *testing.T) {
	n := metadata.LogDirEventNotification{BrokerID: 3, Event: metadata.LogDirFailure}
	data := metadata.MarshalLogDirEventNotification(n)
	require.Equal(t, `{"version":1,"broker":3,"event":1}`, string(data), "Kafka's LogDirEventNotificationSequenceZNode.encode")
	got, err := metadata.UnmarshalLogDirEventNotification(data)
	require.NoError(t, err)
	require.Equal(t, n, got)

	// Kafka's controller reads only the broker.
	got, err = metadata.UnmarshalLogDirEventNotification([]byte(`{"version":1,"broker":0}`))
	require.NoError(t, err)
	require.Equal(t, metadata.LogDirEventNotification{BrokerID: 0, Event: metadata.LogDirFailure}, got)
	for _, bad := range []string{`{"version":1,"event":1}`, `{"broker":-1}`, `{"broker":"1"}`, `nope`, ``} {
		_, err := metadata.UnmarshalLogDirEventNotification([]byte(bad))
		require.ErrorIs(t, err, metadata.ErrMalformed, bad)
	}
}

func TestCreateLogDirEvent(t *testing.T) {
	st := embedded.New()
	t.Cleanup(func() { st.Close() })
	s, err := st.NewSession()
	require.NoError(t, err)
	defer s.Close()
	// The parent is made if missing (a store no Kafka broker set up yet).
	p0, err := metadata.CreateLogDirEvent(ctx, s, 2)
	require.NoError(t, err)
	p1, err := metadata.CreateLogDirEvent(ctx, s, 2)
	require.NoError(t, err)
	require.Equal(t, metadata.LogDirEventNotificationPath+"/log_dir_event_0000000000", p0)
	require.Equal(t, metadata.LogDirEventNotificationPath+"/log_dir_event_0000000001", p1)
	children, _, err := s.Children(ctx, metadata.LogDirEventNotificationPath)
	require.NoError(t, err)
	require.Len(t, children, 2)
	for _, c := range children {
		require.True(t, strings.HasPrefix(c, metadata.LogDirEventPrefix), c)
	}
	data, stat, err := s.Get(ctx, p1)
	require.NoError(t, err)
	require.Zero(t, stat.EphemeralOwner, "persistent: a controller elected later still sees it")
	n, err := metadata.UnmarshalLogDirEventNotification(data)
	require.NoError(t, err)
	require.Equal(t, int32(2), n.BrokerID)
}
