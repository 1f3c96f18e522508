package channel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/broker/controller/channel"
)

// A real qk broker answers Metadata sent through the channel, at the
// highest version both sides know. (An external test package: broker
// imports channel.)
func TestRealBroker(t *testing.T) {
	b := brokertest.StartBroker(t)
	m := channel.New(channel.Config{ControllerID: 0})
	t.Cleanup(m.Close)
	m.AddBroker(0, b.Addr)
	type result struct {
		resp kmsg.Response
		err  error
	}
	got := make(chan result, 1)
	md := kmsg.NewPtrMetadataRequest()
	m.Send(0, md, func(r kmsg.Response, err error) { got <- result{r, err} })
	select {
	case r := <-got:
		require.NoError(t, r.err)
		resp := r.resp.(*kmsg.MetadataResponse)
		require.Equal(t, md.MaxVersion(), resp.GetVersion(), "qk serves kmsg's newest Metadata")
		require.Len(t, resp.Brokers, 1)
		require.Equal(t, int32(0), resp.Brokers[0].NodeID)
	case <-time.After(20 * time.Second):
		t.Fatal("no answer from the broker")
	}
}
