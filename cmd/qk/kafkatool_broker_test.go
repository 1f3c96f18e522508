//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/brokertest"
)

// The Kafka shell tools on three qk brokers: the same checks as on kfake
// (checkKafkaTools), and on qk the replicas are where
// --replica-assignment put them and each broker's log dirs hold exactly
// its replicas.
func TestKafkaToolsQK(t *testing.T) {
	qc := brokertest.StartCluster(t, 3)
	c := newToolCluster(t, qc.Addrs())
	c.exactAssignment = true
	checkKafkaTools(t, c)

	// A broker that is not in the cluster: the controller's refusal.
	_, _, err := c.tool(t, "topic", "create", "nowhere", "--replica-assignment", "1:4242")
	require.ErrorContains(t, err, "create topic nowhere: INVALID_REPLICA_ASSIGNMENT")
}
