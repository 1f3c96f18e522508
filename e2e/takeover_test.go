//go:build integration

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/internal/fixtures"
	"github.com/qk-project/qk/internal/zktest"
)

// withDataFrom fills the broker's log dir with a copy of dir before its
// first start.
func withDataFrom(t *testing.T, dir string) brokerOption {
	return func(b *broker) {
		if err := os.CopyFS(b.dataDir, os.DirFS(dir)); err != nil {
			t.Fatalf("copy %s: %v", dir, err)
		}
	}
}

// TestKafkaTakeover: a qk broker started with a ZooKeeper-mode Kafka 3.0
// broker's settings (broker.id 0, its log dir, its ZooKeeper) serves that
// broker's partitions as Kafka would after a restart. The fixture is a
// real ZooKeeper data dir and log dir written by Kafka 3.0.0, with the
// traps of a real takeover: Kafka's /brokers/ids/0 and /controller stay
// until its old session expires; the checkpoints name partitions that
// have no directory (created empty); and the log dir is newer than the
// snapshot (my-first-topic-2's leader-epoch-checkpoint has epoch 2 from
// offset 7 while ZooKeeper says leader_epoch 0), so the new leader epoch
// must be above both.
func TestKafkaTakeover(t *testing.T) {
	fx := fixtures.Path(t, "kafka300-zk-zookeeper-snapshot/data")
	zk := zktest.StartFrom(t, filepath.Join(fx, "zookeeper"))
	st := openZK(t, zk.Addr())
	ctx := ctxFor(t, 60*time.Second)

	// What Kafka left: its epoch, its topics and their ids.
	data, _, err := st.Get(ctx, metadata.ControllerEpochPath)
	if err != nil {
		t.Fatal(err)
	}
	oldEpoch, err := metadata.UnmarshalControllerEpoch(data)
	if err != nil {
		t.Fatal(err)
	}
	topics, _, err := st.Children(ctx, metadata.BrokerTopicsPath)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(topics)
	if want := []string{"__consumer_offsets", "my-first-topic", "my-sec-topic"}; !slices.Equal(topics, want) {
		t.Fatalf("fixture topics %v, want %v", topics, want)
	}
	ids := map[string][16]byte{}
	sizes := map[string]int{}
	for _, name := range topics {
		data, _, err := st.Get(ctx, metadata.TopicPath(name))
		if err != nil {
			t.Fatal(err)
		}
		a, err := metadata.UnmarshalTopicAssignment(data)
		if err != nil {
			t.Fatal(err)
		}
		ids[name], sizes[name] = a.TopicID, len(a.Partitions)
	}
	if _, ok, _ := st.Exists(ctx, metadata.BrokerPath(0)); !ok {
		t.Fatal("the fixture's /brokers/ids/0 is gone already: the test would not cover the wait for Kafka's session")
	}

	start := time.Now()
	b := startBroker(t, withDataFrom(t, filepath.Join(fx, "kafka")), withSet(
		"broker.id=0",
		"zookeeper.connect="+zk.Addr(),
	))
	t.Logf("took over in %v (Kafka's session had to expire first)", time.Since(start).Round(time.Millisecond))
	if _, ok := b.waitLog(regexp.MustCompile(`registered by an earlier session; waiting for it to expire`), time.Second); !ok {
		t.Error("the broker did not say it waited for Kafka's session")
	}

	// Every topic with its id and partitions, led by broker 0.
	md, err := b.admin().Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Controller != 0 {
		t.Errorf("controller %d, want 0", md.Controller)
	}
	for _, name := range topics {
		td, ok := md.Topics[name]
		if !ok {
			t.Errorf("topic %s not served", name)
			continue
		}
		if [16]byte(td.ID) != ids[name] {
			t.Errorf("topic %s id %s, Kafka's %s", name, td.ID, metadata.FormatUUID(ids[name]))
		}
		if len(td.Partitions) != sizes[name] {
			t.Errorf("topic %s has %d partitions, want %d", name, len(td.Partitions), sizes[name])
		}
		for _, p := range td.Partitions {
			if p.Leader != 0 || p.Err != nil {
				t.Errorf("%s-%d: leader %d err %v", name, p.Partition, p.Leader, p.Err)
			}
		}
	}

	// A new controller epoch above Kafka's, and my-first-topic-2 led at an
	// epoch above both ZooKeeper's 0 and its log's 2.
	data, _, err = st.Get(ctx, metadata.ControllerEpochPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := metadata.UnmarshalControllerEpoch(data); e <= oldEpoch {
		t.Errorf("controller epoch %d, not above Kafka's %d", e, oldEpoch)
	}
	var epoch int32
	waitUntil(t, 20*time.Second, "my-first-topic-2 led above its log's epoch", func() bool {
		data, _, err := st.Get(ctx, metadata.PartitionStatePath("my-first-topic", 2))
		if err != nil {
			return false
		}
		ps, err := metadata.UnmarshalPartitionState(data)
		epoch = ps.LeaderEpoch
		return err == nil && ps.Leader == 0 && ps.LeaderEpoch > 2
	})

	// Kafka's records, as Kafka's dump shows them, then new ones after.
	want := []string{"bye ", "sadd", "Tuyen nguyen", "2nd mess", "fscac", "ffaa", "vgsvac"}
	cl := b.client(kgo.DefaultProduceTopic("my-first-topic"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 2, Value: []byte("after takeover")}).FirstErr(); err != nil {
		t.Fatalf("produce after the takeover: %v", err)
	}
	want = append(want, "after takeover")
	recs := consumeAll(t, b.addr, "my-first-topic", map[int32]int64{2: int64(len(want))}, 20*time.Second)
	var got []string
	for _, r := range recs[2] {
		got = append(got, string(r.Value))
		if r.Offset == 7 && r.LeaderEpoch != epoch {
			t.Errorf("the new record has leader epoch %d, want the partition's %d", r.LeaderEpoch, epoch)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("my-first-topic-2 holds %q, want %q", got, want)
	}

	// my-first-topic-0 is in the checkpoints but has no directory: created
	// empty, as Kafka does, and served.
	if _, err := os.Stat(filepath.Join(b.dataDir, "my-first-topic-0")); err != nil {
		t.Errorf("my-first-topic-0 not created: %v", err)
	}
	ends := endOffsets(t, b.admin(), "my-first-topic")
	if ends[0] != 0 {
		t.Errorf("my-first-topic-0 ends at %d, want 0 (created empty)", ends[0])
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Errorf("produce to the created partition: %v", err)
	}

	// Kafka's consumer group console-consumer-8077 was deleted (its
	// tombstone is the last record of __consumer_offsets-1): qk reads the
	// group log and agrees; a new group commits and reads offsets.
	groups, err := b.admin().DescribeGroups(ctx, "console-consumer-8077")
	if err != nil {
		t.Fatal(err)
	}
	if g := groups["console-consumer-8077"]; g.State != "Dead" {
		t.Errorf("group console-consumer-8077 is %q, want Dead (Kafka deleted it)", g.State)
	}
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: "my-first-topic", Partition: 2, At: 8, LeaderEpoch: -1})
	if cr, err := b.admin().CommitOffsets(ctx, "takeover-check", commit); err != nil || cr.Error() != nil {
		t.Fatalf("commit offsets: %v %v", err, cr.Error())
	}
	fetched, err := b.admin().FetchOffsets(ctx, "takeover-check")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("my-first-topic", 2); !ok || o.At != 8 {
		t.Errorf("fetched offset %+v %v, want 8", o, ok)
	}
}
