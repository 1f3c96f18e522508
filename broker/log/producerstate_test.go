package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// idemBatch builds an idempotent batch of n records: producer id, epoch
// and first sequence as given, timestamps from ts.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
	b := record.NewBuilder(opts)
	for i := range n {
		b.Append(ts+int64(i), fmt.Appendf(nil, "p%d-s%d", pid, int64(seq)+int64(i)), []byte("value"), nil)
	}
	out, err := b.Build()
	require.NoError(t, err)
	return out
}

// logBatches reads every batch of the log, in offset order.
func logBatches(t testing.TB, l *Log) []record.Batch {
	t.Helper()
	var out []record.Batch
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		ri, err := l.Read(off, math.MaxInt32, -1)
		require.NoError(t, err)
		if ri.Region.Length == 0 {
			break
		}
		b := regionBytes(t, ri.Region)
		for len(b) > 0 {
			bt, err := record.Validate(b)
			require.NoError(t, err)
			out = append(out, bt)
			b = b[len(bt):]
			off = bt.NextOffset()
		}
	}
	return out
}

// producerSummary is what decides sequencing: each producer's epoch and
// last batch.
type producerSummary struct {
	Epoch int16
	Last  BatchMetadata
}

func summarize(entries []ProducerEntry) map[int64]producerSummary {
	out := map[int64]producerSummary{}
	for _, e := range entries {
		s := producerSummary{Epoch: e.Epoch}
		if len(e.Batches) > 0 {
			s.Last = e.Batches[len(e.Batches)-1]
		}
		out[e.ProducerID] = s
	}
	return out
}

// impliedState replays batches (with offsets assigned) into a fresh
// manager: the producer state a log of exactly these batches implies.
func impliedState(batches []record.Batch) *ProducerStateManager {
	m := NewProducerStateManager()
	for _, bt := range batches {
		if bt.ProducerID() >= 0 {
			m.Update(bt)
		}
	}
	return m
}

func snapshotFiles(t testing.TB, fsys vfs.FS, dir string) []int64 {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	var out []int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".snapshot") {
			continue
		}
		digits := strings.TrimSuffix(e.Name(), ".snapshot")
		require.Len(t, digits, 20, "snapshot name %s", e.Name())
		var off int64
		_, err := fmt.Sscanf(digits, "%d", &off)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%020d.snapshot", off), e.Name())
		out = append(out, off)
	}
	slices.Sort(out)
	return out
}

type seqStep struct {
	pid   int64
	epoch int16
	seq   int32
	n     int
	want  error // nil: appended (or a duplicate when dupOf ≥ 0)
	dupOf int   // index of the step whose offsets a duplicate returns; -1 none
}

func ok(pid int64, epoch int16, seq int32, n int) seqStep {
	return seqStep{pid: pid, epoch: epoch, seq: seq, n: n, dupOf: -1}
}

func dup(pid int64, epoch int16, seq int32, n int, of int) seqStep {
	return seqStep{pid: pid, epoch: epoch, seq: seq, n: n, dupOf: of}
}

func fail(pid int64, epoch int16, seq int32, n int, err error) seqStep {
	return seqStep{pid: pid, epoch: epoch, seq: seq, n: n, want: err, dupOf: -1}
}

// TestIdempotentAppend drives Log.Append through Kafka's sequence rules:
// each step is appended, answered as a duplicate with an earlier step's
// offsets, or refused; refused and duplicate steps leave the log as it
// was.
func TestIdempotentAppend(t *testing.T) {
	const maxSeq = math.MaxInt32
	tests := []struct {
		name  string
		steps []seqStep
	}{
		{"in sequence", []seqStep{ok(1, 0, 0, 3), ok(1, 0, 3, 2), ok(1, 0, 5, 1)}},
		{"retry of the last batch", []seqStep{ok(1, 0, 0, 3), ok(1, 0, 3, 2), dup(1, 0, 3, 2, 1), dup(1, 0, 3, 2, 1), ok(1, 0, 5, 1)}},
		{"retry of each of the last five", []seqStep{
			ok(1, 0, 0, 1), ok(1, 0, 1, 2), ok(1, 0, 3, 1), ok(1, 0, 4, 3), ok(1, 0, 7, 1), ok(1, 0, 8, 1),
			dup(1, 0, 8, 1, 5), dup(1, 0, 7, 1, 4), dup(1, 0, 4, 3, 3), dup(1, 0, 3, 1, 2), dup(1, 0, 1, 2, 1),
		}},
		{"retry of the sixth-last batch is out of order", []seqStep{
			ok(1, 0, 0, 1), ok(1, 0, 1, 1), ok(1, 0, 2, 1), ok(1, 0, 3, 1), ok(1, 0, 4, 1), ok(1, 0, 5, 1),
			fail(1, 0, 0, 1, ErrOutOfOrderSequence), dup(1, 0, 1, 1, 1),
		}},
		{"gap", []seqStep{ok(1, 0, 0, 2), fail(1, 0, 3, 1, ErrOutOfOrderSequence), ok(1, 0, 2, 1)}},
		{"sequence behind", []seqStep{ok(1, 0, 0, 5), fail(1, 0, 4, 1, ErrOutOfOrderSequence)}},
		{"overlapping a batch but not equal", []seqStep{ok(1, 0, 0, 3), fail(1, 0, 1, 2, ErrOutOfOrderSequence), fail(1, 0, 0, 2, ErrOutOfOrderSequence)}},
		{"epoch bump starts at zero", []seqStep{ok(1, 0, 0, 3), ok(1, 1, 0, 1), ok(1, 1, 1, 1)}},
		{"epoch bump not at zero", []seqStep{ok(1, 0, 0, 3), fail(1, 1, 3, 1, ErrOutOfOrderSequence), ok(1, 0, 3, 1)}},
		{"old epoch is fenced, retries included", []seqStep{
			ok(1, 0, 0, 3), ok(1, 2, 0, 1),
			fail(1, 0, 3, 1, ErrInvalidProducerEpoch), fail(1, 0, 0, 3, ErrInvalidProducerEpoch), fail(1, 1, 0, 1, ErrInvalidProducerEpoch),
			dup(1, 2, 0, 1, 1),
		}},
		{"unknown producer accepted at any sequence", []seqStep{ok(7, 3, 42, 2), ok(7, 3, 44, 1), fail(7, 3, 46, 1, ErrOutOfOrderSequence), dup(7, 3, 42, 2, 0)}},
		{"sequence wraps at MaxInt32", []seqStep{ok(1, 0, maxSeq-1, 2), ok(1, 0, 0, 2), dup(1, 0, maxSeq-1, 2, 0), fail(1, 0, maxSeq, 1, ErrOutOfOrderSequence), ok(1, 0, 2, 1)}},
		{"batch straddles the wrap", []seqStep{ok(1, 0, maxSeq-1, 3), fail(1, 0, 0, 1, ErrOutOfOrderSequence), ok(1, 0, 1, 1), dup(1, 0, maxSeq-1, 3, 0)}},
		{"producers are independent", []seqStep{ok(1, 0, 0, 1), ok(2, 0, 0, 1), ok(1, 0, 1, 1), dup(2, 0, 0, 1, 1), ok(2, 0, 1, 4), dup(1, 0, 1, 1, 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := openTestLog(t, vfs.NewMem(), smallConfig())
			infos := make([]AppendInfo, len(tt.steps))
			for i, s := range tt.steps {
				leo, size := tl.LogEndOffset(), tl.Size()
				info, err := tl.Append(idemBatch(t, s.pid, s.epoch, s.seq, s.n, 1000+int64(i)), 0)
				if s.want != nil {
					require.ErrorIs(t, err, s.want, "step %d", i)
				} else {
					require.NoError(t, err, "step %d", i)
				}
				infos[i] = info
				switch {
				case s.want != nil || s.dupOf >= 0:
					require.Equal(t, leo, tl.LogEndOffset(), "step %d appended nothing", i)
					require.Equal(t, size, tl.Size(), "step %d wrote nothing", i)
				default:
					require.False(t, info.Duplicate, "step %d", i)
					require.Equal(t, leo, info.FirstOffset, "step %d", i)
					require.Equal(t, leo+int64(s.n)-1, info.LastOffset, "step %d", i)
				}
				if s.dupOf >= 0 {
					orig := infos[s.dupOf]
					require.True(t, info.Duplicate, "step %d is a retry of step %d", i, s.dupOf)
					require.Equal(t, orig.FirstOffset, info.FirstOffset, "step %d", i)
					require.Equal(t, orig.LastOffset, info.LastOffset, "step %d", i)
					require.Equal(t, orig.MaxTimestamp, info.MaxTimestamp, "step %d", i)
					require.Equal(t, int64(-1), info.LogAppendTime)
				}
			}
			// The state is what the log implies.
			require.Equal(t, impliedState(logBatches(t, tl.Log)).Producers(), tl.ProducerState())
		})
	}
}

// TestDuplicateLeavesLogUnchanged: a retry is answered from the producer
// state; the files do not change, and with LogAppendTime the original
// append time comes back as the max timestamp.
func TestDuplicateLeavesLogUnchanged(t *testing.T) {
	mem := vfs.NewMem()
	cfg := smallConfig()
	cfg.MessageTimestampType = record.LogAppendTime
	tl := openTestLog(t, mem, cfg)
	first, err := tl.Append(idemBatch(t, 5, 0, 0, 3, 100), 0)
	require.NoError(t, err)
	tl.clock.Advance(time.Second)
	_, err = tl.Append(idemBatch(t, 5, 0, 3, 1, 100), 0)
	require.NoError(t, err)
	before := readAll(t, mem, FileName(tl.dir, 0, LogSuffix))

	tl.clock.Advance(time.Second)
	retry, err := tl.Append(idemBatch(t, 5, 0, 0, 3, 100), 0)
	require.NoError(t, err)
	require.True(t, retry.Duplicate)
	require.Equal(t, int64(0), retry.FirstOffset)
	require.Equal(t, int64(2), retry.LastOffset)
	require.Equal(t, first.LogAppendTime, retry.MaxTimestamp, "the original batch's stored timestamp")
	require.Equal(t, int64(-1), retry.LogAppendTime)
	require.Equal(t, before, readAll(t, mem, FileName(tl.dir, 0, LogSuffix)))
	require.Equal(t, int64(4), tl.LogEndOffset())
}

func TestIdempotentBatchNeedsSequence(t *testing.T) {
	tl := openTestLog(t, vfs.NewMem(), smallConfig())
	_, err := tl.Append(idemBatch(t, 5, 0, -1, 1, 100), 0)
	require.ErrorIs(t, err, ErrInvalidBatch)
	require.Zero(t, tl.LogEndOffset())
}

// TestNonIdempotentAppendKeepsNoState: batches without a producer id touch
// no producer state.
func TestNonIdempotentAppendKeepsNoState(t *testing.T) {
	tl := openTestLog(t, vfs.NewMem(), smallConfig())
	b := makeBatch(t, 2, 100, 10)
	_, err := tl.Append(slices.Clone(b), 0)
	require.NoError(t, err)
	info, err := tl.Append(b, 0)
	require.NoError(t, err)
	require.False(t, info.Duplicate)
	require.Equal(t, int64(2), info.FirstOffset)
	require.Empty(t, tl.ProducerState())
}

// rollConfig rolls every couple of small batches.
func rollConfig() Config {
	cfg := smallConfig()
	cfg.SegmentBytes = 400
	return cfg
}

// testNowMs is the fake clock's start: record timestamps near it keep
// producers from expiring in tests that reopen logs.
const testNowMs = 1_700_000_000_000

// appendRound appends one batch per producer in 1..producers, continuing
// each producer's sequence in seqs, and returns the batches as written.
// Record timestamps are testNowMs + ts.
func appendRound(t *testing.T, l *Log, seqs map[int64]int32, producers int, ts int64) [][]byte {
	t.Helper()
	var out [][]byte
	for pid := int64(1); pid <= int64(producers); pid++ {
		n := 1 + int(pid)%3
		b := idemBatch(t, pid, 0, seqs[pid], n, testNowMs+ts)
		info, err := l.Append(b, 0)
		require.NoError(t, err)
		require.False(t, info.Duplicate)
		seqs[pid] += int32(n)
		out = append(out, b)
	}
	return out
}

// TestProducerSnapshotsAtRollAndClose: every roll leaves <base>.snapshot
// holding the state implied by the batches below base, Close one at the
// log end offset; all are in Kafka's format.
func TestProducerSnapshotsAtRollAndClose(t *testing.T) {
	mem := vfs.NewMem()
	tl := openTestLog(t, mem, rollConfig())
	seqs := map[int64]int32{}
	var written []record.Batch
	for round := range 8 {
		for _, b := range appendRound(t, tl.Log, seqs, 3, int64(1000+round)) {
			written = append(written, record.Batch(b))
		}
	}
	require.Greater(t, tl.NumSegments(), 3)
	require.NoError(t, tl.Flush(tl.LogEndOffset()))
	bases := tl.SegmentBaseOffsets()
	require.Equal(t, bases[1:], snapshotFiles(t, mem, tl.dir), "one snapshot per roll, named after the new segment")

	below := func(off int64) []record.Batch {
		var out []record.Batch
		for _, b := range written {
			if b.LastOffset() < off {
				out = append(out, b)
			}
		}
		return out
	}
	for _, base := range bases[1:] {
		got, err := checkpoint.DecodeProducerSnapshot(readAll(t, mem, FileName(tl.dir, base, SnapshotSuffix)))
		require.NoError(t, err)
		require.Equal(t, impliedState(below(base)).Snapshot(), got, "snapshot at %d", base)
	}

	leo := tl.LogEndOffset()
	tl.closeLog()
	require.Equal(t, append(bases[1:], leo), snapshotFiles(t, mem, tl.dir))
	got, err := checkpoint.DecodeProducerSnapshot(readAll(t, mem, FileName(tl.dir, leo, SnapshotSuffix)))
	require.NoError(t, err)
	want := impliedState(written).Snapshot()
	require.Equal(t, want, got)
	require.Len(t, got, 3)
	for _, e := range got {
		last := written[len(written)-4+int(e.ProducerID)]
		require.Equal(t, last.LastSequence(), e.LastSequence)
		require.Equal(t, last.LastOffset(), e.LastOffset)
		require.Equal(t, last.LastOffsetDelta(), e.OffsetDelta)
		require.Equal(t, last.BaseSequence(), e.FirstSequence())
		require.Equal(t, int64(-1), e.CurrentTxnFirstOffset)
		require.Equal(t, int32(-1), e.CoordinatorEpoch)
	}
}

// TestProducerStateCleanRestart: after Close and a clean open the state
// comes from the snapshot at the log end offset (one batch per producer,
// as Kafka's format keeps): a retry of each producer's last batch is
// still a duplicate, a retry of an older one is out of order, and
// sequences continue.
func TestProducerStateCleanRestart(t *testing.T) {
	mem := vfs.NewMem()
	tl := openTestLog(t, mem, rollConfig())
	seqs := map[int64]int32{}
	var last [][]byte
	for round := range 5 {
		last = appendRound(t, tl.Log, seqs, 3, int64(1000+round))
	}
	lastInfo := map[int64]ProducerEntry{}
	for _, e := range tl.ProducerState() {
		lastInfo[e.ProducerID] = e
	}
	leo := tl.LogEndOffset()
	tl.closeLog()

	tl.reopen(WithCleanShutdown(true))
	require.Equal(t, leo, tl.LogEndOffset())
	state := tl.ProducerState()
	require.Len(t, state, 3)
	for _, e := range state {
		require.Len(t, e.Batches, 1, "from the snapshot: the last batch only")
		before := lastInfo[e.ProducerID]
		require.Equal(t, before.Batches[len(before.Batches)-1], e.Batches[0])
		require.Equal(t, before.Epoch, e.Epoch)
		require.Equal(t, before.LastTimestamp, e.LastTimestamp)
	}
	for i, b := range last {
		pid := int64(i + 1)
		bt := record.Batch(b)
		info, err := tl.Append(idemBatch(t, pid, 0, bt.BaseSequence(), int(bt.NumRecords()), 1), 0)
		require.NoError(t, err)
		require.True(t, info.Duplicate)
		require.Equal(t, bt.BaseOffset(), info.FirstOffset)
		require.Equal(t, bt.LastOffset(), info.LastOffset)
		// The batch before it is no longer known: out of order.
		prev := lastInfo[pid].Batches[len(lastInfo[pid].Batches)-2]
		_, err = tl.Append(idemBatch(t, pid, 0, prev.FirstSeq, int(prev.OffsetDelta)+1, 1), 0)
		require.ErrorIs(t, err, ErrOutOfOrderSequence)
	}
	require.Equal(t, leo, tl.LogEndOffset())
	appendRound(t, tl.Log, seqs, 3, 2000)
}

// TestProducerStateUncleanRestart crashes a log with several producers
// and random flushes: after recovery the producer state is what the
// recovered log implies, a retry of each producer's last surviving batch
// is a duplicate with its original offsets, and lost batches can be sent
// again. Only snapshots at or below the recovery point survive the open.
func TestProducerStateUncleanRestart(t *testing.T) {
	runs := 24
	if testing.Short() {
		runs = 6
	}
	for seed := range runs {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			mem := vfs.NewMem()
			cfg := crashConfig()
			clock := newFakeClock()
			l, err := Open(crashDir, cfg, WithFS(mem), WithLogger(testLogger(t)), WithClock(clock.Now))
			require.NoError(t, err)
			const producers = 4
			seqs := map[int64]int32{}
			var sent [][]byte // as appended, offsets assigned
			for i := range 40 + rng.IntN(60) {
				pid := 1 + rng.Int64N(producers)
				n := 1 + rng.IntN(4)
				b := idemBatch(t, pid, 0, seqs[pid], n, testNowMs+int64(i))
				_, err := l.Append(b, 0)
				require.NoError(t, err)
				seqs[pid] += int32(n)
				sent = append(sent, b)
				if rng.IntN(8) == 0 {
					require.NoError(t, l.Flush(l.LogEndOffset()))
				}
				if rng.IntN(10) == 0 {
					// A retry now and then, as a client would.
					info, err := l.Append(slices.Clone(sent[len(sent)-1]), 0)
					require.NoError(t, err)
					require.True(t, info.Duplicate)
				}
			}
			rp := l.RecoveryPoint()
			var crashed *vfs.MemFS
			if seed%2 == 0 {
				crashed = mem.CrashCloneWithTail(rng)
			} else {
				crashed = mem.CrashClone()
			}
			require.NoError(t, l.Close())

			l2, err := Open(crashDir, cfg, WithFS(crashed), WithLogger(testLogger(t)), WithClock(clock.Now), WithRecoveryPoint(rp))
			require.NoError(t, err)
			defer l2.Close()
			for _, off := range snapshotFiles(t, crashed, crashDir) {
				require.LessOrEqual(t, off, max(rp, l2.LogStartOffset()), "untrusted snapshots are deleted")
			}
			survived := logBatches(t, l2)
			require.Equal(t, summarize(impliedState(survived).Producers()), summarize(l2.ProducerState()))

			// The last surviving batch of each producer is a duplicate;
			// the batch after it (lost or not yet sent) is appended.
			lastOf := map[int64]record.Batch{}
			for _, bt := range survived {
				lastOf[bt.ProducerID()] = bt
			}
			for pid, bt := range lastOf {
				leo := l2.LogEndOffset()
				info, err := l2.Append(slices.Clone(sent[slices.IndexFunc(sent, func(b []byte) bool {
					return record.Batch(b).ProducerID() == pid && record.Batch(b).BaseSequence() == bt.BaseSequence()
				})]), 0)
				require.NoError(t, err)
				require.True(t, info.Duplicate, "producer %d", pid)
				require.Equal(t, bt.BaseOffset(), info.FirstOffset)
				require.Equal(t, bt.LastOffset(), info.LastOffset)
				require.Equal(t, leo, l2.LogEndOffset())

				next := record.IncrementSequence(bt.LastSequence(), 1)
				info, err = l2.Append(idemBatch(t, pid, 0, next, 1, 5000), 0)
				require.NoError(t, err)
				require.False(t, info.Duplicate)
				require.Equal(t, leo, info.FirstOffset)
			}
		})
	}
}

// TestTruncateRebuildsProducerState: truncation removes the snapshots
// above the new end and rebuilds the state from what remains.
func TestTruncateRebuildsProducerState(t *testing.T) {
	mem := vfs.NewMem()
	tl := openTestLog(t, mem, rollConfig())
	seqs := map[int64]int32{}
	for round := range 10 {
		appendRound(t, tl.Log, seqs, 3, int64(1000+round))
	}
	require.NoError(t, tl.Flush(tl.LogEndOffset()))
	all := logBatches(t, tl.Log)
	cut := all[len(all)/2].BaseOffset() // a batch boundary in the middle
	require.NotEmpty(t, slices.DeleteFunc(snapshotFiles(t, mem, tl.dir), func(o int64) bool { return o <= cut }))

	truncated, err := tl.TruncateTo(cut)
	require.NoError(t, err)
	require.True(t, truncated)
	require.Equal(t, cut, tl.LogEndOffset())
	for _, off := range snapshotFiles(t, mem, tl.dir) {
		require.LessOrEqual(t, off, cut)
	}
	kept := all[:len(all)/2]
	require.Equal(t, summarize(impliedState(kept).Producers()), summarize(tl.ProducerState()))

	// The last kept batch of producer 1 is a duplicate; its first removed
	// batch is accepted again, at the new end.
	var lastKept, firstGone record.Batch
	for _, b := range kept {
		if b.ProducerID() == 1 {
			lastKept = b
		}
	}
	for _, b := range all[len(all)/2:] {
		if b.ProducerID() == 1 {
			firstGone = b
			break
		}
	}
	info, err := tl.Append(idemBatch(t, 1, 0, lastKept.BaseSequence(), int(lastKept.NumRecords()), testNowMs), 0)
	require.NoError(t, err)
	require.True(t, info.Duplicate)
	require.Equal(t, lastKept.BaseOffset(), info.FirstOffset)
	info, err = tl.Append(idemBatch(t, 1, 0, firstGone.BaseSequence(), int(firstGone.NumRecords()), testNowMs), 0)
	require.NoError(t, err)
	require.False(t, info.Duplicate)
	require.Equal(t, cut, info.FirstOffset)

	// A reopen after the truncation agrees.
	want := summarize(tl.ProducerState())
	tl.closeLog()
	tl.reopen(WithCleanShutdown(true))
	require.Equal(t, want, summarize(tl.ProducerState()))

	require.NoError(t, tl.TruncateFullyAndStartAt(500))
	require.Empty(t, tl.ProducerState())
	require.Empty(t, snapshotFiles(t, mem, tl.dir))
	info, err = tl.Append(idemBatch(t, 1, 0, 77, 1, testNowMs), 0)
	require.NoError(t, err, "no state: any sequence")
	require.Equal(t, int64(500), info.FirstOffset)
}

// TestProducerSnapshotRetention: retention deletes snapshots below the new
// log start offset; after a recovery-point checkpoint only the last two
// segments' snapshots stay.
func TestProducerSnapshotRetention(t *testing.T) {
	mem := vfs.NewMem()
	cfg := rollConfig()
	cfg.RetentionBytes = 1200
	cfg.RetentionMs = -1
	tl := openTestLog(t, mem, cfg)
	seqs := map[int64]int32{}
	for round := range 12 {
		appendRound(t, tl.Log, seqs, 2, int64(1000+round))
	}
	require.NoError(t, tl.Flush(tl.LogEndOffset()))
	tl.SetHighWatermark(tl.LogEndOffset())
	n, err := tl.DeleteOldSegments()
	require.NoError(t, err)
	require.Positive(t, n)
	lso := tl.LogStartOffset()
	snaps := snapshotFiles(t, mem, tl.dir)
	require.Equal(t, lso, snaps[0], "the snapshot at the log start offset is kept")
	require.Equal(t, tl.SegmentBaseOffsets(), snaps)

	bases := tl.SegmentBaseOffsets()
	require.Greater(t, len(bases), 3)
	// A checkpointed recovery point lagging inside segment 1 keeps the
	// snapshot at that segment's base, which a recovery from it needs.
	tl.deleteSnapshotsBeforeRecoveryPoint(bases[1] + 1)
	require.Equal(t, bases[1:], snapshotFiles(t, mem, tl.dir))
	tl.deleteSnapshotsBeforeRecoveryPoint(tl.RecoveryPoint())
	require.Equal(t, bases[len(bases)-2:], snapshotFiles(t, mem, tl.dir), "the last two segments")
}

// TestProducerExpiry: producers idle for producer.id.expiration.ms are
// removed, and skipped when a snapshot is loaded.
func TestProducerExpiry(t *testing.T) {
	mem := vfs.NewMem()
	cfg := smallConfig()
	cfg.ProducerIDExpirationMs = 60_000
	tl := openTestLog(t, mem, cfg)
	now := tl.clock.Now().UnixMilli()
	_, err := tl.Append(idemBatch(t, 1, 0, 0, 1, now-59_000), 0)
	require.NoError(t, err)
	_, err = tl.Append(idemBatch(t, 2, 0, 0, 1, now-10_000), 0)
	require.NoError(t, err)
	require.Zero(t, tl.RemoveExpiredProducers())
	tl.clock.Advance(time.Second)
	require.Equal(t, 1, tl.RemoveExpiredProducers())
	require.Equal(t, []int64{2}, pids(tl.ProducerState()))

	_, err = tl.Append(idemBatch(t, 3, 0, 0, 1, now-30_000), 0)
	require.NoError(t, err)
	tl.closeLog()
	tl.clock.Advance(40 * time.Second)
	tl.reopen(WithCleanShutdown(true))
	require.Equal(t, []int64{2}, pids(tl.ProducerState()), "producer 3 expired while the broker was down")
}

func pids(entries []ProducerEntry) []int64 {
	var out []int64
	for _, e := range entries {
		out = append(out, e.ProducerID)
	}
	return out
}

// TestFollowerAppendUpdatesProducerState: replicated batches build the
// same state, so a follower that becomes leader deduplicates.
func TestFollowerAppendUpdatesProducerState(t *testing.T) {
	leader := openTestLog(t, vfs.NewMem(), smallConfig())
	seqs := map[int64]int32{}
	var chunk []byte
	for round := range 4 {
		for _, b := range appendRound(t, leader.Log, seqs, 3, int64(1000+round)) {
			chunk = append(chunk, b...)
		}
	}
	follower, err := Open("/data/topic-a-0", smallConfig(), WithFS(vfs.NewMem()))
	require.NoError(t, err)
	defer follower.Close()
	_, err = follower.AppendAsFollower(chunk)
	require.NoError(t, err)
	require.Equal(t, leader.ProducerState(), follower.ProducerState())
}

func TestLastStableOffsetIsHighWatermark(t *testing.T) {
	tl := openTestLog(t, vfs.NewMem(), smallConfig())
	tl.append(5, 100, 10, 0)
	require.Zero(t, tl.LastStableOffset())
	tl.SetHighWatermark(3)
	require.Equal(t, int64(3), tl.LastStableOffset())
}

// TestCorruptSnapshotFallsBack: a snapshot that fails its CRC is deleted
// and the state rebuilt from an older one and the log.
func TestCorruptSnapshotFallsBack(t *testing.T) {
	mem := vfs.NewMem()
	tl := openTestLog(t, mem, rollConfig())
	seqs := map[int64]int32{}
	for round := range 6 {
		appendRound(t, tl.Log, seqs, 3, int64(1000+round))
	}
	want := summarize(tl.ProducerState())
	leo := tl.LogEndOffset()
	tl.closeLog()
	f, err := mem.OpenFile(FileName(tl.dir, leo, SnapshotSuffix), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff}, checkpoint.ProducerSnapshotHeaderSize+3)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	tl.reopen(WithCleanShutdown(true))
	require.Equal(t, want, summarize(tl.ProducerState()))
	require.NotContains(t, snapshotFiles(t, mem, tl.dir), leo)
}

// TestKafkaProducerSnapshot opens the partition Kafka 2.7.1 left with all
// its data deleted by retention and only 00000000000000000038.snapshot
// remembering three producers: the state loads from Kafka's file,
// rewriting it gives Kafka's bytes, and the producers are deduplicated and
// sequenced from it.
func TestKafkaProducerSnapshot(t *testing.T) {
	const rel = "kafka271-zk-single-broker/kafka-logs/myTopic-0"
	kafkaSnap := fixture(t, rel+"/00000000000000000038.snapshot")
	// The snapshot's newest producer wrote at 1670071262224; a clock a
	// minute later keeps every producer unexpired.
	clock := func() time.Time { return time.UnixMilli(1670071262224 + 60_000) }
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			dir := copyFixtureDir(t, rel)
			open := func() *Log {
				l, err := Open(dir, DefaultConfig(), WithCleanShutdown(clean), WithLogStartOffset(38), WithRecoveryPoint(38),
					WithClock(clock), WithLogger(testLogger(t)))
				require.NoError(t, err)
				return l
			}
			l := open()
			require.Equal(t, int64(38), l.LogEndOffset())
			require.Equal(t, []ProducerEntry{
				{ProducerID: 4001, Batches: []BatchMetadata{{FirstSeq: 9, LastSeq: 11, FirstOffset: 9, LastOffset: 11, OffsetDelta: 2, Timestamp: 1670068129797}},
					CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, LastTimestamp: 1670068129797},
				{ProducerID: 4002, Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 11, FirstOffset: 12, LastOffset: 23, OffsetDelta: 11, Timestamp: 1670068739452}},
					CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, LastTimestamp: 1670068739452},
				{ProducerID: 4003, Batches: []BatchMetadata{{FirstSeq: 0, LastSeq: 13, FirstOffset: 24, LastOffset: 37, OffsetDelta: 13, Timestamp: 1670071262224}},
					CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, LastTimestamp: 1670071262224},
			}, l.ProducerState())
			// Closing rewrites 00000000000000000038.snapshot from the
			// loaded state: byte for byte what Kafka wrote.
			require.NoError(t, l.Close())
			got, err := os.ReadFile(filepath.Join(dir, "00000000000000000038.snapshot"))
			require.NoError(t, err)
			require.Equal(t, kafkaSnap, got)

			l = open()
			defer l.Close()
			info, err := l.Append(idemBatch(t, 4001, 0, 9, 3, 1670071300000), 0)
			require.NoError(t, err)
			require.True(t, info.Duplicate, "a retry of the batch Kafka remembered")
			require.Equal(t, int64(9), info.FirstOffset)
			require.Equal(t, int64(11), info.LastOffset)
			info, err = l.Append(idemBatch(t, 4002, 0, 12, 2, 1670071300000), 0)
			require.NoError(t, err)
			require.Equal(t, int64(38), info.FirstOffset)
			_, err = l.Append(idemBatch(t, 4003, 0, 15, 1, 1670071300000), 0)
			require.ErrorIs(t, err, ErrOutOfOrderSequence)
			_, err = l.Append(idemBatch(t, 4003, 0, 14, 1, 1670071300000), 0)
			require.NoError(t, err)
			_, err = l.Append(idemBatch(t, 4001, 1, 0, 1, 1670071300000), 0)
			require.NoError(t, err, "a new epoch starts at 0")
		})
	}
}

// TestKafkaIdempotentLogRebuild opens Kafka 3.6.2's idempotent partition,
// which has no snapshot: producer 0's state is rebuilt from its eleven
// batches, so the last five are deduplicated and older ones are out of
// order.
func TestKafkaIdempotentLogRebuild(t *testing.T) {
	dir := copyFixtureDir(t, "kafka362-zk-idempotent/kafka-logs/one-0")
	l, err := Open(dir, DefaultConfig(), WithClock(func() time.Time { return time.UnixMilli(1721564000000) }), WithLogger(testLogger(t)))
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, int64(11), l.LogEndOffset())
	state := l.ProducerState()
	require.Len(t, state, 1)
	require.Equal(t, int64(0), state[0].ProducerID)
	require.Len(t, state[0].Batches, ProducerBatchesRetained)
	require.Equal(t, int32(6), state[0].Batches[0].FirstSeq)
	require.Equal(t, int32(10), state[0].LastSequence())

	for seq := int32(6); seq <= 10; seq++ {
		info, err := l.Append(idemBatch(t, 0, 0, seq, 1, 1721564000000), 0)
		require.NoError(t, err)
		require.True(t, info.Duplicate)
		require.Equal(t, int64(seq), info.FirstOffset)
	}
	_, err = l.Append(idemBatch(t, 0, 0, 5, 1, 1721564000000), 0)
	require.ErrorIs(t, err, ErrOutOfOrderSequence)
	info, err := l.Append(idemBatch(t, 0, 0, 11, 1, 1721564000000), 0)
	require.NoError(t, err)
	require.Equal(t, int64(11), info.FirstOffset)
}

// BenchmarkProducerState is the per-batch cost of an idempotent append's
// bookkeeping (check, then record) for a known producer: no allocation.
func BenchmarkProducerState(b *testing.B) {
	m := NewProducerStateManager()
	bt := record.Batch(idemBatch(b, 1, 0, 0, 4, testNowMs))
	seq := int32(0)
	b.ReportAllocs()
	for b.Loop() {
		binary.BigEndian.PutUint32(bt[record.BaseSequenceOffset:], uint32(seq))
		if _, err := m.CheckAppend(bt); err != nil {
			b.Fatal(err)
		}
		m.Update(bt)
		seq = record.IncrementSequence(seq, 4)
	}
}

// TestManagerRestartKeepsProducerState: through the Manager, a clean
// restart (snapshot at close, marker) and a crash after a recovery-point
// checkpoint (trusted snapshot below it, replay of the rest) both keep
// every producer's last batch, so retries stay duplicates.
func TestManagerRestartKeepsProducerState(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			mem := vfs.NewMem()
			cfg := managerConfig(t, mem)
			cfg.Clock = newFakeClock().Now
			m, err := OpenManager(cfg)
			require.NoError(t, err)
			l, err := m.CreateLog("events", 0, m.ConfigFor("events"))
			require.NoError(t, err)
			seqs := map[int64]int32{}
			var last [][]byte
			for round := range 30 {
				last = appendRound(t, l, seqs, 3, int64(round))
			}
			require.Greater(t, l.NumSegments(), 2)
			require.NoError(t, l.Flush(l.LogEndOffset()))
			require.NoError(t, m.CheckpointRecoveryPoints())
			want := summarize(l.ProducerState())
			fsys := vfs.FS(mem)
			if !clean {
				fsys = mem.CrashClone()
			}
			require.NoError(t, m.Close())

			cfg2 := managerConfig(t, fsys)
			cfg2.Clock = cfg.Clock
			m2, err := OpenManager(cfg2)
			require.NoError(t, err)
			defer m2.Close()
			l2, ok := m2.GetLog("events", 0)
			require.True(t, ok)
			require.Equal(t, want, summarize(l2.ProducerState()))
			for i, b := range last {
				bt := record.Batch(b)
				info, err := l2.Append(idemBatch(t, int64(i+1), 0, bt.BaseSequence(), int(bt.NumRecords()), testNowMs), 0)
				require.NoError(t, err)
				require.True(t, info.Duplicate)
				require.Equal(t, bt.BaseOffset(), info.FirstOffset)
			}
		})
	}
}
