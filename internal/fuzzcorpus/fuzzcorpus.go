// Package fuzzcorpus writes a fuzz target's seed inputs as a committed
// corpus, testdata/fuzz/<FuzzName>/<name>, in the format go test reads
// ("go test fuzz v1", then one Go literal a line), so that a plain
// go test runs them and go test -fuzz starts from them.
//
// Seeds are built in the tests (kmsg encodes the requests), added with
// f.Add and, when the test runs with -update, also written here: the
// committed files are what the code says, regenerated rather than edited.
//
//	go test fuzz v1
//	int16(3)
//	int16(12)
//	[]byte("\x00\x00\x00\x01...")
package fuzzcorpus

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Marshal encodes values as go test's corpus files do. It supports the
// types qk's fuzz targets take: []byte, string, bool, byte and the
// integer types other than rune.
func Marshal(values ...any) ([]byte, error) {
	b := bytes.NewBufferString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(b, "string(%q)\n", v)
		case byte:
			fmt.Fprintf(b, "byte(%q)\n", v)
		case int, int8, int16, int64, uint, uint16, uint32, uint64, bool:
			fmt.Fprintf(b, "%T(%v)\n", v, v)
		default:
			return nil, fmt.Errorf("fuzzcorpus: unsupported type %T", v)
		}
	}
	return b.Bytes(), nil
}

// Write replaces the seed files of testdata/fuzz/<target>/ (relative to
// the package directory, where go test runs) with one file per seed,
// named seed-<name>. Other files there (inputs the fuzzer found, kept as
// regression tests) are left alone.
func Write(t testing.TB, target string, seeds map[string][]any) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	old, err := filepath.Glob(filepath.Join(dir, "seed-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, vals := range seeds {
		data, err := Marshal(vals...)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
