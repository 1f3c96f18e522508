package group

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/qk-project/qk/broker/record"
)

// TestFixtureRecords decodes every __consumer_offsets record Kafka wrote
// in the fixtures and re-encodes it to the same bytes.
func TestFixtureRecords(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "fixtures")
	for _, tc := range []struct {
		glob           string
		offsets, group int // at least
	}{
		{"kafka280-zk-snappy-offsets/kafka-logs/__consumer_offsets-16/*.log", 42, 27},
		{"kafka271-zk-single-broker/kafka-logs/__consumer_offsets-*/*.log", 1, 1},
	} {
		t.Run(tc.glob, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(root, tc.glob))
			if err != nil || len(files) == 0 {
				t.Fatalf("no fixture files for %s: %v", tc.glob, err)
			}
			var offsets, groups int
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				it := record.NewIterator(data)
				for it.Next() {
					b := it.Entry().Batch
					if b == nil || b.IsControl() {
						continue
					}
					err := b.Iterate(func(r *record.Record) error {
						k, err := ParseKey(r.Key)
						if err != nil {
							t.Fatalf("%s: key at %d: %v", f, r.Offset(b), err)
						}
						if got := k.AppendTo(nil); !bytes.Equal(got, r.Key) {
							t.Fatalf("%s: key at %d re-encodes to %x, want %x", f, r.Offset(b), got, r.Key)
						}
						if r.Value == nil {
							return nil
						}
						var again []byte
						switch {
						case k.IsOffset():
							v, err := ParseOffsetValue(r.Value)
							if err != nil {
								t.Fatalf("%s: offset value at %d: %v", f, r.Offset(b), err)
							}
							again = v.AppendTo(nil)
							if v.Version == 3 {
								offsets++
							}
						case k.IsGroup():
							v, err := ParseGroupValue(r.Value)
							if err != nil {
								t.Fatalf("%s: group value at %d: %v", f, r.Offset(b), err)
							}
							again = v.AppendTo(nil)
							if v.Version == 3 {
								groups++
							}
						default:
							return nil
						}
						if !bytes.Equal(again, r.Value) {
							t.Fatalf("%s: value at %d re-encodes to\n%x\nwant\n%x", f, r.Offset(b), again, r.Value)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d OffsetCommit v3, %d GroupMetadata v3", offsets, groups)
			if offsets < tc.offsets || groups < tc.group {
				t.Fatalf("got %d offset and %d group records, want at least %d and %d", offsets, groups, tc.offsets, tc.group)
			}
		})
	}
}

func TestFixtureGroupValue(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "kafka280-zk-snappy-offsets", "kafka-logs", "__consumer_offsets-16", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	it := record.NewIterator(data)
	for it.Next() {
		b := it.Entry().Batch
		_ = b.Iterate(func(r *record.Record) error {
			k, _ := ParseKey(r.Key)
			if !k.IsGroup() || len(r.Value) != 484 {
				return nil
			}
			v, err := ParseGroupValue(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			if v.Generation != 1 {
				return nil
			}
			found = true
			if k.Group != "simple-consumer-example" || v.ProtocolType != "consumer" || deref(v.Protocol) != "range" || len(v.Members) != 2 ||
				v.Members[0].RebalanceTimeout != 300000 || v.Members[0].SessionTimeout != 10000 || v.Members[0].ClientHost != "/192.168.1.10" {
				t.Fatalf("unexpected group value %+v", v)
			}
			return nil
		})
	}
	if !found {
		t.Fatal("no generation 1 group record of 484 bytes")
	}
}
