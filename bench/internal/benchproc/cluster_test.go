package benchproc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAssignment(t *testing.T) {
	require.Equal(t, [][]int32{{0, 1, 2}}, TopicSpec{Partitions: 1, RF: 3}.Assignment(3))
	require.Equal(t, [][]int32{{0}, {1}, {2}}, TopicSpec{Partitions: 3, RF: 1}.Assignment(3))
	require.Equal(t, [][]int32{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}, TopicSpec{Partitions: 3, RF: 3}.Assignment(3))
}

func TestBrokerArgs(t *testing.T) {
	got := strings.Join(BrokerArgs("127.0.0.1:2181/bench", 2, "127.0.0.1:9094", "/d", 18000), " ")
	require.Equal(t, "broker start --zookeeper 127.0.0.1:2181/bench --set broker.id=2 --set listeners=PLAINTEXT://127.0.0.1:9094 "+
		"--set log.dirs=/d --set zookeeper.session.timeout.ms=18000 --set log.segment.delete.delay.ms=0 --set qk.http.listener=127.0.0.1:0", got)
}
