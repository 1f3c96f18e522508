package admin

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAlterCallsSend checks that send picks the call for the resource kind
// and dry-run flag, passes the resource on, and reports the first error.
func TestAlterCallsSend(t *testing.T) {
	var called string
	topicCall := func(name string) func(context.Context, []kadm.AlterConfig, ...string) (kadm.AlterConfigsResponses, error) {
		return func(_ context.Context, _ []kadm.AlterConfig, topics ...string) (kadm.AlterConfigsResponses, error) {
			called = name + " " + topics[0]
			return nil, nil
		}
	}
	brokerCall := func(name string) func(context.Context, []kadm.AlterConfig, ...int32) (kadm.AlterConfigsResponses, error) {
		return func(_ context.Context, _ []kadm.AlterConfig, brokers ...int32) (kadm.AlterConfigsResponses, error) {
			called = name
			if brokers[0] == 7 {
				return kadm.AlterConfigsResponses{{Name: "7", Err: kerr.InvalidRequest, ErrMessage: "no such setting"}}, nil
			}
			return nil, errors.New("unreachable")
		}
	}
	a := alterCalls{
		topic: topicCall("topic"), validateTopic: topicCall("validate topic"),
		broker: brokerCall("broker"), validateBroker: brokerCall("validate broker"),
	}
	ctx := context.Background()

	require.NoError(t, a.send(ctx, Resource{Topic: "t"}, nil, false))
	require.Equal(t, "topic t", called)
	require.NoError(t, a.send(ctx, Resource{Topic: "t"}, nil, true))
	require.Equal(t, "validate topic t", called)

	err := a.send(ctx, Resource{Broker: 7}, nil, false)
	require.Equal(t, "broker", called)
	require.EqualError(t, err, "alter broker 7 configs: INVALID_REQUEST: no such setting")
	err = a.send(ctx, Resource{Broker: 1}, nil, true)
	require.Equal(t, "validate broker", called)
	require.EqualError(t, err, "alter broker 1 configs: unreachable")
}
