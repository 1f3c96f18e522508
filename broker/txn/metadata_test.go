package txn

import (
	"errors"
	"slices"
	"testing"
)

// kafkaValidPrevious is TransactionMetadata.scala's validPreviousStates,
// row = the new state, column = the current state, in Kafka's id order:
// Empty Ongoing PrepareCommit PrepareAbort CompleteCommit CompleteAbort
// Dead PrepareEpochFence.
var kafkaValidPrevious = [8][8]bool{
	Empty:             {Empty: true, CompleteCommit: true, CompleteAbort: true},
	Ongoing:           {Empty: true, Ongoing: true, CompleteCommit: true, CompleteAbort: true},
	PrepareCommit:     {Ongoing: true},
	PrepareAbort:      {Ongoing: true, PrepareEpochFence: true},
	CompleteCommit:    {PrepareCommit: true},
	CompleteAbort:     {PrepareAbort: true},
	Dead:              {Empty: true, CompleteCommit: true, CompleteAbort: true},
	PrepareEpochFence: {Ongoing: true},
}

func TestValidPreviousStates(t *testing.T) {
	if len(States) != 8 {
		t.Fatalf("%d states", len(States))
	}
	for i, s := range States {
		if int(s) != i {
			t.Fatalf("state %s has id %d, want %d", s, s, i)
		}
	}
	for _, to := range States {
		var want []State
		for _, from := range States {
			if got := to.CanTransitionFrom(from); got != kafkaValidPrevious[to][from] {
				t.Errorf("%s from %s: %v, Kafka says %v", to, from, got, kafkaValidPrevious[to][from])
			}
			if kafkaValidPrevious[to][from] {
				want = append(want, from)
			}
		}
		got := to.ValidPreviousStates()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s.ValidPreviousStates() = %v, want %v", to, got, want)
		}
	}
	if NoState.CanTransitionFrom(Empty) || Empty.CanTransitionFrom(NoState) || State(8).ValidPreviousStates() != nil {
		t.Error("out-of-range states must not transition")
	}
}

func TestStateNames(t *testing.T) {
	want := []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}
	for i, s := range States {
		if s.String() != want[i] {
			t.Errorf("%d: %s, want %s", i, s, want[i])
		}
		if got, ok := ParseState(want[i]); !ok || got != s {
			t.Errorf("ParseState(%s) = %v, %v", want[i], got, ok)
		}
	}
	if _, ok := ParseState("ongoing"); ok {
		t.Error("ParseState is exact, as Kafka's fromName")
	}
	for _, s := range States {
		if got, want := s.IsExpirationAllowed(), s == Empty || s == CompleteCommit || s == CompleteAbort; got != want {
			t.Errorf("%s.IsExpirationAllowed() = %v", s, got)
		}
	}
	if NoState.String() != "None" || State(9).String() != "State(9)" {
		t.Error(NoState.String(), State(9).String())
	}
}

// TestTransitionMatrix prepares every (from, to) pair on a metadata and
// checks that exactly Kafka's transitions are accepted, and that an
// accepted one completes (except Dead and PrepareEpochFence, which never
// complete).
func TestTransitionMatrix(t *testing.T) {
	tp := []TopicPartition{{"foo", 0}}
	for _, from := range States {
		for _, to := range States {
			m := &Metadata{TransactionalID: "t", ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1,
				ProducerEpoch: 3, LastProducerEpoch: -1, TimeoutMs: 60000, State: from, StartMs: 10, LastUpdateMs: 10}
			if from != Empty {
				m.Partitions = slices.Clone(tp)
			}
			epoch, parts, start := m.ProducerEpoch, m.Partitions, m.StartMs
			switch to {
			case Empty:
				epoch, parts, start = epoch+1, nil, -1
			case Ongoing:
				parts = tp
			case CompleteCommit, CompleteAbort:
				parts = nil
			}
			tr, err := m.prepareTransitionTo(to, m.ProducerID, epoch, -1, m.TimeoutMs, parts, start, 20)
			if allowed := kafkaValidPrevious[to][from]; allowed != (err == nil) {
				t.Errorf("%s -> %s: err %v, Kafka allows: %v", from, to, err, allowed)
				continue
			}
			if err != nil {
				if !errors.Is(err, ErrIllegalState) || m.Pending != nil {
					t.Errorf("%s -> %s: refused with %v, pending %v", from, to, err, m.Pending)
				}
				continue
			}
			if m.PendingState() != to {
				t.Errorf("%s -> %s: pending %s", from, to, m.PendingState())
			}
			// A second transition while one is pending is refused.
			if _, err := m.prepareTransitionTo(to, m.ProducerID, epoch, -1, m.TimeoutMs, parts, start, 20); !errors.Is(err, ErrIllegalState) {
				t.Errorf("%s -> %s twice: %v", from, to, err)
			}
			err = m.CompleteTransitionTo(tr)
			if never := to == Dead || to == PrepareEpochFence; never != (err != nil) {
				t.Errorf("%s -> %s: complete: %v", from, to, err)
				continue
			}
			if err == nil && (m.State != to || m.Pending != nil || m.LastUpdateMs != 20 || m.ProducerEpoch != tr.ProducerEpoch) {
				t.Errorf("%s -> %s: completed to %s", from, to, m)
			}
		}
	}
}

func TestCompleteTransitionToRefuses(t *testing.T) {
	base := func(state State) *Metadata {
		return &Metadata{TransactionalID: "t", ProducerID: 1000, PreviousProducerID: -1, NextProducerID: -1, ProducerEpoch: 3,
			LastProducerEpoch: -1, TimeoutMs: 60000, State: state, Partitions: []TopicPartition{{"foo", 0}, {"foo", 1}},
			StartMs: 10, LastUpdateMs: 10}
	}
	for _, tc := range []struct {
		name  string
		from  State
		apply func(m *Metadata, tr *TransitMetadata)
	}{
		{"Empty epoch +2", Empty, func(m *Metadata, tr *TransitMetadata) {
			tr.State, tr.ProducerEpoch, tr.Partitions, tr.StartMs = Empty, 5, nil, -1
		}},
		{"Empty epoch 0 same producer id", CompleteCommit, func(m *Metadata, tr *TransitMetadata) {
			tr.State, tr.ProducerEpoch, tr.Partitions, tr.StartMs = Empty, 0, nil, -1
		}},
		{"Empty with partitions", CompleteCommit, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.ProducerEpoch, tr.StartMs = Empty, 4, -1 }},
		{"Empty with a start", CompleteCommit, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.ProducerEpoch, tr.Partitions = Empty, 4, nil }},
		{"Ongoing losing a partition", Ongoing, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.Partitions = Ongoing, tr.Partitions[:1] }},
		{"Ongoing new timeout", Ongoing, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.TimeoutMs = Ongoing, 1 }},
		{"Ongoing other epoch", Ongoing, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.ProducerEpoch = Ongoing, 4 }},
		{"Ongoing other producer id", Ongoing, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.ProducerID = Ongoing, 7 }},
		{"PrepareCommit other partitions", Ongoing, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.Partitions = PrepareCommit, tr.Partitions[:1] }},
		{"PrepareAbort other start", Ongoing, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.StartMs = PrepareAbort, 11 }},
		{"CompleteCommit without start", PrepareCommit, func(m *Metadata, tr *TransitMetadata) { tr.State, tr.Partitions, tr.StartMs = CompleteCommit, nil, -1 }},
		{"CompleteAbort other epoch", PrepareAbort, func(m *Metadata, tr *TransitMetadata) {
			tr.State, tr.Partitions, tr.ProducerEpoch = CompleteAbort, nil, 4
		}},
		{"not the pending state", Ongoing, func(m *Metadata, tr *TransitMetadata) {
			tr.State = PrepareAbort
			p := *tr
			p.State = PrepareCommit
			m.Pending = &p
		}},
		{"none pending", Ongoing, func(m *Metadata, tr *TransitMetadata) { tr.State = PrepareAbort; m.Pending = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base(tc.from)
			tr := TransitMetadata{ProducerID: m.ProducerID, PreviousProducerID: m.ProducerID, NextProducerID: -1,
				ProducerEpoch: m.ProducerEpoch, LastProducerEpoch: -1, TimeoutMs: m.TimeoutMs,
				Partitions: slices.Clone(m.Partitions), StartMs: m.StartMs, LastUpdateMs: 20}
			p := tr
			m.Pending = &p
			tc.apply(m, &tr)
			if m.Pending != nil && tc.name != "not the pending state" {
				m.Pending.State = tr.State
			}
			before := m.Clone()
			if err := m.CompleteTransitionTo(tr); !errors.Is(err, ErrIllegalState) {
				t.Fatalf("accepted %s from %s: %v", tr, before, err)
			}
			if m.State != before.State || m.ProducerEpoch != before.ProducerEpoch || !slices.Equal(m.Partitions, before.Partitions) || m.LastUpdateMs != 10 {
				t.Fatalf("refused transition changed %s to %s", before, m)
			}
		})
	}
}

func TestEpochExhausted(t *testing.T) {
	for epoch, want := range map[int16]bool{0: false, 32764: false, 32765: false, 32766: true, 32767: true} {
		if IsEpochExhausted(epoch) != want {
			t.Errorf("IsEpochExhausted(%d) != %v", epoch, want)
		}
	}
	m := newMetadata("t", 1, 1000, 0)
	m.ProducerEpoch, m.State = 32767, Ongoing
	if _, err := m.prepareFenceProducerEpoch(); !errors.Is(err, ErrIllegalState) {
		t.Fatalf("fence at 32767: %v", err)
	}
}
