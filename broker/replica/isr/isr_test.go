package isr

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestLeader runs the scripts in testdata/leader/. Verbs:
//
//	leader id=0 epoch=1 replicas=0,1,2 isr=0,1,2 leo=0 hw=0 now=0
//	append leo=5                     the leader's log grew to 5
//	fetch replica=1 offset=5 now=100 a follower fetch
//	shrink now=20000 lag=10000       which ISR followers are out of sync
//	expand                           which followers may join the ISR
//	propose isr=0,1 | commit isr=0,1 | abort
//
// Each verb prints the high watermark (and "advanced" when it moved), the
// ISR, the pending change and every follower's state.
func TestLeader(t *testing.T) {
	datadriven.Walk(t, "testdata/leader", func(t *testing.T, path string) {
		var l *Leader
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(k string) string {
				for _, a := range d.CmdArgs {
					if a.Key == k {
						return strings.Join(a.Vals, ",")
					}
				}
				d.Fatalf(t, "%s: missing %s=", d.Cmd, k)
				return ""
			}
			num := func(k string) int64 {
				n, err := strconv.ParseInt(arg(k), 10, 64)
				if err != nil {
					d.Fatalf(t, "%s=%s: %v", k, arg(k), err)
				}
				return n
			}
			ids := func(k string) []int32 {
				var out []int32
				for _, s := range strings.Split(arg(k), ",") {
					if s == "" {
						continue
					}
					n, err := strconv.ParseInt(s, 10, 32)
					if err != nil {
						d.Fatalf(t, "%s=%s: %v", k, arg(k), err)
					}
					out = append(out, int32(n))
				}
				return out
			}
			var b strings.Builder
			advanced := false
			switch d.Cmd {
			case "leader":
				l = NewLeader(State{ID: int32(num("id")), Epoch: int32(num("epoch")), Replicas: ids("replicas"),
					ISR: ids("isr"), LEO: num("leo"), HW: num("hw")}, num("now"))
			case "append":
				advanced = l.Appended(num("leo"))
			case "fetch":
				var err error
				advanced, err = l.FollowerFetched(int32(num("replica")), num("offset"), num("now"))
				if err != nil {
					fmt.Fprintf(&b, "error: %v\n", err)
				}
			case "shrink":
				fmt.Fprintf(&b, "out of sync: %v\n", l.ToShrink(num("now"), num("lag")))
			case "expand":
				fmt.Fprintf(&b, "may join: %v\n", l.ToExpand())
			case "propose":
				l.Propose(ids("isr"))
			case "commit":
				advanced = l.Commit(ids("isr"))
			case "abort":
				advanced = l.Abort()
			default:
				d.Fatalf(t, "unknown verb %s", d.Cmd)
			}
			fmt.Fprintf(&b, "hw=%d leo=%d", l.HW(), l.LEO())
			if advanced {
				b.WriteString(" (advanced)")
			}
			fmt.Fprintf(&b, " isr=%v", l.ISR())
			if p := l.Pending(); p != nil {
				fmt.Fprintf(&b, " pending=%v", p)
			}
			b.WriteString("\n")
			var fs []int32
			for id := range l.followers {
				fs = append(fs, id)
			}
			slices.Sort(fs)
			for _, id := range fs {
				f, _ := l.Follower(id)
				fmt.Fprintf(&b, "  %d: leo=%d caught-up=%d\n", id, f.LEO, f.LastCaughtUpMs)
			}
			return b.String()
		})
	})
}

// replicaLog is a follower's or leader's log as the truncation scenarios
// need it: its records and its leader-epoch entries.
type replicaLog struct {
	records []string
	epochs  [][2]int64 // epoch, start offset
	hw      int64
}

func (r replicaLog) leo() int64 { return int64(len(r.records)) }

// endFor is OffsetForLeaderEpoch on this log.
func (r replicaLog) endFor(epoch int32) EpochEnd {
	out := EpochEnd{Epoch: -1, EndOffset: -1}
	for i, e := range r.epochs {
		if int32(e[0]) > epoch {
			break
		}
		end := r.leo()
		if i+1 < len(r.epochs) {
			end = r.epochs[i+1][1]
		}
		out = EpochEnd{Epoch: int32(e[0]), EndOffset: end}
	}
	return out
}

func (r replicaLog) latestEpoch() int32 { return int32(r.epochs[len(r.epochs)-1][0]) }

// truncateAgainst runs the follower's side of the protocol against the
// leader until truncation is done, and returns the offset.
func truncateAgainst(follower, leader replicaLog) int64 {
	epoch := follower.latestEpoch()
	for {
		tr := TruncateTo(leader.endFor(epoch), follower.endFor(leader.endFor(epoch).Epoch), follower.leo(), follower.hw)
		if tr.Done {
			return tr.Offset
		}
		follower.records = follower.records[:tr.Offset]
		epoch = follower.endFor(leader.endFor(epoch).Epoch).Epoch
	}
}

// The two failures of high-watermark truncation (KIP-101), replayed on
// the rule: with leader epochs the follower keeps the acknowledged m2 in
// the first and drops the divergent m2 in the second; truncating to the
// high watermark would lose m2 in the first and keep it in the second.
func TestTruncationScenarios(t *testing.T) {
	t.Run("loss", func(t *testing.T) {
		// A leads at epoch 0 with m1 m2 and HW 2 (m2 acknowledged); B has
		// both but its HW is still 1. B restarts and asks A.
		a := replicaLog{records: []string{"m1", "m2"}, epochs: [][2]int64{{0, 0}}, hw: 2}
		b := replicaLog{records: []string{"m1", "m2"}, epochs: [][2]int64{{0, 0}}, hw: 1}
		if got := truncateAgainst(b, a); got != 2 {
			t.Fatalf("B truncates to %d, want 2: it keeps the acknowledged m2", got)
		}
		if hwRule := b.hw; hwRule != 1 {
			t.Fatalf("the high-watermark rule would truncate to %d", hwRule)
		}
	})
	t.Run("divergence", func(t *testing.T) {
		// A led at epoch 0 with m1 m2 (HW 2); B had m1 only. A died, B led
		// epoch 1 and appended m3 at offset 1. A returns and asks B.
		a := replicaLog{records: []string{"m1", "m2"}, epochs: [][2]int64{{0, 0}}, hw: 2}
		b := replicaLog{records: []string{"m1", "m3"}, epochs: [][2]int64{{0, 0}, {1, 1}}, hw: 2}
		got := truncateAgainst(a, b)
		if got != 1 {
			t.Fatalf("A truncates to %d, want 1: m2 at offset 1 diverges from B's m3", got)
		}
		if a.hw != 2 {
			t.Fatal("setup")
		}
		// The high-watermark rule keeps A's m2 where B has m3.
		if kept := a.records[:min(a.hw, a.leo())]; kept[1] == b.records[1] {
			t.Fatal("setup: the logs should differ at offset 1")
		}
	})
	t.Run("several epochs behind", func(t *testing.T) {
		// The follower has epochs 0 and 2 (2 led by a leader whose records
		// the new leader never got); the leader has 0, 1, 3.
		f := replicaLog{records: []string{"a", "b", "x", "y"}, epochs: [][2]int64{{0, 0}, {2, 2}}, hw: 1}
		l := replicaLog{records: []string{"a", "b", "c", "d", "e"}, epochs: [][2]int64{{0, 0}, {1, 2}, {3, 4}}, hw: 5}
		if got := truncateAgainst(f, l); got != 2 {
			t.Fatalf("truncates to %d, want 2: the end of epoch 0, the last one both have", got)
		}
	})
}

func TestTruncateTo(t *testing.T) {
	for _, c := range []struct {
		name          string
		leader, own   EpochEnd
		leo, hw, want int64
		done          bool
	}{
		{"same epoch, leader shorter", EpochEnd{3, 10}, EpochEnd{3, 12}, 12, 8, 10, true},
		{"same epoch, follower shorter", EpochEnd{3, 10}, EpochEnd{3, 9}, 9, 8, 9, true},
		{"leader older epoch: truncate to own end of it", EpochEnd{2, 10}, EpochEnd{2, 7}, 12, 5, 7, true},
		{"follower lacks the leader's epoch", EpochEnd{2, 10}, EpochEnd{1, 6}, 12, 5, 6, false},
		{"leader has no epoch that old", EpochEnd{-1, 4}, EpochEnd{0, 9}, 9, 2, 4, true},
		{"unknown answer: high watermark", EpochEnd{-1, -1}, EpochEnd{0, 9}, 9, 2, 2, true},
	} {
		got := TruncateTo(c.leader, c.own, c.leo, c.hw)
		if got.Offset != c.want || got.Done != c.done {
			t.Errorf("%s: got %+v, want offset %d done %v", c.name, got, c.want, c.done)
		}
	}
	if FollowerHW(10, 7) != 7 || FollowerHW(5, 7) != 5 {
		t.Fatal("FollowerHW")
	}
}
