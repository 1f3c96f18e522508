package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qk-project/qk/perf"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The regular expressions below are Kafka's printf formats with each
// conversion replaced by what it prints: %d an integer, %.Nf N decimals
// (%f six), and the default SimpleDateFormat yyyy-MM-dd HH:mm:ss:SSS.
var (
	// ProducerPerformance.Stats.printWindow
	reProduceWindow = regexp.MustCompile(`^(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d{2}) MB/sec\), (\d+\.\d) ms avg latency, (\d+\.\d) ms max latency\.$`)
	// ProducerPerformance.Stats.printTotal (Kafka 3.x)
	reProduceTotal = regexp.MustCompile(`^(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d{2}) MB/sec\), (\d+\.\d{2}) ms avg latency, (\d+\.\d{2}) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$`)
	// ToolsUtils.printMetrics
	reMetric = regexp.MustCompile(`^[a-z-]+:[a-z-]+:\{client-id=[^}]+\} +: \d+\.\d{3}$`)

	date = `\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}`
	rate = `(\d+\.\d{4}|Infinity|NaN)`
	// ConsumerPerformance main: the final row
	reConsumeRow = regexp.MustCompile(`^(` + date + `), (` + date + `), (\d+\.\d{4}), ` + rate + `, (\d+), ` + rate + `, (\d+), (-?\d+), ` + rate + `, ` + rate + `$`)
	// ConsumerPerformance.printConsumerProgress
	reConsumeDetail = regexp.MustCompile(`^(` + date + `), 0, (\d+\.\d{4}), (\d+\.\d{4}), (\d+), (\d+\.\d{4}), (\d+), (-?\d+), (\d+\.\d{4}), (\d+\.\d{4})$`)

	// EndToEndLatency: i + "\t" + double, then the two summary lines
	reE2EProgress = regexp.MustCompile(`^(\d+)\t(\d+\.\d+(E-?\d+)?)$`)
	reE2EAvg      = regexp.MustCompile(`^Avg latency: (\d+\.\d{4}) ms$`)
	reE2EPct      = regexp.MustCompile(`^Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)$`)
)

const (
	consumeHeader         = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	consumeDetailedHeader = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return f
}

// mb is what %.Nf prints of bytes/2^20, as a number.
func mb(bytes int64, prec int) float64 {
	p := math.Pow10(prec)
	return math.Round(float64(bytes)/(1<<20)*p) / p
}

// requireOneLine checks an error is the one clear line main prints.
func requireOneLine(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err)
	require.Contains(t, err.Error(), want)
	require.NotContains(t, err.Error(), "\n")
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestPerfBadInput(t *testing.T) {
	dir := t.TempDir()
	badProps := filepath.Join(dir, "bad.properties")
	require.NoError(t, os.WriteFile(badProps, []byte("acks=all\nsend.buffer.bytes=1\n"), 0o644))
	payloads := filepath.Join(dir, "payloads.txt")
	require.NoError(t, os.WriteFile(payloads, []byte("a\nb\n"), 0o644))
	dead := freeAddr(t)
	prod := []string{"perf", "produce", "--topic", "t", "--num-records", "10", "--throughput", "-1", "-b", dead, "--timeout", "2s"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing topic", []string{"perf", "produce", "--num-records", "10", "--record-size", "10", "--throughput", "-1"}, `required flag(s) "topic" not set`},
		{"missing throughput", []string{"perf", "produce", "--topic", "t", "--num-records", "10", "--record-size", "10"}, `required flag(s) "throughput" not set`},
		{"size and file", append(prod, "--record-size", "10", "--payload-file", payloads), "--record-size and --payload-file are mutually exclusive"},
		{"neither size nor file", prod, "either --record-size or --payload-file must be given"},
		{"unknown prop", append(prod, "--record-size", "10", "--producer-props", "acks=1", "bogus.key=1"), `unknown producer property "bogus.key"`},
		{"bad prop value", append(prod, "--record-size", "10", "--producer-props", "linger.ms=soon"), "producer property linger.ms=soon: want milliseconds"},
		{"prop without =", append(prod, "--record-size", "10", "--producer-props", "acks"), `--producer-props "acks": want key=value`},
		{"stray argument", append(prod, "--record-size", "10", "oops"), `unexpected argument "oops"`},
		{"unknown prop in file", append(prod, "--record-size", "10", "--producer.config", badProps), `unknown producer property "send.buffer.bytes"`},
		{"missing config file", append(prod, "--record-size", "10", "--producer.config", filepath.Join(dir, "nope")), "--producer.config: open"},
		{"bad acks", append(prod, "--record-size", "10", "--acks", "2"), `--acks: acks "2"`},
		{"bad keys", append(prod, "--record-size", "10", "--keys", "some"), `--keys "some"`},
		{"zero throughput", []string{"perf", "produce", "--topic", "t", "--num-records", "10", "--record-size", "1", "--throughput", "0", "-b", dead}, "--throughput 0 would never send"},
		{"both broker flags", append(prod, "--record-size", "10", "--bootstrap-server", dead), "-b and --bootstrap-server are the same setting"},
		{"unreachable produce", append(prod, "--record-size", "10"), "cannot reach cluster at " + dead + ": "},
		{"unreachable consume", []string{"perf", "consume", "--topic", "t", "--messages", "1", "--bootstrap-server", dead, "--request-timeout", "2s"}, "cannot reach cluster at " + dead + ": "},
		{"unreachable end-to-end", []string{"perf", "end-to-end", "--topic", "t", "--num-records", "1", "-b", dead, "--timeout", "2s"}, "cannot reach cluster at " + dead + ": "},
		{"consume missing messages", []string{"perf", "consume", "--topic", "t"}, `required flag(s) "messages" not set`},
		{"consume bad date format", []string{"perf", "consume", "--topic", "t", "--messages", "1", "--date-format", "yyyy-ww", "-b", dead}, "unsupported pattern letter 'w'"},
		{"consume unknown prop", []string{"perf", "consume", "--topic", "t", "--messages", "1", "--consumer.config", badProps, "-b", dead}, `unknown consumer property "acks"`},
		{"end-to-end acks 0", []string{"perf", "end-to-end", "--topic", "t", "--num-records", "1", "--acks", "0", "-b", dead}, "latency testing requires synchronous acknowledgement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runQK(t, tc.args...)
			requireOneLine(t, err, tc.want)
		})
	}
}

// createTopic creates a topic (the tools do not rely on auto-creation)
// and returns an admin connection for checks.
func createTopic(t *testing.T, addr, topic string, partitions int32) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	require.NoError(t, err)
	return cl
}

// checkPerf runs the three tools against the cluster at addr and checks
// every line they print against Kafka's formats, and the numbers against
// each other.
func checkPerf(t *testing.T, addr string) {
	cl := createTopic(t, addr, "perf", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	const n, size = 3000, 100
	total := int64(0) // records in the topic
	produce := func(t *testing.T, extra ...string) (string, string) {
		args := append([]string{"perf", "produce", "-b", addr, "--topic", "perf", "--num-records", strconv.Itoa(n),
			"--throughput", "4000", "--reporting-interval", "200"}, extra...)
		out, errOut, err := runQK(t, args...)
		require.NoError(t, err, "stderr: %s", errOut)
		total += n
		return out, errOut
	}

	t.Run("produce", func(t *testing.T) {
		out, _ := produce(t, "--record-size", strconv.Itoa(size), "--producer-props", "acks=1", "linger.ms=2", "--print-metrics")
		ls := lines(out)
		i, windowed := 0, int64(0)
		for ; i < len(ls) && reProduceWindow.MatchString(ls[i]); i++ {
			m := reProduceWindow.FindStringSubmatch(ls[i])
			windowed += int64(num(t, m[1]))
			require.InDelta(t, num(t, m[2])*size/(1<<20), num(t, m[3]), 0.0051, "MB/sec = records/sec * size / 2^20: %s", ls[i])
			require.LessOrEqual(t, num(t, m[4]), num(t, m[5]), "avg <= max: %s", ls[i])
		}
		require.GreaterOrEqual(t, i, 1, "progress lines every 200 ms of a 750 ms run:\n%s", out)
		require.Less(t, windowed, int64(n))
		m := reProduceTotal.FindStringSubmatch(ls[i])
		require.NotNil(t, m, "final line: %q", ls[i])
		require.Equal(t, strconv.Itoa(n), m[1])
		require.InDelta(t, num(t, m[2])*size/(1<<20), num(t, m[3]), 0.0051, "MB/sec")
		// At most --throughput (TestPerfThroughput checks it is held).
		require.LessOrEqual(t, num(t, m[2]), 4000*1.02, "records/sec")
		avg, max := num(t, m[4]), num(t, m[5])
		p := []float64{num(t, m[6]), num(t, m[7]), num(t, m[8]), num(t, m[9])}
		require.LessOrEqual(t, avg, max)
		require.IsNonDecreasing(t, p)
		require.LessOrEqual(t, p[3], max)
		// --print-metrics: a blank line, the header, then name : value.
		require.Equal(t, "", ls[i+1])
		require.Regexp(t, `^Metric Name +Value$`, ls[i+2])
		for _, l := range ls[i+3:] {
			require.Regexp(t, reMetric, l)
		}
		require.Regexp(t, fmt.Sprintf(`\nproducer-metrics:record-send-total:\{client-id=perf-producer-client\} +: %d\.000\n`, n), out)
	})

	t.Run("produce json", func(t *testing.T) {
		out, _ := produce(t, "--record-size", strconv.Itoa(size), "--keys", "7", "--payload", "random", "--compression", "lz4", "--producers", "2", "--json")
		ls := lines(out)
		var fractional bool
		for i, l := range ls {
			var r perf.ProduceReport
			dec := json.NewDecoder(strings.NewReader(l))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&r), l)
			want := "progress"
			if i == len(ls)-1 {
				want = "final"
			}
			require.Equal(t, want, r.Type, l)
			for _, k := range []string{`"records":`, `"bytes":`, `"errors":`, `"elapsed_s":`, `"records_per_sec":`, `"mib_per_sec":`, `"latency_ms":{"avg":`, `"max":`, `"p50":`, `"p95":`, `"p99":`, `"p999":`} {
				require.Contains(t, l, k)
			}
			require.InEpsilon(t, float64(r.Records)/r.ElapsedS, r.RecordsPerSec, 1e-9)
			require.InEpsilon(t, float64(r.Bytes)/(1<<20)/r.ElapsedS, r.MiBPerSec, 1e-9)
			lm := r.LatencyMs
			require.IsNonDecreasing(t, []float64{lm.P50, lm.P95, lm.P99, lm.P999, lm.Max}, l)
			require.LessOrEqual(t, lm.Avg, lm.Max)
			for _, v := range []float64{lm.Avg, lm.Max, lm.P50, lm.P95, lm.P99, lm.P999} {
				fractional = fractional || v != math.Trunc(v)
			}
			if r.Type == "final" {
				require.EqualValues(t, n, r.Records)
				// One key byte ("0".."6") per record.
				require.EqualValues(t, n*(size+1), r.Bytes)
				require.Zero(t, r.Errors)
			}
		}
		require.True(t, fractional, "latencies keep microseconds:\n%s", out)
	})

	t.Run("produce payload file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "payloads")
		require.NoError(t, os.WriteFile(f, []byte("alpha|bravo|delta|"), 0o644))
		out, _ := produce(t, "--payload-file", f, "--payload-delimiter", "|", "--warmup-records", "100")
		ls := lines(out)
		require.Equal(t, "Reading payloads from: "+f, ls[0])
		require.Equal(t, "Number of messages read: 3", ls[1])
		m := reProduceTotal.FindStringSubmatch(ls[len(ls)-1])
		require.NotNil(t, m, out)
		require.Equal(t, strconv.Itoa(n-100), m[1], "warm-up records are not counted")
	})
	// What the three runs wrote: values of 100 bytes; 100 bytes and a
	// one-byte key; 5-byte payloads.
	totalBytes := int64(n*size + n*(size+1) + n*5)

	// consume runs perf consume with a fresh group and returns its stdout
	// and stderr.
	groups := 0
	consume := func(t *testing.T, extra ...string) (string, string) {
		groups++
		args := append([]string{"perf", "consume", "--bootstrap-server", addr, "--topic", "perf", "--group", fmt.Sprintf("perf-group-%d", groups)}, extra...)
		out, errOut, err := runQK(t, args...)
		require.NoError(t, err, "stderr: %s", errOut)
		return out, errOut
	}
	parseDate := func(t *testing.T, s string) time.Time {
		d, err := time.ParseInLocation("2006-01-02 15:04:05.000", s[:19]+"."+s[20:], time.Local)
		require.NoError(t, err)
		return d
	}
	// checkRow checks a final row's numbers against each other.
	checkRow := func(t *testing.T, row string, records, bytes int64) {
		m := reConsumeRow.FindStringSubmatch(row)
		require.NotNil(t, m, "row: %q", row)
		elapsed := parseDate(t, m[2]).Sub(parseDate(t, m[1])).Seconds()
		mbExact := float64(bytes) / (1 << 20)
		require.Equal(t, strconv.FormatFloat(mb(bytes, 4), 'f', 4, 64), m[3], "data.consumed.in.MB = bytes / 2^20")
		require.Equal(t, strconv.FormatInt(records, 10), m[5])
		require.InDelta(t, mbExact/elapsed, num(t, m[4]), 0.0001, "MB.sec = MB / (end - start)")
		require.InDelta(t, float64(records)/elapsed, num(t, m[6]), 0.0001, "nMsg.sec")
		rebalance, fetch := num(t, m[7]), num(t, m[8])
		require.Equal(t, math.Round(elapsed*1000), rebalance+fetch, "fetch.time.ms = elapsed - rebalance.time.ms")
		if fetch > 0 {
			require.InDelta(t, mbExact/(fetch/1000), num(t, m[9]), 0.0001, "fetch.MB.sec")
			require.InDelta(t, float64(records)/(fetch/1000), num(t, m[10]), 0.0001, "fetch.nMsg.sec")
		}
	}

	t.Run("consume", func(t *testing.T) {
		out, _ := consume(t, "--messages", strconv.FormatInt(total, 10), "--print-metrics")
		ls := lines(out)
		require.Equal(t, consumeHeader, ls[0])
		checkRow(t, ls[1], total, totalBytes)
		require.Equal(t, "", ls[2])
		require.Regexp(t, `^Metric Name +Value$`, ls[3])
		for _, l := range ls[4:] {
			require.Regexp(t, reMetric, l)
		}
		// The group committed what it read, as Kafka's consumer does on close.
		offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "perf-group-1")
		require.NoError(t, err)
		var committed int64
		offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
		require.Equal(t, total, committed)
	})

	t.Run("consume detailed", func(t *testing.T) {
		out, _ := consume(t, "--messages", strconv.FormatInt(total, 10), "--show-detailed-stats", "--reporting-interval", "1", "--hide-header")
		ls := lines(out)
		require.NotEqual(t, consumeDetailedHeader, ls[0], "--hide-header")
		last := int64(0)
		for _, l := range ls {
			m := reConsumeDetail.FindStringSubmatch(l)
			require.NotNil(t, m, "detailed row: %q\n%s", l, out)
			got := int64(num(t, m[4]))
			require.GreaterOrEqual(t, got, last)
			require.LessOrEqual(t, got, total)
			last = got
		}
		out, _ = consume(t, "--messages", "10", "--show-detailed-stats")
		require.Equal(t, consumeDetailedHeader, lines(out)[0])
	})

	t.Run("consume json", func(t *testing.T) {
		out, _ := consume(t, "--messages", strconv.FormatInt(total, 10), "--json")
		var r perf.ConsumeReport
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&r), out)
		require.Equal(t, "final", r.Type)
		require.Equal(t, total, r.Records)
		require.Equal(t, totalBytes, r.Bytes)
		require.InEpsilon(t, float64(r.Bytes)/(1<<20)/r.ElapsedS, r.MiBPerSec, 1e-9)
		require.Equal(t, int64(math.Round(r.ElapsedS*1000)), r.RebalanceMs+r.FetchMs)
		require.Equal(t, 1, strings.Count(out, "\n"), "one object")
	})

	t.Run("consume timeout", func(t *testing.T) {
		// 3 s: joining the group must not take the whole timeout.
		out, errOut := consume(t, "--messages", strconv.FormatInt(total+100, 10), "--timeout", "3000")
		require.Equal(t, "WARNING: Exiting before consuming the expected number of messages: timeout (3000 ms) exceeded. You can use the --timeout option to increase the timeout.\n", errOut)
		checkRow(t, lines(out)[1], total, totalBytes)
	})

	t.Run("end-to-end", func(t *testing.T) {
		out, errOut, err := runQK(t, "perf", "end-to-end", "-b", addr, "--topic", "latency", "--num-records", "1001", "--record-size", "20", "--acks", "1")
		require.NoError(t, err, errOut)
		ls := lines(out)
		require.Equal(t, `Topic "latency" does not exist. Will create topic with 1 partition(s) and replication factor = 1`, ls[0])
		for i, want := range []string{"0", "1000"} {
			m := reE2EProgress.FindStringSubmatch(ls[1+i])
			require.NotNil(t, m, "progress: %q", ls[1+i])
			require.Equal(t, want, m[1])
		}
		require.Regexp(t, reE2EAvg, ls[3])
		m := reE2EPct.FindStringSubmatch(ls[4])
		require.NotNil(t, m, "percentiles: %q", ls[4])
		require.IsNonDecreasing(t, []float64{num(t, m[1]), num(t, m[2]), num(t, m[3])})
		require.Len(t, ls, 5)
	})

	t.Run("end-to-end json", func(t *testing.T) {
		out, errOut, err := runQK(t, "perf", "end-to-end", "-b", addr, "--topic", "latency", "--num-records", "50", "--json")
		require.NoError(t, err, errOut)
		var r perf.EndToEndReport
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&r), out)
		require.Equal(t, "final", r.Type)
		require.Equal(t, 50, r.Records)
		l := r.LatencyMs
		require.IsNonDecreasing(t, []float64{l.P50, l.P99, l.P999, l.Max})
		require.Positive(t, l.Avg)
		require.LessOrEqual(t, l.Avg, l.Max)
	})
}

// TestPerfKfake runs the tools against franz-go's kfake, a Kafka that is
// not qk: they must work against any Kafka.
func TestPerfKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	checkPerf(t, addr)

	// Transactions (qk does not serve them yet).
	out, errOut, err := runQK(t, "perf", "produce", "-b", addr, "--topic", "perf", "--num-records", "500", "--record-size", "10",
		"--throughput", "-1", "--transactional-id", "perf-tx", "--transaction-duration-ms", "20")
	require.NoError(t, err, errOut)
	m := reProduceTotal.FindStringSubmatch(lines(out)[len(lines(out))-1])
	require.NotNil(t, m, out)
	require.Equal(t, "500", m[1])
}
