//go:build integration

package e2e

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/internal/zktest"
)

// TestZooKeeperReadYourWrites: on 3 `qk broker start` processes on a
// real ZooKeeper, what a client changes through one broker (topics,
// topic and cluster-default configs, ACLs, client quotas, SCRAM
// credentials) it reads at once through another, with requests that are
// not retried (brokertest.ReadYourWrites; issue 19). -short runs fewer
// rounds.
func TestZooKeeperReadYourWrites(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 30
	}
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3,
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:ANONYMOUS")
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.addr)
	}
	r := brokertest.NewReadYourWrites(t, bs[0].client(kgo.SeedBrokers(addrs...)), rounds)
	r.Topics()
	r.Configs()
	r.ACLs()
	r.QuotasAndCredentials()
}
