package embedded_test

import (
	"fmt"
	"testing"

	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/metadata/embedded"
	"github.com/qk-project/qk/broker/vfs"
)

// partitionState is the size of a typical /brokers/topics/t/partitions/p/state.
var partitionState = []byte(`{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0,1,2]}`)

func benchStore(b *testing.B, fsys string) *embedded.Store {
	b.Helper()
	var s *embedded.Store
	var err error
	switch fsys {
	case "none":
		s = embedded.New()
	case "mem":
		s, err = embedded.Open(vfs.NewMem(), dir)
	case "os":
		s, err = embedded.Open(vfs.OS, b.TempDir())
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkSet(b *testing.B) {
	for _, fsys := range []string{"none", "mem", "os"} {
		b.Run("fsys="+fsys, func(b *testing.B) {
			s := benchStore(b, fsys)
			if _, err := s.Create(ctx, "/state", partitionState, 0); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(partitionState)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Set(ctx, "/state", partitionState, metadata.AnyVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b, "none")
	if _, err := s.Create(ctx, "/state", partitionState, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Get(ctx, "/state"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen replays a log of n records (one partition state each).
func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			mem := vfs.NewMem()
			s, err := embedded.Open(mem, dir, embedded.WithSnapshotEvery(1<<30, 1<<40))
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if _, err := s.Create(ctx, fmt.Sprintf("/p%d", i), partitionState, 0); err != nil {
					b.Fatal(err)
				}
			}
			image := mem.CrashClone()
			s.Close()
			b.ReportAllocs()
			for b.Loop() {
				s, err := embedded.Open(image.CrashClone(), dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
