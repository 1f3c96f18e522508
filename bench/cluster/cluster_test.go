package main

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5, c.runs)
	require.Equal(t, 1, c.warmup)
	require.Equal(t, "bench/CLUSTER.md", c.out)
	require.Equal(t, []int{18000, 6000}, c.sessions)
	require.Equal(t, sections, c.only)

	c, err = parseFlags([]string{"-quick", "-o", "x.md"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 1, c.runs)
	require.Equal(t, 0, c.warmup)
	require.Equal(t, 1, c.kills)
	require.Equal(t, "", c.out, "-quick never writes the report file")
	require.Equal(t, []int{6000}, c.sessions)

	for _, bad := range [][]string{{"-runs", "0"}, {"-records", "-1"}, {"-only", "nope"}, {"extra"}} {
		_, err := parseFlags(bad, io.Discard)
		require.Error(t, err, "%q", bad)
	}
}

func TestParseOnly(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", sections, false},
		{"failover", []string{"failover"}, false},
		{" lag , shutdown,lag", []string{"lag", "shutdown"}, false},
		{"throughput,bogus", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseOnly(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTPWanted(t *testing.T) {
	require.Equal(t, []bool{true, true, true, true}, config{only: []string{"throughput"}}.tpWanted())
	require.Equal(t, []bool{false, true, false, false}, config{only: []string{"lag"}}.tpWanted(), "lag alone runs only the RF 3 1-partition load it samples")
	require.Equal(t, []bool{false, false, false, false}, config{only: []string{"failover"}}.tpWanted())
}

func TestTopicMinISR(t *testing.T) {
	require.Equal(t, 2, tpConfigs[tp1RF3].topic("t").MinISR)
	require.Equal(t, 0, tpConfigs[tp1RF1].topic("t").MinISR)
}

func TestPerfArgs(t *testing.T) {
	got := strings.Join(perfArgs(tpConfigs[tp1RF3], []string{"a:1", "b:2"}, "T", 10), " ")
	require.Equal(t, "perf produce -b a:1,b:2 --topic T --num-records 10 --record-size 1024 --throughput -1 --acks all "+
		"--payload random --producer-props enable.idempotence=true --json", got)
	require.Contains(t, strings.Join(perfArgs(tpConfigs[tp1RF1], nil, "T", 10), " "), "--acks 1 --payload random --producer-props enable.idempotence=false")
}

func TestNewTPSample(t *testing.T) {
	f := benchproc.Final{Records: 1 << 20, Bytes: gib, ElapsedS: 2, RecordsPerSec: 524288, MiBPerSec: 512, Latency: &benchproc.Latency{P50: 1, P99: 3}}
	got := newTPSample(f, 1<<20, []float64{2, 1, 0.5})
	require.Equal(t, tpSample{recPerSec: 524288, mibPerSec: 512, p50: 1, p99: 3, cpuPerGiB: []float64{2, 1, 0.5}}, got)
	f.Bytes, f.MiBPerSec = 0, 0 // not reported: records × 1 KiB
	got = newTPSample(f, 1<<20, []float64{1})
	require.Equal(t, []float64{1}, got.cpuPerGiB)
	require.Equal(t, 512.0, got.mibPerSec)
}

func TestTPResultsRatios(t *testing.T) {
	r := &tpResults{only: []bool{true, true, true, true}, runs: [][]tpSample{
		{{recPerSec: 100}, {recPerSec: 50}, {recPerSec: 200}, {recPerSec: 180}},
		{{recPerSec: 100}, {recPerSec: 70}, {recPerSec: 100}, {recPerSec: 0}},
		{{recPerSec: 200}, {recPerSec: 120}, {recPerSec: 300}, {recPerSec: 150}},
	}}
	require.InDelta(t, 0.5, r.ratio(0, tp1RF3, tp1RF1), 1e-9)
	require.True(t, math.IsNaN(r.ratio(1, tp3RF3, tp3RF1)), "a configuration without a figure has no ratio")
	require.InDelta(t, 0.6, r.medianRatio(tp1RF3, tp1RF1), 1e-9, "median of 0.5, 0.7, 0.6")
	require.InDelta(t, 0.7, r.medianRatio(tp3RF3, tp3RF1), 1e-9, "median of 0.9 and 0.5; the run without one is left out")
	require.Equal(t, 70.0, r.median(tp1RF3, func(s tpSample) float64 { return s.recPerSec }))
}

func TestPercentile(t *testing.T) {
	var v []float64
	for i := 100; i >= 1; i-- {
		v = append(v, float64(i))
	}
	require.Equal(t, 50.0, percentile(v, 50))
	require.Equal(t, 99.0, percentile(v, 99))
	require.Equal(t, 100.0, percentile(v, 100))
	require.Equal(t, 1.0, percentile(v, 0.1))
	require.Equal(t, 7.0, percentile([]float64{7}, 99))
	require.True(t, math.IsNaN(percentile(nil, 50)))
	require.Equal(t, 100.0, v[0], "percentile must not reorder its input")
}

func TestLagSummary(t *testing.T) {
	tr := lagTrace{lags: map[int32][]int64{2: {4096, -100, 0, 2048}, 1: {1024}}, failed: 1}
	got := tr.summary(1034)
	require.Equal(t, lagSample{bytesPerRecord: 1034, failed: 1, followers: []followerLag{
		{id: 1, samples: 1, p50: 1024, p99: 1024, max: 1024},
		{id: 2, samples: 4, p50: 0, p99: 4096, max: 4096}, // -100 counts as 0: sorted 0, 0, 2048, 4096
	}}, got)
}

func TestLagTraceAdd(t *testing.T) {
	tr := lagTrace{lags: map[int32][]int64{}}
	tr.add(map[int32]int64{0: 0, 1: 0, 2: 0}, 0, []int32{1, 2}) // the producer has not started
	tr.add(map[int32]int64{0: 5000, 1: 4000}, 0, []int32{1, 2}) // broker 2 did not answer
	tr.add(map[int32]int64{1: 4000, 2: 4000}, 0, []int32{1, 2}) // nor the leader
	require.Equal(t, map[int32][]int64{1: {1000}}, tr.lags)
}

func TestMaxGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []ack {
		var v []ack
		for i, m := range ms {
			v = append(v, ack{at: t0.Add(time.Duration(m) * time.Millisecond), value: int64(i)})
		}
		return v
	}
	ms := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Millisecond) }
	tests := []struct {
		name      string
		acks      []ack
		from, to  time.Time
		want      time.Duration
		wantStart time.Time
	}{
		{"gap across the signal counts from the last ack before it", at(0, 1, 2, 90, 91), ms(10), ms(50), 88 * time.Millisecond, ms(2)},
		{"a larger gap outside the window is left out", at(0, 500, 501, 520, 1500), ms(505), ms(510), 19 * time.Millisecond, ms(501)},
		{"window inside one gap", at(0, 100), ms(10), ms(20), 100 * time.Millisecond, ms(0)},
		{"one ack", at(5), ms(0), ms(10), 0, time.Time{}},
		{"none", nil, ms(0), ms(10), 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, start := maxGap(tt.acks, tt.from, tt.to)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantStart, start)
		})
	}
}

func TestSentAfterSkipsAnAckInFlightAtTheKill(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Millisecond) }
	p := &producer{done: make(chan struct{}), changed: make(chan struct{}), acks: []ack{
		{sent: ms(0), at: ms(1), value: 0},
		{sent: ms(1), at: ms(11), value: 1}, // in flight at the kill (10 ms), answered by the old leader
		{sent: ms(11), at: ms(6000), value: 2},
		{sent: ms(6000), at: ms(6001), value: 3},
	}}
	ctx := t.Context()
	a, err := p.ackAfter(ctx, ms(10), time.Second)
	require.NoError(t, err)
	require.Equal(t, int64(1), a.value)
	a, err = p.sentAfter(ctx, ms(10), time.Second)
	require.NoError(t, err)
	require.Equal(t, int64(2), a.value)
	_, err = p.ackAfter(ctx, ms(7000), 10*time.Millisecond)
	require.ErrorContains(t, err, "no acknowledgement within")
}

func TestErrorsBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	errs := []clientErr{{t0, "a"}, {t0.Add(time.Second), "b"}, {t0.Add(2 * time.Second), "b"}, {t0.Add(3 * time.Second), "c"}}
	require.Equal(t, map[string]int{"b": 2}, errorsBetween(errs, t0.Add(time.Millisecond), t0.Add(2*time.Second)))
	require.Equal(t, "2× b; 1× a", errsText(map[string]int{"a": 1, "b": 2}, ""))
	require.Equal(t, "broker: exit 1; 1× x \\| y", errsText(map[string]int{"x |\ny": 1}, "exit 1"))
	require.Equal(t, "none", errsText(nil, ""))
}

func TestRetryBackoff(t *testing.T) {
	var got []time.Duration
	for tries := range 7 {
		got = append(got, retryBackoff(tries))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{10 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 100 * ms, 100 * ms}, got)
}

func TestCompareAcked(t *testing.T) {
	acked := []ack{{value: 0}, {value: 1}, {value: 2}, {value: 3}}
	got := compareAcked(acked, map[int64]int{0: 1, 1: 2, 3: 1, 7: 1})
	require.Equal(t, verifyResult{acked: 4, read: 5, missing: 1, duplicated: 1}, got)
}

func TestArgsOf(t *testing.T) {
	require.Equal(t, []string{"-quick"}, argsOf(config{quick: true}))
	require.Equal(t, []string{"-runs 5", "-records 1000000"}, argsOf(config{runs: 5, records: 1000000, kills: 3, shutdowns: 3, only: sections}))
	require.Equal(t, []string{"-runs 1", "-records 9", "-kills 1", "-only lag"}, argsOf(config{runs: 1, records: 9, kills: 1, shutdowns: 3, only: []string{"lag"}}))
}

func TestMarkdown(t *testing.T) {
	run := func(rf1, rf3 float64) []tpSample {
		return []tpSample{
			{recPerSec: rf1, mibPerSec: rf1 / 1024, p50: 1, p99: 2, cpuPerGiB: []float64{3, 0, 0}},
			{recPerSec: rf3, mibPerSec: rf3 / 1024, p50: 4, p99: 8, firstWrite: 950, cpuPerGiB: []float64{5, 2.5, 2.25},
				lag: &lagSample{bytesPerRecord: 1024, followers: []followerLag{{id: 1, samples: 30, p50: 2048, p99: 10240, max: 20480}, {id: 2, samples: 30, p50: 1024, p99: 4096, max: 8192}}}},
			{recPerSec: 2 * rf1}, {recPerSec: 1.4 * rf1},
		}
	}
	r := &results{
		lag:        true,
		throughput: &tpResults{only: []bool{true, true, true, true}, records: 1000, runs: [][]tpSample{run(100000, 65000), run(90000, 54000), run(110000, 44000)}},
		shutdown: &shutdownResult{verify: verifyResult{acked: 5000, read: 5000}, runs: []shutdownRun{
			{victim: 0, controller: true, gap: 40 * time.Millisecond, gapAfter: 2 * time.Millisecond, stopTook: 300 * time.Millisecond},
			{victim: 1, gap: 60 * time.Millisecond, errs: map[string]int{"NOT_LEADER_OR_FOLLOWER": 1}},
			{victim: 2, gap: 50 * time.Millisecond},
		}},
		failover: []failoverResult{{session: 18000, verify: verifyResult{acked: 12345, read: 12345}, kills: []killRun{
			{victim: 0, took: 18500 * time.Millisecond}, {victim: 1, controller: true, took: 19 * time.Second}, {victim: 2, took: 18200 * time.Millisecond}}}},
	}
	h := header{Host: benchproc.Host{Describe: "v0.1-3-gabc", CPUModel: "Test CPU", CPUs: 2, Kernel: "6.1", GoVersion: "go1.26"},
		cfg: config{runs: 3, warmup: 1, records: 1000, kills: 3, shutdowns: 3, only: sections}, commands: []string{"java ... QuorumPeerMain zoo.cfg", "qk broker start ..."}}
	out := markdown(h, r)
	for _, want := range []string{
		"- checkout: v0.1-3-gabc (unknown)\n",
		"median of 3 runs after 1 warm-up run, 1,000 1 KiB records per run",
		"`go run ./bench/cluster -runs 3 -records 1000` started",
		"java ... QuorumPeerMain zoo.cfg\nqk broker start ...\n",
		"--acks all --payload random --producer-props enable.idempotence=true --json   # 1 partition, RF 3, acks=all\n",
		"| 1 partition, RF 3, acks=all | 54,000 | 52.7 | 4.00 | 8.00 | 950 | 5.00 | 2.50 | 2.25 |\n",
		"| 1 | 0.65× | 0.70× |\n",
		"| **median** | **0.60×** PASS | **0.70×** PASS |\n",
		"| broker 1 | 30 | 2.0 | 10.0 | 20.0 | ~2 | ~10 | ~20 |\n",
		"| 18000 | 18.50 s (broker 0) | 19.00 s (broker 1, controller) | 18.20 s (broker 2) | **18.50 s** | 12,345 | 0 | 0 | 0 |\n",
		"| 2 | broker 1 | 60.0 | 0.0 | 0.0 | 1× NOT_LEADER_OR_FOLLOWER |\n",
		"Median longest gap: **50.0 ms** PASS.",
		"5,000 acknowledged records, 0 lost",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "-quick")
	require.NotContains(t, out, "Stopped early")
	require.Less(t, strings.Index(out, "## 3. Failover"), strings.Index(out, "## 4. Controlled shutdown"))

	// A benchmark cut short says so, and a section that did not run has
	// no heading.
	r = &results{err: "failover (session 6000 ms): broker 1 died\nlog tail"}
	h.cfg.quick = true
	out = markdown(h, r)
	require.Contains(t, out, "**Stopped early")
	require.Contains(t, out, "broker 1 died\nlog tail\n```")
	require.Contains(t, out, "**-quick:")
	require.NotContains(t, out, "## 1. Throughput")
	require.NotContains(t, out, "## 4.")
}
