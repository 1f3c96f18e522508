package metadata_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/qk-project/qk/internal/fixtures"
)

// zkNode is one znode of a ZooKeeper snapshot.
type zkNode struct {
	Path           string
	Data           []byte // nil for null data
	Czxid, Mzxid   int64
	Ctime, Mtime   int64
	Version        int32
	CVersion       int32
	EphemeralOwner int64
	Pzxid          int64
}

// readZKSnapshot parses a ZooKeeper snapshot file (FileSnap, jute
// encoding, big-endian): header, sessions, ACL cache, then the nodes in
// DataTree order until the "/" terminator. Only what the tests need.
func readZKSnapshot(t *testing.T, rel string) []zkNode {
	t.Helper()
	b := fixtures.Read(t, rel) // written by real Kafka and ZooKeeper
	r := &juteReader{b: b}
	if magic := r.i32(); magic != 0x5a4b534e { // "ZKSN"
		t.Fatalf("%s: magic %#x", rel, magic)
	}
	r.i32() // version
	r.i64() // database id
	for n := r.i32(); n > 0; n-- {
		r.i64() // session id
		r.i32() // timeout
	}
	for n := r.i32(); n > 0; n-- { // ACL cache: index -> []ACL
		r.i64()
		for m := r.i32(); m > 0; m-- {
			r.i32()    // perms
			r.buffer() // scheme
			r.buffer() // id
		}
	}
	var nodes []zkNode
	for {
		p := string(r.buffer())
		if p == "/" {
			break
		}
		if p == "" {
			p = "/"
		}
		n := zkNode{Path: p, Data: r.buffer()}
		r.i64() // ACL index
		n.Czxid, n.Mzxid, n.Ctime, n.Mtime = r.i64(), r.i64(), r.i64(), r.i64()
		n.Version, n.CVersion = r.i32(), r.i32()
		r.i32() // aversion
		n.EphemeralOwner, n.Pzxid = r.i64(), r.i64()
		if r.err != nil {
			t.Fatalf("%s: %v", rel, r.err)
		}
		nodes = append(nodes, n)
	}
	if r.err != nil {
		t.Fatalf("%s: %v", rel, r.err)
	}
	return nodes
}

type juteReader struct {
	b   []byte
	off int
	err error
}

func (r *juteReader) take(n int) []byte {
	if r.err != nil || n < 0 || r.off+n > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("short read of %d bytes at %d", n, r.off)
		}
		return make([]byte, max(n, 0))
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *juteReader) i32() int32 { return int32(binary.BigEndian.Uint32(r.take(4))) }
func (r *juteReader) i64() int64 { return int64(binary.BigEndian.Uint64(r.take(8))) }

// buffer reads a jute buffer or string: int32 length (-1 for null), bytes.
func (r *juteReader) buffer() []byte {
	n := r.i32()
	if n < 0 {
		return nil
	}
	return r.take(int(n))
}
