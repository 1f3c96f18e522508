package txn

import "testing"

func TestCountStates(t *testing.T) {
	p := NewPartition(0, 1, DefaultConfig())
	p.Loaded(0)
	for id, s := range map[string]State{"a": Ongoing, "b": Ongoing, "c": CompleteCommit, "d": Empty} {
		m := newMetadata(id, 1000, 60000, 0)
		m.State = s
		p.txns[id] = m
	}
	got := p.CountStates()
	want := StateCounts{Empty: 1, Ongoing: 2, CompleteCommit: 1}
	if got != want {
		t.Fatalf("CountStates = %v, want %v", got, want)
	}
}
