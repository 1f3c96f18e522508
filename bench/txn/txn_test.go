package main

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5, c.runs)
	require.Equal(t, 1, c.warmup)
	require.Equal(t, "bench/TXN.md", c.out)
	require.Equal(t, sections, c.only)
	require.Equal(t, 100*time.Millisecond, c.txnEvery)

	c, err = parseFlags([]string{"-quick", "-o", "x.md", "-set", "a.b=1", "-set", "c=d=e"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 1, c.runs)
	require.Equal(t, 0, c.warmup)
	require.Equal(t, "", c.out, "-quick never writes the report file")
	require.Equal(t, []string{"a.b=1", "c=d=e"}, c.set)

	for _, bad := range [][]string{{"-runs", "0"}, {"-txns", "0"}, {"-only", "nope"}, {"-set", "novalue"}, {"-set", "=x"}, {"extra"}} {
		_, err := parseFlags(bad, io.Discard)
		require.Error(t, err, "%q", bad)
	}
}

func TestParseOnly(t *testing.T) {
	got, err := parseOnly(" endtxn , produce,endtxn")
	require.NoError(t, err)
	require.Equal(t, []string{"endtxn", "produce"}, got)
	_, err = parseOnly("produce,bogus")
	require.Error(t, err)
}

func TestProduceArgs(t *testing.T) {
	idem := strings.Join(produceArgs(producers[prodIdempotent], []string{"a", "b"}, "T", "ID", 10, 100*time.Millisecond), " ")
	require.Equal(t, "perf produce -b a,b --topic T --num-records 10 --record-size 1024 --throughput -1 --acks all --payload random "+
		"--producer-props enable.idempotence=true acks=all --json", idem)
	txn := strings.Join(produceArgs(producers[prodTransactional], []string{"a"}, "T", "ID", 10, 100*time.Millisecond), " ")
	require.Contains(t, txn, "--transactional-id ID --transaction-duration-ms 100 --json")
	require.Contains(t, txn, "enable.idempotence=true acks=all", "both sides are the same idempotent acks=all producer")
}

func TestPlanAndFill(t *testing.T) {
	require.Equal(t, []int{501, 500}, plan(1001))
	f := fill{committed: 900, aborted: 100}
	require.Equal(t, 900, f.records("read_committed"))
	require.Equal(t, 1000, f.records("read_uncommitted"))
}

func TestRatios(t *testing.T) {
	p := &prodResults{runs: [][]prodSample{
		{{recPerSec: 100}, {recPerSec: 97}},
		{{recPerSec: 200}, {recPerSec: 100}},
		{{recPerSec: 100}, {recPerSec: 99}},
		{{recPerSec: 0}, {recPerSec: 99}}, // a run without a figure has no ratio
	}}
	require.InDelta(t, 0.97, p.ratio(0), 1e-9)
	require.True(t, math.IsNaN(p.ratio(3)))
	require.InDelta(t, 0.97, p.medianRatio(), 1e-9)

	c := &consResults{runs: [][]consSample{
		{{fetchMS: 1000}, {fetchMS: 1250}}, // read_committed took longer: 0.8×
		{{fetchMS: 1000}, {fetchMS: 1000}},
		{{fetchMS: 900}, {fetchMS: 1000}},
	}}
	require.InDelta(t, 0.8, c.ratio(0), 1e-9)
	require.InDelta(t, 0.9, c.medianRatio(), 1e-9)
}

func TestMarkdown(t *testing.T) {
	r := &results{
		produce: &prodResults{records: 10, runs: [][]prodSample{{{recPerSec: 100, cpuPerGiB: []float64{1, 2, 3}}, {recPerSec: 90, cpuPerGiB: []float64{1, 2, 3}}}}},
		consume: &consResults{fill: fill{committed: 9, aborted: 1, txns: 2, abortedTxns: 1}, runs: [][]consSample{{{fetchMS: 10}, {fetchMS: 10}}}},
		endTxn:  &endTxnResults{runs: []endTxnSample{{txns: 5, p50: 1.5, p99: 3}}},
	}
	out := markdown(header{cfg: config{runs: 1, only: sections, set: []string{"x=y"}}}, r)
	for _, want := range []string{"## Summary", "## 1. Producer throughput", "## 2. read_committed", "## 3. EndTxn latency",
		"**0.900×** MISS", "**1.000×** PASS", "p50 1.50 ms, p99 3.00 ms", "`x=y`", "-set x=y"} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "NaN")
}
