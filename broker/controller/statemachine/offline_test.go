package statemachine

import (
	"slices"
	"testing"
)

func TestOfflineDirsUpdate(t *testing.T) {
	a, b, c := TopicPartition{"a", 0}, TopicPartition{"a", 1}, TopicPartition{"b", 0}
	o := OfflineDirs{}
	for _, step := range []struct {
		name           string
		broker         int32
		failed, served []TopicPartition
		offline, back  []TopicPartition
	}{
		{"first errors are new, sorted", 1, []TopicPartition{c, a}, nil, []TopicPartition{a, c}, nil},
		{"the same errors again are not new", 1, []TopicPartition{a, c}, []TopicPartition{b}, nil, nil},
		{"one more", 1, []TopicPartition{a, b}, nil, []TopicPartition{b}, nil},
		{"duplicates in one answer count once", 2, []TopicPartition{a, a}, nil, []TopicPartition{a}, nil},
		{"served again: back", 1, nil, []TopicPartition{c, a, c}, nil, []TopicPartition{a, c}},
		{"failed wins over served", 1, []TopicPartition{b}, []TopicPartition{b}, nil, nil},
		{"nothing", 2, nil, nil, nil, nil},
	} {
		offline, back := o.Update(step.broker, step.failed, step.served)
		if !slices.Equal(offline, step.offline) || !slices.Equal(back, step.back) {
			t.Errorf("%s: Update = %v, %v, want %v, %v", step.name, offline, back, step.offline, step.back)
		}
	}
	if !o.Contains(1, b) || o.Contains(1, a) || !o.Contains(2, a) || o.Contains(2, b) || o.Contains(3, a) {
		t.Fatalf("Contains wrong: %v", o)
	}
	o.Update(1, []TopicPartition{c}, nil)
	o.ForgetTopic("a")
	if o.Contains(1, b) || o.Contains(2, a) || !o.Contains(1, c) {
		t.Fatalf("ForgetTopic: %v", o)
	}
	if _, ok := o[2]; ok {
		t.Fatal("an emptied broker's set is dropped")
	}
	o.Forget(1)
	if len(o) != 0 {
		t.Fatalf("Forget: %v", o)
	}
	if offline, _ := o.Update(1, []TopicPartition{c}, nil); !slices.Equal(offline, []TopicPartition{c}) {
		t.Fatalf("after Forget an error is new again: %v", offline)
	}
	if _, back := o.Update(1, nil, []TopicPartition{c}); !slices.Equal(back, []TopicPartition{c}) || len(o) != 0 {
		t.Fatalf("the last replica back drops the broker's set: %v %v", back, o)
	}
}

// The elections and the ISR rules, given ReplicaOnline, never choose a
// replica on an offline directory.
func TestElectionsSkipOfflineDirs(t *testing.T) {
	tp := TopicPartition{"t", 0}
	other := TopicPartition{"t", 1}
	offline := OfflineDirs{1: {tp: true}}
	live := liveSet(0, 1, 2)
	on := ReplicaOnline(live, offline, tp)
	shutting := func(ids ...int32) func(int32) bool { return func(b int32) bool { return slices.Contains(ids, b) } }

	for _, c := range []struct {
		name       string
		replica    int32
		partition  TopicPartition
		wantOnline bool
	}{
		{"offline dir", 1, tp, false},
		{"same broker, other partition", 1, other, true},
		{"other broker", 0, tp, true},
		{"dead broker", 3, tp, false},
	} {
		if got := ReplicaOnline(live, offline, c.partition)(c.replica); got != c.wantOnline {
			t.Errorf("%s: ReplicaOnline = %v, want %v", c.name, got, c.wantOnline)
		}
	}

	t.Run("offline", func(t *testing.T) {
		for _, c := range []struct {
			name       string
			assignment []int32
			isr        []int32
			unclean    bool
			leader     int32
			newISR     []int32
			wasUnclean bool
			ok         bool
		}{
			{"next in isr leads, the offline replica leaves the isr", []int32{1, 0, 2}, []int32{1, 0, 2}, false, 0, []int32{0, 2}, false, true},
			{"only the offline replica in the isr", []int32{1, 0}, []int32{1}, false, NoLeader, nil, false, false},
			{"unclean skips the offline replica", []int32{1, 0}, []int32{1}, true, 0, []int32{0}, true, true},
			{"single replica on the offline dir", []int32{1}, []int32{1}, true, NoLeader, nil, false, false},
		} {
			leader, isr, unclean, ok := OfflinePartitionLeader(c.assignment, c.isr, on, c.unclean)
			if leader != c.leader || !slices.Equal(isr, c.newISR) || unclean != c.wasUnclean || ok != c.ok {
				t.Errorf("%s: got %d %v %v %v, want %d %v %v %v", c.name, leader, isr, unclean, ok,
					c.leader, c.newISR, c.wasUnclean, c.ok)
			}
		}
	})
	t.Run("preferred", func(t *testing.T) {
		if _, ok := PreferredReplicaLeader([]int32{1, 0}, []int32{1, 0}, on); ok {
			t.Error("a preferred replica on an offline dir was elected")
		}
		if l, ok := PreferredReplicaLeader([]int32{1, 0}, []int32{1, 0}, ReplicaOnline(live, offline, other)); !ok || l != 1 {
			t.Errorf("the broker's other partitions are not affected: got %d %v", l, ok)
		}
	})
	t.Run("controlled shutdown", func(t *testing.T) {
		leader, isr, ok := ControlledShutdownLeader([]int32{0, 1, 2}, []int32{0, 1, 2}, on, shutting(0))
		if !ok || leader != 2 {
			t.Errorf("got %d %v %v, want leader 2", leader, isr, ok)
		}
		if _, _, ok := ControlledShutdownLeader([]int32{0, 1}, []int32{0, 1}, on, shutting(0)); ok {
			t.Error("leadership handed to a replica on an offline dir")
		}
	})
	t.Run("reassignment", func(t *testing.T) {
		if l, ok := ReassignPartitionLeader([]int32{1, 2}, []int32{0, 1, 2}, on); !ok || l != 2 {
			t.Errorf("got %d %v, want 2", l, ok)
		}
	})
	t.Run("new partition", func(t *testing.T) {
		l, ok := InitialLeaderAndIsr([]int32{1, 0}, on)
		if !ok || l.Leader != 0 || !slices.Equal(l.ISR, []int32{0}) {
			t.Errorf("got %+v %v, want leader 0 isr [0]", l, ok)
		}
	})
}
