package inspect

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/internal/fixtures"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// fixtureFiles lists every data file of one fixture directory, relative to
// it and sorted: everything but the provenance notes and the expected dumps.
func fixtureFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		base := filepath.Base(p)
		if base == "SOURCE.txt" || base == "README.md" || strings.HasPrefix(base, "expected-dump.") {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	require.NoError(t, err)
	slices.Sort(out)
	return out
}

// isRawRecords reports files holding bare record bytes cut from fetch
// responses: they are dumped as .log content.
func isRawRecords(name string) bool {
	return strings.HasSuffix(name, ".records") || strings.HasSuffix(name, ".messageset")
}

// dumpResult is one in-process dump.
type dumpResult struct {
	stdout, stderr string
	err            error
}

// runDump dumps files (relative to dir) in one Dumper, as one qk
// dump-segment invocation would, with dir as the working directory.
func runDump(dir string, opts Options, files ...string) dumpResult {
	var out, errb bytes.Buffer
	opts.WorkDir = dir
	d := New(vfs.OS, &out, &errb, opts)
	for _, f := range files {
		if isRawRecords(f) {
			d.DumpLogFile(f)
		} else {
			d.DumpFile(f)
		}
	}
	err := d.Finish()
	return dumpResult{stdout: out.String(), stderr: errb.String(), err: err}
}

// goldenModes are the dump modes every fixture is pinned in.
var goldenModes = []struct {
	name  string
	flags string
	opts  Options
	only  func(dir string) bool // nil: every fixture dir
}{
	{name: "shallow", opts: Options{}},
	{name: "deep-iteration", flags: "--deep-iteration", opts: Options{DeepIteration: true}},
	{name: "print-data-log", flags: "--print-data-log", opts: Options{PrintDataLog: true}},
	{name: "json", flags: "--json --print-data-log", opts: Options{JSON: true, PrintDataLog: true}},
	{name: "verify-index-only", flags: "--verify-index-only", opts: Options{VerifyIndexOnly: true}, only: hasIndexes},
	{name: "index-sanity-check", flags: "--index-sanity-check", opts: Options{IndexSanityCheck: true}, only: hasIndexes},
	{name: "offsets-decoder", flags: "--offsets-decoder", opts: Options{OffsetsDecoder: true}, only: hasConsumerOffsets},
}

func hasIndexes(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*.index"))
	n, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*", "*.index"))
	return len(m)+len(n) > 0
}

func hasConsumerOffsets(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*", "__consumer_offsets-*"))
	n, _ := filepath.Glob(filepath.Join(dir, "*", "*", "__consumer_offsets-*"))
	return len(m)+len(n) > 0
}

// maxGoldenStdout bounds what a golden file keeps verbatim. Beyond it (the
// 1 MB segment's record dumps) the golden keeps the head, the tail, the
// line count and a SHA-256 of the whole output, which still pins every
// byte.
const maxGoldenStdout = 256 << 10

// TestGoldenFixtures dumps every file of every Kafka fixture in each mode
// and compares with testdata/golden/<fixture>.<mode>.golden.
func TestGoldenFixtures(t *testing.T) {
	root := fixtures.Dir(t)
	dirs, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, de := range dirs {
		if !de.IsDir() {
			continue
		}
		dir := filepath.Join(root, de.Name())
		files := fixtureFiles(t, dir)
		for _, m := range goldenModes {
			if m.only != nil && !m.only(dir) {
				continue
			}
			t.Run(de.Name()+"/"+m.name, func(t *testing.T) {
				r := runDump(dir, m.opts, files...)
				got := renderGolden(root, m.flags, files, r)
				checkGolden(t, filepath.Join("testdata", "golden", de.Name()+"."+m.name+".golden"), got)
			})
		}
	}
}

// renderGolden lays out one run: the command, stdout, stderr and the
// result, with the machine's fixture path replaced by $FIXTURES.
func renderGolden(root, flags string, files []string, r dumpResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ qk dump-segment %s\n", strings.TrimSpace(flags+" "+strings.Join(files, " ")))
	stdout := r.stdout
	if len(stdout) > maxGoldenStdout {
		lines := strings.SplitAfter(stdout, "\n")
		sum := sha256.Sum256([]byte(stdout))
		fmt.Fprintf(&b, "-- stdout: %d bytes, %d lines, sha256 %x; first 200 and last 50 lines --\n", len(stdout), len(lines)-1, sum)
		stdout = strings.Join(lines[:200], "") + "...\n" + strings.Join(lines[len(lines)-51:], "")
	} else {
		b.WriteString("-- stdout --\n")
	}
	b.WriteString(stdout)
	b.WriteString("-- stderr --\n")
	b.WriteString(r.stderr)
	b.WriteString("-- result --\n")
	if r.err != nil {
		fmt.Fprintf(&b, "error: %v\n", r.err)
	} else {
		b.WriteString("ok\n")
	}
	return strings.ReplaceAll(b.String(), root, "$FIXTURES")
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./inspect -update")
	require.Equal(t, string(want), got, "golden %s differs: run go test ./inspect -update and review the diff", path)
}
