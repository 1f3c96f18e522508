package statemachine

import (
	"errors"
	"slices"
	"testing"
)

// Every (from, to) pair of partition states, against Kafka's table.
func TestPartitionTransitions(t *testing.T) {
	N, New, On, Off := NonExistentPartition, NewPartition, OnlinePartition, OfflinePartition
	legal := map[[2]PartitionState]bool{
		{N, New}:  true,
		{New, On}: true, {On, On}: true, {Off, On}: true,
		{New, Off}: true, {On, Off}: true, {Off, Off}: true,
		{Off, N}: true,
	}
	all := []PartitionState{N, New, On, Off}
	for _, from := range all {
		for _, to := range all {
			want := legal[[2]PartitionState{from, to}]
			if got := from.CanTransition(to); got != want {
				t.Errorf("%s -> %s: CanTransition %v, want %v", from, to, got, want)
			}
			m := NewMachine()
			tp := TopicPartition{"t", 0}
			m.InitPartition(tp, from)
			err := m.SetPartition(tp, to)
			if want != (err == nil) {
				t.Errorf("%s -> %s: SetPartition err %v", from, to, err)
			}
			if err != nil && !errors.Is(err, ErrIllegalTransition) {
				t.Errorf("%s -> %s: err %v is not ErrIllegalTransition", from, to, err)
			}
			wantState := from
			if want {
				wantState = to
			}
			if got := m.Partition(tp); got != wantState {
				t.Errorf("%s -> %s: state %s after, want %s", from, to, got, wantState)
			}
		}
	}
}

func TestReplicaTransitions(t *testing.T) {
	N, New, On, Off := NonExistentReplica, NewReplica, OnlineReplica, OfflineReplica
	Start, Ok, Inel := ReplicaDeletionStarted, ReplicaDeletionSuccessful, ReplicaDeletionIneligible
	legal := map[[2]ReplicaState]bool{
		{N, New}:  true,
		{New, On}: true, {On, On}: true, {Off, On}: true, {Inel, On}: true,
		{New, Off}: true, {On, Off}: true, {Off, Off}: true, {Inel, Off}: true,
		{Off, Start}: true,
		{Start, Ok}:  true,
		{Off, Inel}:  true, {Start, Inel}: true,
		{Ok, N}: true,
	}
	all := []ReplicaState{N, New, On, Off, Start, Ok, Inel}
	for _, from := range all {
		for _, to := range all {
			want := legal[[2]ReplicaState{from, to}]
			if got := from.CanTransition(to); got != want {
				t.Errorf("%s -> %s: CanTransition %v, want %v", from, to, got, want)
			}
			m := NewMachine()
			pr := PartitionReplica{TopicPartition{"t", 0}, 1}
			m.InitReplica(pr, from)
			err := m.SetReplica(pr, to)
			if want != (err == nil) {
				t.Errorf("%s -> %s: SetReplica err %v", from, to, err)
			}
			wantState := from
			if want {
				wantState = to
			}
			if got := m.Replica(pr); got != wantState {
				t.Errorf("%s -> %s: state %s after, want %s", from, to, got, wantState)
			}
		}
	}
}

// A topic's life: created, its leader's broker dies, it returns, the
// topic is deleted; Forget leaves nothing behind.
func TestMachineLifecycle(t *testing.T) {
	m := NewMachine()
	tp := TopicPartition{"orders", 3}
	pr := PartitionReplica{tp, 2}
	steps := []struct {
		p PartitionState
		r ReplicaState
	}{
		{NewPartition, NewReplica},
		{OnlinePartition, OnlineReplica},
		{OfflinePartition, OfflineReplica},
		{OnlinePartition, OnlineReplica},
		{OfflinePartition, OfflineReplica},
		{OfflinePartition, ReplicaDeletionStarted},
		{OfflinePartition, ReplicaDeletionSuccessful},
		{NonExistentPartition, NonExistentReplica},
	}
	for i, s := range steps {
		if err := m.SetPartition(tp, s.p); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if err := m.SetReplica(pr, s.r); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if len(m.partitions) != 0 || len(m.replicas) != 0 {
		t.Fatalf("states left after deletion: %v %v", m.partitions, m.replicas)
	}
	m.InitPartition(TopicPartition{"a", 1}, OfflinePartition)
	m.InitPartition(TopicPartition{"a", 0}, OnlinePartition)
	m.InitPartition(TopicPartition{"b", 0}, OfflinePartition)
	m.InitReplica(PartitionReplica{TopicPartition{"a", 0}, 1}, OnlineReplica)
	m.InitReplica(PartitionReplica{TopicPartition{"a", 0}, 0}, OfflineReplica)
	if got := m.PartitionsIn(OfflinePartition, NewPartition); !slices.Equal(got, []TopicPartition{{"a", 1}, {"b", 0}}) {
		t.Fatalf("PartitionsIn: %v", got)
	}
	if got := m.ReplicasIn("a", OnlineReplica, OfflineReplica); len(got) != 2 || got[0].Replica != 0 {
		t.Fatalf("ReplicasIn: %v", got)
	}
	m.Forget("a")
	if got := m.PartitionsIn(OnlinePartition, OfflinePartition); !slices.Equal(got, []TopicPartition{{"b", 0}}) {
		t.Fatalf("after Forget: %v", got)
	}
}

func liveSet(ids ...int32) Live { return func(b int32) bool { return slices.Contains(ids, b) } }

func TestInitialLeaderAndIsr(t *testing.T) {
	for _, c := range []struct {
		name       string
		assignment []int32
		live       []int32
		leader     int32
		isr        []int32
		ok         bool
	}{
		{"all live", []int32{2, 0, 1}, []int32{0, 1, 2}, 2, []int32{2, 0, 1}, true},
		{"first dead", []int32{2, 0, 1}, []int32{0, 1}, 0, []int32{0, 1}, true},
		{"none live", []int32{2}, []int32{0, 1}, 0, nil, false},
	} {
		l, ok := InitialLeaderAndIsr(c.assignment, liveSet(c.live...))
		if ok != c.ok || (ok && (l.Leader != c.leader || !slices.Equal(l.ISR, c.isr) || l.LeaderEpoch != 0)) {
			t.Errorf("%s: got %+v %v, want leader %d isr %v ok %v", c.name, l, ok, c.leader, c.isr, c.ok)
		}
	}
}

func TestOfflinePartitionLeader(t *testing.T) {
	for _, c := range []struct {
		name       string
		assignment []int32
		isr        []int32
		live       []int32
		unclean    bool
		leader     int32
		newISR     []int32
		wasUnclean bool
		ok         bool
	}{
		{"first live in isr", []int32{0, 1, 2}, []int32{0, 1, 2}, []int32{1, 2}, false, 1, []int32{1, 2}, false, true},
		{"assignment order wins over isr order", []int32{2, 1, 0}, []int32{0, 1}, []int32{0, 1}, false, 1, []int32{0, 1}, false, true},
		{"live but not in isr is not clean", []int32{0, 1}, []int32{0}, []int32{1}, false, NoLeader, nil, false, false},
		{"unclean allowed", []int32{0, 1}, []int32{0}, []int32{1}, true, 1, []int32{1}, true, true},
		{"single replica returns", []int32{0}, []int32{0}, []int32{0}, false, 0, []int32{0}, false, true},
		{"nobody", []int32{0}, []int32{0}, nil, true, NoLeader, nil, false, false},
	} {
		leader, isr, unclean, ok := OfflinePartitionLeader(c.assignment, c.isr, liveSet(c.live...), c.unclean)
		if leader != c.leader || !slices.Equal(isr, c.newISR) || unclean != c.wasUnclean || ok != c.ok {
			t.Errorf("%s: got %d %v %v %v", c.name, leader, isr, unclean, ok)
		}
	}
}

func TestControlledShutdownLeader(t *testing.T) {
	shutting := func(ids ...int32) func(int32) bool { return func(b int32) bool { return slices.Contains(ids, b) } }
	leader, isr, ok := ControlledShutdownLeader([]int32{0, 1, 2}, []int32{0, 1, 2}, liveSet(0, 1, 2), shutting(0))
	if !ok || leader != 1 || !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("got %d %v %v", leader, isr, ok)
	}
	if _, _, ok := ControlledShutdownLeader([]int32{0}, []int32{0}, liveSet(0), shutting(0)); ok {
		t.Fatal("a single replica shutting down cannot hand leadership over")
	}
	if _, _, ok := ControlledShutdownLeader([]int32{0, 1}, []int32{0}, liveSet(0, 1), shutting(0)); ok {
		t.Fatal("a replica out of the ISR cannot take over")
	}
}

func TestPreferredReplicaLeader(t *testing.T) {
	if l, ok := PreferredReplicaLeader([]int32{2, 0}, []int32{0, 2}, liveSet(0, 2)); !ok || l != 2 {
		t.Fatalf("got %d %v", l, ok)
	}
	if _, ok := PreferredReplicaLeader([]int32{2, 0}, []int32{0}, liveSet(0, 2)); ok {
		t.Fatal("preferred replica out of the ISR elected")
	}
	if _, ok := PreferredReplicaLeader(nil, nil, liveSet()); ok {
		t.Fatal("empty assignment elected")
	}
}

func TestRemoveReplicaFromIsr(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      LeaderAndIsr
		replica int32
		want    LeaderAndIsr
		changed bool
	}{
		{"leader leaves", LeaderAndIsr{Leader: 0, LeaderEpoch: 4, ISR: []int32{0, 1}, PartitionEpoch: 9}, 0,
			LeaderAndIsr{Leader: NoLeader, LeaderEpoch: 5, ISR: []int32{1}, PartitionEpoch: 9}, true},
		{"follower leaves", LeaderAndIsr{Leader: 0, LeaderEpoch: 4, ISR: []int32{0, 1, 2}}, 1,
			LeaderAndIsr{Leader: 0, LeaderEpoch: 5, ISR: []int32{0, 2}}, true},
		{"last member stays in the isr", LeaderAndIsr{Leader: 3, LeaderEpoch: 0, ISR: []int32{3}}, 3,
			LeaderAndIsr{Leader: NoLeader, LeaderEpoch: 1, ISR: []int32{3}}, true},
		{"not in the isr", LeaderAndIsr{Leader: 0, LeaderEpoch: 2, ISR: []int32{0}}, 1,
			LeaderAndIsr{Leader: 0, LeaderEpoch: 2, ISR: []int32{0}}, false},
	} {
		got, changed := RemoveReplicaFromIsr(c.in, c.replica)
		if changed != c.changed || got.Leader != c.want.Leader || got.LeaderEpoch != c.want.LeaderEpoch ||
			!slices.Equal(got.ISR, c.want.ISR) || got.PartitionEpoch != c.want.PartitionEpoch {
			t.Errorf("%s: got %+v %v, want %+v %v", c.name, got, changed, c.want, c.changed)
		}
	}
	in := LeaderAndIsr{Leader: 0, ISR: []int32{0, 1}}
	RemoveReplicaFromIsr(in, 1)
	if !slices.Equal(in.ISR, []int32{0, 1}) {
		t.Fatal("input ISR modified")
	}
}
