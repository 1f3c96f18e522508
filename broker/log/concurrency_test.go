package log

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/vfs"
)

// TestConcurrentUse runs appends, reads, timestamp lookups, flushes and
// retention at once (meant for -race): every region a reader gets starts
// with a valid batch holding the offset it asked for.
func TestConcurrentUse(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 8000
	cfg.IndexIntervalBytes = 500
	cfg.RetentionBytes = 40_000
	cfg.FileDeleteDelayMs = 60_000
	tl := openTestLog(t, vfs.NewMem(), cfg)
	n := 400
	if testing.Short() {
		n = 100
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	wg.Go(func() {
		defer done.Store(true)
		for i := range n {
			b := makeBatch(t, 1+i%3, int64(i), 300)
			if _, err := tl.Append(b, int32(i/100)); err != nil {
				report(err)
				return
			}
			tl.SetHighWatermark(tl.LogEndOffset())
		}
	})
	for r := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 0))
			for !done.Load() {
				lso, leo := tl.LogStartOffset(), tl.LogEndOffset()
				if leo == lso {
					continue
				}
				off := lso + rng.Int64N(leo-lso)
				ri, err := tl.Read(off, 1, -1)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					report(err)
					return
				}
				buf := make([]byte, ri.Region.Length)
				if _, err := ri.Region.File.ReadAt(buf, ri.Region.Position); err != nil {
					report(err)
					return
				}
				bt, err := record.Validate(buf)
				if err != nil {
					report(err)
					return
				}
				if bt.BaseOffset() > off || bt.LastOffset() < off {
					report(errors.New("region does not hold the offset"))
					return
				}
				if _, _, err := tl.FetchOffsetByTimestamp(int64(rng.IntN(n))); err != nil {
					report(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		// Runs while appends go on, and until retention has deleted
		// something at least once (on a fast run the appender can finish
		// before the log outgrows retention.bytes); bounded either way.
		for extra := 0; !done.Load() || (tl.LogStartOffset() == 0 && extra < 100); {
			if done.Load() {
				extra++
			}
			if err := tl.Flush(tl.LogEndOffset()); err != nil {
				report(err)
				return
			}
			if _, err := tl.DeleteOldSegments(); err != nil {
				report(err)
				return
			}
		}
	})
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	require.Greater(t, tl.LogStartOffset(), int64(0), "retention ran")
	tl.closeLog()
	checkDir(t, tl.fsys, tl.dir, dirCheck{leaderIndex: true})
}
