//go:build integration

package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/internal/zktest"
)

// TestAdminWaitsDoNotStallClients: admin requests that wait (here
// CreateTopics waiting for a paused broker to apply the new metadata,
// until their timeout_ms) must not hold the broker's request handler
// goroutines (num.io.threads), or every other client of that broker
// waits behind them. This is the cause of issue 19's Close that waited
// minutes on a busy cluster: handlers blocked in topic creation and
// deletion waits (CreateTopics, DeleteTopics, auto-creation from Metadata
// and Produce) left none for the consumer's session-closing Fetch.
//
// Three brokers with num.io.threads=2; one non-controller is stopped
// (SIGSTOP) but stays registered (a 30 s session). Six CreateTopics to
// the controller, each on its own connection, wait for it. Meanwhile
// every ApiVersions, Metadata and Fetch to the controller is answered
// within a second.
func TestAdminWaitsDoNotStallClients(t *testing.T) {
	zk := zktest.Start(t)
	bs := startZKClusterOn(t, zk.Addr()+"/qk", 3, "num.io.threads=2", "zookeeper.session.timeout.ms=30000")
	ctrl := controllerOf(t, bs[0].addr)
	c := bs[ctrl]
	paused := bs[(ctrl+1)%3]
	createTopic(t, c.admin(), "live", 1, nil)
	md, err := freshMetadata(t, c.addr)
	if err != nil {
		t.Fatal(err)
	}
	liveID := md.Topics["live"].ID

	t.Cleanup(func() { _ = syscall.Kill(paused.pid(), syscall.SIGCONT) })
	if err := syscall.Kill(paused.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	const waiting = 6
	answered := make(chan error, waiting)
	sent := time.Now()
	for i := range waiting {
		cl := c.client(kgo.RequestTimeoutOverhead(time.Minute))
		go func() {
			answered <- createTopicsWith(ctxFor(t, 40*time.Second), cl, ctrl, fmt.Sprintf("waits-%d", i), 8_000)
		}()
	}

	probe := c.client(kgo.RequestTimeoutOverhead(time.Minute))
	slowest := time.Duration(0)
	probes := 0
	for time.Since(sent) < 5*time.Second {
		for _, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), metadataFor("live"), fetchOf("live", liveID)} {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := probe.Broker(int(ctrl)).Request(ctx, req)
			cancel()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("%s to controller %d while CreateTopics wait: %v after %v", kmsg.NameForKey(req.Key()), ctrl, err, took)
			}
			slowest = max(slowest, took)
			probes++
			if took > time.Second {
				t.Fatalf("%s to controller %d answered after %v while %d CreateTopics wait for paused broker %d (num.io.threads=2): admin waits hold the request handlers",
					kmsg.NameForKey(req.Key()), ctrl, took.Round(time.Millisecond), waiting, (ctrl+1)%3)
			}
		}
	}
	select {
	case err := <-answered:
		t.Fatalf("a CreateTopics was answered after %v, while broker %d was paused: %v (the test needs them waiting)", time.Since(sent), (ctrl+1)%3, err)
	default:
	}
	t.Logf("%d probes to controller %d while %d CreateTopics waited: slowest %v", probes, ctrl, waiting, slowest.Round(time.Millisecond))

	if err := syscall.Kill(paused.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for range waiting {
		select {
		case err := <-answered:
			// Created, or REQUEST_TIMED_OUT saying it was: either way an
			// answer, which is what this test is about.
			t.Logf("CreateTopics answered after %v: %v", time.Since(sent).Round(time.Millisecond), err)
		case <-time.After(40 * time.Second):
			t.Fatalf("a CreateTopics was never answered")
		}
	}
	for _, b := range bs {
		b.checkAllAnswered(t)
	}
}

// createTopicsWith sends one CreateTopics of topic (1 partition, RF 3)
// with timeout_ms to broker id and returns the topic's error.
func createTopicsWith(ctx context.Context, cl *kgo.Client, id int32, topic string, timeoutMs int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = timeoutMs
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 3
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 1 {
		return fmt.Errorf("CreateTopics answered with %d topics", len(r.Topics))
	}
	if err := kerr.ErrorForCode(r.Topics[0].ErrorCode); err != nil {
		return err
	}
	return nil
}

func metadataFor(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchOf is a consumer's sessionless fetch of partition 0 of topic from
// offset 0 with no wait.
func fetchOf(topic string, id [16]byte) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}
