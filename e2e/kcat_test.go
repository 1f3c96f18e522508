//go:build integration

package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// codecs are the five Kafka compression codecs under kcat's -z names.
var codecs = []struct {
	name string
	kgo  kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// kcatFormat prints each record as key:value, which reproduces a keyed
// input line byte for byte.
const kcatFormat = "%k:%s\n"

// requireKcat fails the test when kcat is not installed: it is the one
// non-Go Kafka client the tests use, and make test installs it
// (scripts/ensure-deps.sh), so a missing kcat is a broken set-up, not a
// reason to skip.
func requireKcat(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not installed: make test installs it (scripts/ensure-deps.sh: apt-get install kcat)")
	}
	return p
}

// TestKcatMetadata checks that librdkafka sees the broker with its id and
// advertised address, and a topic with all its partitions led by it.
func TestKcatMetadata(t *testing.T) {
	kcat := requireKcat(t)
	b := startBroker(t)
	createTopic(t, b.admin(), "meta", 3, nil)

	out := string(runCmd(t, 30*time.Second, nil, kcat, "-L", "-b", b.addr, "-m", "10"))
	wantBroker := regexp.MustCompile(`(?m)^\s*broker 0 at ` + regexp.QuoteMeta(b.addr) + `\b`)
	if !wantBroker.MatchString(out) {
		t.Errorf("kcat -L does not list broker 0 at %s:\n%s", b.addr, out)
	}
	if !regexp.MustCompile(`(?m)^\s*1 brokers:`).MatchString(out) {
		t.Errorf("kcat -L does not list exactly 1 broker:\n%s", out)
	}
	if !strings.Contains(out, `topic "meta" with 3 partitions:`) {
		t.Errorf("kcat -L does not list topic meta with 3 partitions:\n%s", out)
	}
	for p := range 3 {
		line := regexp.MustCompile(`(?m)^\s*partition ` + strconv.Itoa(p) + `, leader 0, replicas: 0, isrs: 0\s*$`)
		if !line.MatchString(out) {
			t.Errorf("kcat -L: no line for partition %d led by broker 0 with replicas 0 and ISR 0:\n%s", p, out)
		}
	}

	// With -t, kcat asks for one topic only.
	out = string(runCmd(t, 30*time.Second, nil, kcat, "-L", "-b", b.addr, "-t", "meta", "-m", "10"))
	if !strings.Contains(out, `topic "meta" with 3 partitions:`) {
		t.Errorf("kcat -L -t meta:\n%s", out)
	}
}

// TestKcatRoundTrip produces many lines with kcat in every codec and
// requires that kcat, librdkafka's consumer, reads back exactly the bytes
// it wrote, and that franz-go reads the same keys and values. It then
// crosses over: franz-go produces, kcat consumes.
func TestKcatRoundTrip(t *testing.T) {
	kcat := requireKcat(t)
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	b := startBroker(t)
	adm := b.admin()
	input := kcatInput(n, 1)
	want := kcatExpect(input)
	if len(want.records) == 0 || len(want.records) == n {
		t.Fatalf("input has %d non-empty of %d lines: the generator must mix in empty lines", len(want.records), n)
	}

	for _, c := range codecs {
		t.Run("kcat/"+c.name, func(t *testing.T) {
			topic := "kcat-" + c.name
			// One partition: kcat's partitioner spreads records, and only
			// one partition keeps the input's order for a byte comparison.
			createTopic(t, adm, topic, 1, nil)
			runCmd(t, 2*time.Minute, input, kcat, "-P", "-b", b.addr, "-t", topic, "-z", c.name, "-K:")

			got := runCmd(t, 2*time.Minute, nil, kcat, "-C", "-b", b.addr, "-t", topic,
				"-e", "-q", "-o", "beginning", "-f", kcatFormat)
			requireSameLines(t, "kcat -C", got, want.text)

			// librdkafka and franz-go must agree on every key and value.
			recs := consumeAll(t, b.addr, topic, endOffsets(t, adm, topic), time.Minute)[0]
			requireRecords(t, recs, want.records)
		})
	}

	t.Run("kcat/tail", func(t *testing.T) {
		// -o -10: the last ten records of the partition.
		got := runCmd(t, time.Minute, nil, kcat, "-C", "-b", b.addr, "-t", "kcat-none",
			"-e", "-q", "-o", "-10", "-f", kcatFormat)
		lines := bytes.SplitAfter(want.text, []byte("\n"))
		lines = lines[:len(lines)-1] // the empty piece after the final newline
		requireSameLines(t, "kcat -C -o -10", got, bytes.Join(lines[len(lines)-10:], nil))
	})

	t.Run("kcat/auto-create", func(t *testing.T) {
		// auto.create.topics.enable is on by default: kcat's produce
		// creates the topic. -p 0 keeps the order whatever num.partitions is.
		in := kcatInput(1_000, 2)
		runCmd(t, time.Minute, in, kcat, "-P", "-b", b.addr, "-t", "kcat-auto", "-p", "0", "-K:")
		got := runCmd(t, time.Minute, nil, kcat, "-C", "-b", b.addr, "-t", "kcat-auto", "-p", "0",
			"-e", "-q", "-o", "beginning", "-f", kcatFormat)
		requireSameLines(t, "kcat -C of an auto-created topic", got, kcatExpect(in).text)
	})

	for _, c := range codecs {
		t.Run("franz-go/"+c.name, func(t *testing.T) {
			topic := "franz-" + c.name
			createTopic(t, adm, topic, 1, nil)
			cl := b.client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(c.kgo))
			recs := make([]*kgo.Record, len(want.records))
			for i, r := range want.records {
				recs[i] = &kgo.Record{Key: r.key, Value: r.value}
			}
			if err := cl.ProduceSync(ctxFor(t, 2*time.Minute), recs...).FirstErr(); err != nil {
				t.Fatalf("franz-go produce with %s: %v", c.name, err)
			}
			got := runCmd(t, 2*time.Minute, nil, kcat, "-C", "-b", b.addr, "-t", topic,
				"-e", "-q", "-o", "beginning", "-f", kcatFormat)
			requireSameLines(t, "kcat -C of franz-go records", got, want.text)
		})
	}
}

// kv is one expected record: key nil means no key.
type kv struct{ key, value []byte }

// expectation is what kcat makes of an input: the records it produces and
// the text `kcat -C -f '%k:%s\n'` prints for them.
type expectation struct {
	records []kv
	text    []byte
}

// kcatExpect applies kcat -P -K: rules to input: every line is a record,
// empty lines are skipped, the key is what precedes the first ':' (no ':'
// means no key), the value the rest. kcat prints a missing key as nothing,
// so an unkeyed line comes back with a ':' in front.
func kcatExpect(input []byte) expectation {
	var e expectation
	for line := range bytes.Lines(input) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) == 0 {
			continue
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok {
			e.records = append(e.records, kv{k, v})
		} else {
			e.records = append(e.records, kv{nil, line})
		}
		e.text = append(e.text, e.records[len(e.records)-1].key...)
		e.text = append(e.text, ':')
		e.text = append(e.text, e.records[len(e.records)-1].value...)
		e.text = append(e.text, '\n')
	}
	return e
}

// kcatInput returns n newline-terminated lines of varied content, the same
// for the same seed: keyed and unkeyed lines, empty lines (which kcat
// skips), empty keys and empty values, extra ':' in values, multi-byte
// UTF-8, control bytes including NUL and CR, invalid UTF-8, and some lines
// of several KiB that span librdkafka's buffers.
func kcatInput(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	words := []string{"kafka", "qk", "broker", "Zürich", "日本語", "ελληνικά", "🙂", "tab\there", "a\rb", "nul\x00byte", "\xff\xfe", "x"}
	var buf bytes.Buffer
	randText := func(max int) {
		for range rng.IntN(max) + 1 {
			switch rng.IntN(4) {
			case 0:
				buf.WriteString(words[rng.IntN(len(words))])
			case 1:
				buf.WriteByte(byte(' ' + rng.IntN(95))) // printable ASCII, ':' included
			default:
				buf.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
	}
	for i := range n {
		switch r := rng.IntN(100); {
		case r < 3: // empty line
		case r < 5: // empty key
			buf.WriteByte(':')
			randText(30)
		case r < 7: // empty value
			fmt.Fprintf(&buf, "key-%d:", i)
		case r < 8: // a long line
			fmt.Fprintf(&buf, "long-%d:", i)
			randText(4000)
		case r < 50: // keyed
			fmt.Fprintf(&buf, "key-%d:", rng.IntN(1000))
			randText(40)
		default: // unkeyed unless the text happens to contain ':'
			fmt.Fprintf(&buf, "line %d ", i)
			randText(40)
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// requireSameLines fails with the first differing line when got is not
// byte-for-byte want.
func requireSameLines(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	gl := bytes.SplitAfter(got, []byte("\n"))
	wl := bytes.SplitAfter(want, []byte("\n"))
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("%s: output differs at line %d (%d bytes/%d lines, want %d bytes/%d lines):\ngot  %q\nwant %q",
				what, i+1, len(got), len(gl)-1, len(want), len(wl)-1, g, w)
		}
	}
}

// requireRecords compares consumed records with the expected keys and
// values, in order. A key kcat sent as empty may come back empty or nil,
// which print the same; a key it did not send must come back nil.
func requireRecords(t *testing.T, got []*kgo.Record, want []kv) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("consumed %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		w := want[i]
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.Offset)
		}
		if !bytes.Equal(r.Key, w.key) || (w.key == nil && r.Key != nil) || !bytes.Equal(r.Value, w.value) {
			t.Fatalf("record at offset %d: key %q value %q, want key %q value %q", i, r.Key, r.Value, w.key, w.value)
		}
	}
}
