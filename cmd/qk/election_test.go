//go:build linux

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/brokertest"
)

// qk leader-election against a qk cluster: a partition whose preferred
// replica came back as a follower gets it as leader again, the others
// are reported as already led by a valid replica, in
// kafka-leader-election.sh's words.
func TestLeaderElection(t *testing.T) {
	c := brokertest.StartCluster(t, 3, brokertest.WithConfig("auto.leader.rebalance.enable", "false"),
		brokertest.WithConfig("controlled.shutdown.max.retries", "0"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = adm.CreateTopic(ctx, 2, 3, nil, "elect")
	require.NoError(t, err)
	preferred := func() (int32, bool) {
		md, err := adm.Metadata(ctx, "elect")
		if err != nil || len(md.Topics["elect"].Partitions) != 2 {
			return -1, false
		}
		p := md.Topics["elect"].Partitions[0]
		return p.Replicas[0], p.Leader == p.Replicas[0] && len(p.ISR) == 3
	}
	var pref int32
	require.Eventually(t, func() bool { var ok bool; pref, ok = preferred(); return ok }, 10*time.Second, 20*time.Millisecond)
	c.Brokers[pref].Restart()
	require.Eventually(t, func() bool {
		md, err := adm.Metadata(ctx, "elect")
		if err != nil {
			return false
		}
		p := md.Topics["elect"].Partitions[0]
		return p.Leader != pref && p.Leader >= 0 && len(p.ISR) == 3
	}, 15*time.Second, 20*time.Millisecond, "the preferred replica back as a follower")

	bootstrap := strings.Join(c.Addrs(), ",")
	out, stderr, err := runQK(t, "leader-election", "-b", bootstrap, "--election-type", "preferred", "--all-topic-partitions")
	require.NoError(t, err, stderr)
	require.Contains(t, out, "Successfully completed leader election (PREFERRED) for partitions elect-0")
	require.Contains(t, out, "Valid replica already elected for partitions")
	require.Contains(t, out, "elect-1")
	require.Eventually(t, func() bool { _, ok := preferred(); return ok }, 10*time.Second, 20*time.Millisecond,
		"the preferred replica leads again")

	_, _, err = runQK(t, "leader-election", "-b", bootstrap, "--election-type", "preferred")
	require.ErrorContains(t, err, "name the partitions one way")
	_, _, err = runQK(t, "leader-election", "-b", bootstrap, "--election-type", "sideways", "--all-topic-partitions")
	require.ErrorContains(t, err, "want preferred or unclean")
}
