package inspect

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/qk-project/qk/broker/log/checkpoint"
	"github.com/qk-project/qk/broker/vfs"
)

// DefaultMaxMessageSize is kafka-dump-log.sh's --max-message-size default:
// how many bytes after an offset-index entry's position are read to find
// the batch it points at.
const DefaultMaxMessageSize = 5 * 1024 * 1024

// Options are kafka-dump-log.sh's switches plus qk's --json.
type Options struct {
	// DeepIteration prints one line per record under each batch.
	DeepIteration bool
	// PrintDataLog adds key: and payload: to record lines; implies
	// DeepIteration.
	PrintDataLog bool
	// SkipRecordMetadata leaves only key and payload on record lines.
	SkipRecordMetadata bool
	// VerifyIndexOnly checks .index/.timeindex entries against the log
	// without printing them.
	VerifyIndexOnly bool
	// IndexSanityCheck runs only the check a broker runs on startup.
	IndexSanityCheck bool
	// MaxMessageSize bounds the read behind an offset-index entry; 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxBytes dumps only the first MaxBytes bytes of a .log; 0 means all.
	// As in Kafka, a limit also suppresses the "invalid bytes" trailer,
	// since a batch cut by the limit is not damage.
	MaxBytes int
	// OffsetsDecoder decodes __consumer_offsets keys and values as JSON;
	// implies PrintDataLog.
	OffsetsDecoder bool
	// JSON writes one JSON object per line instead of Kafka's text lines.
	JSON bool
	// WorkDir resolves relative file names and forms the absolute paths
	// the verification reports print (Kafka prints File.getAbsolutePath).
	// Empty means the process's working directory.
	WorkDir string
}

func (o Options) deep() bool      { return o.DeepIteration || o.printData() }
func (o Options) printData() bool { return o.PrintDataLog || o.OffsetsDecoder }
func (o Options) maxMessageSize() int {
	if o.MaxMessageSize <= 0 {
		return DefaultMaxMessageSize
	}
	return o.MaxMessageSize
}

// Problem is one reason a dump ends with a non-zero status: corrupt or torn
// data, a CRC mismatch, an index whose log is missing. Verification
// findings that healthy data also produces (follower index mismatches,
// non-consecutive offsets after compaction) are reports, not problems.
type Problem struct {
	File   string // the file name as given
	Reason string // the text after "Error: "
}

// Error is what Dump returns when at least one Problem was found. Every
// problem has already been printed to the error stream as "Error: …".
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Reason
	}
	more := "problems"
	if len(e.Problems) == 2 {
		more = "problem"
	}
	return fmt.Sprintf("%s (and %d more %s)", e.Problems[0].Reason, len(e.Problems)-1, more)
}

// Dumper prints Kafka segment, index and checkpoint files. It keeps the
// verification findings of all files and prints them after the last file,
// as kafka-dump-log.sh does, so one Dumper serves one command invocation.
type Dumper struct {
	fsys vfs.FS
	out  *bufio.Writer
	errw io.Writer
	opts Options

	// Verification reports, per file in the order the files were dumped.
	indexMismatches []pairReport
	timeMismatches  []pairReport
	timeOutOfOrder  []pairReport
	timeNotFound    []pairReport
	nonConsecutive  []pairReport

	problems []Problem
}

// pairReport is one file's list of (expected, found) pairs.
type pairReport struct {
	path  string
	pairs [][2]int64
}

// New returns a Dumper reading through fsys and writing the dump to stdout
// and reports and errors to stderr.
func New(fsys vfs.FS, stdout, stderr io.Writer, opts Options) *Dumper {
	if fsys == nil {
		fsys = vfs.OS
	}
	if opts.WorkDir == "" {
		if wd, err := os.Getwd(); err == nil {
			opts.WorkDir = wd
		}
	}
	return &Dumper{fsys: fsys, out: bufio.NewWriterSize(stdout, 64<<10), errw: stderr, opts: opts}
}

// Dump dumps each file, then prints the verification reports. It returns
// an *Error when any file had a problem.
func (d *Dumper) Dump(files ...string) error {
	for _, f := range files {
		d.DumpFile(f)
	}
	return d.Finish()
}

// DumpFile dumps one file, dispatching on its suffix like Kafka's tool, and
// on the fixed names of the log-directory checkpoint files, which Kafka's
// tool ignores.
func (d *Dumper) DumpFile(name string) {
	f := d.newFile(name)
	if !d.opts.JSON {
		d.printf("Dumping %s\n", f.name)
	}
	switch {
	case f.suffix == ".log":
		d.dumpLog(f, true)
	case f.suffix == ".checkpoint":
		d.dumpKRaftSnapshot(f)
	case f.suffix == ".index":
		d.dumpIndex(f)
	case f.suffix == ".timeindex":
		d.dumpTimeIndex(f)
	case f.suffix == ".snapshot":
		d.dumpProducerSnapshot(f)
	case f.suffix == ".txnindex":
		d.dumpTxnIndex(f)
	case offsetCheckpointNames[f.base]:
		d.dumpOffsetCheckpoint(f)
	case f.base == leaderEpochCheckpointName:
		d.dumpLeaderEpochCheckpoint(f)
	case f.base == partitionMetadataName:
		d.dumpPartitionMetadata(f)
	case f.base == metaPropertiesName:
		d.dumpMetaProperties(f)
	case f.base == checkpoint.CleanShutdownFile:
		d.dumpCleanShutdown(f)
	default:
		d.flush()
		fmt.Fprintf(d.errw, "Ignoring unknown file %s\n", f.name)
	}
}

// DumpLogFile dumps name as .log content whatever its suffix: raw record
// bytes cut from a fetch response, a message set, a copy of a segment. The
// "Log starting offset" line is printed only for names ending in .log.
func (d *Dumper) DumpLogFile(name string) {
	f := d.newFile(name)
	if !d.opts.JSON {
		d.printf("Dumping %s\n", f.name)
	}
	d.dumpLog(f, f.suffix == ".log")
}

// Finish prints the verification reports collected so far and returns the
// problems as an *Error, or nil.
func (d *Dumper) Finish() error {
	d.flush()
	for _, r := range d.indexMismatches {
		fmt.Fprintf(d.errw, "Mismatches in :%s\n", r.path)
		// Kafka prepends each mismatch to a list: newest first.
		for i := len(r.pairs) - 1; i >= 0; i-- {
			fmt.Fprintf(d.errw, "  Index offset: %d, log offset: %d\n", r.pairs[i][0], r.pairs[i][1])
		}
	}
	for _, r := range d.timeMismatches {
		fmt.Fprintf(d.errw, "Found timestamp mismatch in :%s\n", r.path)
		for _, p := range r.pairs {
			fmt.Fprintf(d.errw, "  Index timestamp: %d, log timestamp: %d\n", p[0], p[1])
		}
	}
	for _, r := range d.timeOutOfOrder {
		fmt.Fprintf(d.errw, "Found out of order timestamp in :%s\n", r.path)
		for _, p := range r.pairs {
			fmt.Fprintf(d.errw, "  Index timestamp: %d, Previously indexed timestamp: %d\n", p[0], p[1])
		}
	}
	for _, r := range d.timeNotFound {
		fmt.Fprintln(d.errw, "The following indexed offsets are not found in the log.")
		for _, p := range r.pairs {
			fmt.Fprintf(d.errw, "Indexed offset: %d, found log offset: %d\n", p[0], p[1])
		}
	}
	for _, r := range d.nonConsecutive {
		fmt.Fprintf(d.errw, "Non-consecutive offsets in %s\n", r.path)
		for i := len(r.pairs) - 1; i >= 0; i-- {
			fmt.Fprintf(d.errw, "  %d is followed by %d\n", r.pairs[i][0], r.pairs[i][1])
		}
	}
	d.indexMismatches, d.timeMismatches, d.timeOutOfOrder, d.timeNotFound, d.nonConsecutive = nil, nil, nil, nil, nil
	if len(d.problems) == 0 {
		return nil
	}
	err := &Error{Problems: d.problems}
	d.problems = nil
	return err
}

// file is one command-line argument, resolved.
type file struct {
	name   string // as given, with Java's File normalisation (see javaPath)
	path   string // absolute, as File.getAbsolutePath prints it
	base   string // last path element
	suffix string // from the last '.', "" when there is none
	dir    string // absolute directory
}

func (d *Dumper) newFile(name string) file {
	name = javaPath(name)
	path := name
	if !strings.HasPrefix(path, "/") {
		if d.opts.WorkDir == "/" {
			path = "/" + name
		} else {
			path = d.opts.WorkDir + "/" + name
		}
	}
	f := file{name: name, path: path}
	i := strings.LastIndexByte(path, '/')
	f.dir, f.base = path[:i], path[i+1:]
	if f.dir == "" {
		f.dir = "/"
	}
	if j := strings.LastIndexByte(f.base, '.'); j >= 0 {
		f.suffix = f.base[j:]
	}
	return f
}

// sibling is the absolute path of the file next to f with the same base
// offset and another suffix (the .log behind an index).
func (f file) sibling(suffix string) string {
	prefix, _, _ := strings.Cut(f.base, ".")
	if f.dir == "/" {
		return "/" + prefix + suffix
	}
	return f.dir + "/" + prefix + suffix
}

// baseOffset parses the segment base offset from the name as Kafka does:
// the digits before the first '.'.
func (f file) baseOffset() (int64, error) {
	prefix, _, _ := strings.Cut(f.base, ".")
	n, err := strconv.ParseInt(prefix, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot parse a base offset from the file name %s", f.base)
	}
	return n, nil
}

// javaPath normalises a path the way java.io.File does on Unix, which is
// what Kafka echoes in "Dumping <file>": repeated slashes collapse and a
// trailing slash goes; "." and ".." stay.
func javaPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b.WriteByte(p[i])
	}
	s := b.String()
	if len(s) > 1 && strings.HasSuffix(s, "/") {
		s = s[:len(s)-1]
	}
	return s
}

// readFile reads at most limit bytes of path (all when limit <= 0).
func (d *Dumper) readFile(path string, limit int) ([]byte, error) {
	fh, err := d.fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var r io.Reader = fh
	if limit > 0 {
		r = io.LimitReader(fh, int64(limit))
	}
	return io.ReadAll(r)
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// problem records a Problem and prints it at once, after what was dumped
// so far, so the error follows the last readable line.
func (d *Dumper) problem(f file, format string, args ...any) {
	p := Problem{File: f.name, Reason: fmt.Sprintf(format, args...)}
	d.problems = append(d.problems, p)
	d.flush()
	fmt.Fprintf(d.errw, "Error: %s\n", p.Reason)
}

// warn prints a note that does not change the exit status.
func (d *Dumper) warn(format string, args ...any) {
	d.flush()
	fmt.Fprintf(d.errw, "Warning: "+format+"\n", args...)
}

func (d *Dumper) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }
func (d *Dumper) flush()                            { _ = d.out.Flush() }

// readOrProblem reads a whole file, turning a failure into a Problem.
func (d *Dumper) readOrProblem(f file, limit int) ([]byte, bool) {
	b, err := d.readFile(f.path, limit)
	if err != nil {
		if isNotExist(err) {
			d.problem(f, "%s: no such file", f.path)
		} else {
			d.problem(f, "read %s: %v", f.path, err)
		}
		return nil, false
	}
	return b, true
}

func addPair(reports []pairReport, path string, a, b int64) []pairReport {
	if n := len(reports); n > 0 && reports[n-1].path == path {
		reports[n-1].pairs = append(reports[n-1].pairs, [2]int64{a, b})
		return reports
	}
	return append(reports, pairReport{path: path, pairs: [][2]int64{{a, b}}})
}
