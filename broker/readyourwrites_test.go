//go:build linux

package broker_test

import (
	"testing"
	"time"

	"github.com/qk-project/qk/broker/brokertest"
)

// rywRounds is how many write-then-read rounds each kind of change gets
// (the in-process cluster does all of them in a few seconds).
const rywRounds = 200

// startRYW starts 3 in-process brokers and the read-your-writes checks
// (brokertest.ReadYourWrites) on a client of all three.
func startRYW(t *testing.T, opts ...brokertest.Option) *brokertest.ReadYourWrites {
	c := brokertest.StartCluster(t, 3, opts...)
	for _, b := range c.Brokers {
		waitFor(t, 10*time.Second, "every broker to see all three and the controller", func() bool {
			s := b.Cache().Snapshot()
			return len(s.Brokers) == 3 && s.ControllerID >= 0
		})
	}
	return brokertest.NewReadYourWrites(t, newClient(t, c.Addrs()), rywRounds)
}

// TestReadYourWritesTopics: CreateTopics, CreatePartitions and
// DeleteTopics, once answered, are seen by every broker's Metadata.
func TestReadYourWritesTopics(t *testing.T) { startRYW(t).Topics() }

// TestReadYourWritesConfigs: topic configs and cluster-wide broker
// defaults, once altered through one broker, are what DescribeConfigs
// gives on every other.
func TestReadYourWritesConfigs(t *testing.T) { startRYW(t).Configs() }

// TestReadYourWritesACLs: ACLs, once created or deleted through one
// broker, are what DescribeAcls gives on every other.
func TestReadYourWritesACLs(t *testing.T) { startRYW(t, brokertest.WithAuthorizer()).ACLs() }

// TestReadYourWritesQuotasAndCredentials: client quotas and SCRAM
// credentials, once altered, are described by every other broker.
func TestReadYourWritesQuotasAndCredentials(t *testing.T) { startRYW(t).QuotasAndCredentials() }
