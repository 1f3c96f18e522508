package statemachine

import (
	"slices"
	"testing"
)

func TestReassignTo(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		from                   ReplicaAssignment
		target                 []int32
		replicas, add, removes []int32
		origin                 []int32
	}{
		{"raise the replication factor", ReplicaAssignment{Replicas: []int32{0}}, []int32{0, 1, 2},
			[]int32{0, 1, 2}, []int32{1, 2}, []int32{}, []int32{0}},
		{"move to other brokers", ReplicaAssignment{Replicas: []int32{0, 1}}, []int32{2, 3},
			[]int32{2, 3, 0, 1}, []int32{2, 3}, []int32{0, 1}, []int32{0, 1}},
		{"reorder only", ReplicaAssignment{Replicas: []int32{0, 1, 2}}, []int32{2, 1, 0},
			[]int32{2, 1, 0}, []int32{}, []int32{}, []int32{0, 1, 2}},
		{"shrink", ReplicaAssignment{Replicas: []int32{0, 1, 2}}, []int32{1},
			[]int32{1, 0, 2}, []int32{}, []int32{0, 2}, []int32{0, 1, 2}},
		// A reassignment over one in progress keeps its origin: 3, which
		// the first was adding, is dropped.
		{"replace one in progress", ReplicaAssignment{Replicas: []int32{3, 1, 0}, Adding: []int32{3}, Removing: []int32{0}}, []int32{1, 2},
			[]int32{1, 2, 0}, []int32{2}, []int32{0}, []int32{1, 0}},
		// A cancellation is a reassignment back to the origin.
		{"cancel", ReplicaAssignment{Replicas: []int32{3, 1, 0}, Adding: []int32{3}, Removing: []int32{0}}, []int32{1, 0},
			[]int32{1, 0}, []int32{}, []int32{}, []int32{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.from.Origin(); !slices.Equal(got, tc.origin) {
				t.Errorf("origin %v, want %v", got, tc.origin)
			}
			got := tc.from.ReassignTo(tc.target)
			want := ReplicaAssignment{Replicas: tc.replicas, Adding: tc.add, Removing: tc.removes}
			if !got.Equal(want) {
				t.Fatalf("ReassignTo(%v) = %+v, want %+v", tc.target, got, want)
			}
			if !slices.Equal(got.Target(), tc.target) {
				t.Errorf("target %v, want %v", got.Target(), tc.target)
			}
			if got.IsBeingReassigned() != (len(tc.add)+len(tc.removes) > 0) {
				t.Errorf("IsBeingReassigned %v", got.IsBeingReassigned())
			}
		})
	}
}

func TestReassignmentComplete(t *testing.T) {
	a := ReplicaAssignment{Replicas: []int32{2, 3, 0}, Adding: []int32{2, 3}, Removing: []int32{0}}
	for _, tc := range []struct {
		isr  []int32
		want bool
	}{
		{[]int32{0}, false},
		{[]int32{0, 2}, false},
		{[]int32{0, 2, 3}, true},
		{[]int32{3, 2}, true},
	} {
		if got := ReassignmentComplete(a, tc.isr); got != tc.want {
			t.Errorf("isr %v: complete %v, want %v", tc.isr, got, tc.want)
		}
	}
	if !ReassignmentComplete(ReplicaAssignment{Replicas: []int32{0, 1}}, []int32{0}) {
		t.Error("an assignment not being reassigned is complete")
	}
}

func TestReassignPartitionLeader(t *testing.T) {
	live := func(ids ...int32) Live { return func(b int32) bool { return slices.Contains(ids, b) } }
	for _, tc := range []struct {
		target, isr []int32
		live        Live
		want        int32
		ok          bool
	}{
		{[]int32{2, 3}, []int32{0, 2, 3}, live(0, 2, 3), 2, true},
		{[]int32{2, 3}, []int32{0, 2, 3}, live(0, 3), 3, true},
		{[]int32{2, 3}, []int32{0, 3}, live(0, 2, 3), 3, true},
		{[]int32{2, 3}, []int32{0}, live(0, 2, 3), NoLeader, false},
	} {
		got, ok := ReassignPartitionLeader(tc.target, tc.isr, tc.live)
		if got != tc.want || ok != tc.ok {
			t.Errorf("target %v isr %v: %d %v, want %d %v", tc.target, tc.isr, got, ok, tc.want, tc.ok)
		}
	}
}
