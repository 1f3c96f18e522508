package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/qk-project/qk/bench/internal/benchproc"
	"github.com/stretchr/testify/require"
)

const (
	produceFinal = `{"type":"final","records":500000,"bytes":512000000,"errors":0,"elapsed_s":1.25,"records_per_sec":400000.5,"mib_per_sec":390.6,"latency_ms":{"avg":3.1,"max":40.25,"p50":2.5,"p95":7.125,"p99":9.001,"p999":12.5}}`
	consumeFinal = `{"type":"final","records":500000,"bytes":512000000,"elapsed_s":0.5,"records_per_sec":1000000,"mib_per_sec":976.6,"rebalance_ms":0,"fetch_ms":480,"fetch_mib_per_sec":1017.3,"fetch_records_per_sec":1041666.7}`
)

func TestPerfFinalCheck(t *testing.T) {
	ok := benchproc.Final{Type: "final", Records: 100, ElapsedS: 1, RecordsPerSec: 100, Latency: &benchproc.Latency{P99: 1}}
	tests := []struct {
		name    string
		f       func(benchproc.Final) benchproc.Final
		ld      load
		wantErr string
	}{
		{"complete produce", func(f benchproc.Final) benchproc.Final { return f }, produceLoad, ""},
		{"complete consume has no latency", func(f benchproc.Final) benchproc.Final { f.Latency = nil; return f }, consumeLoad, ""},
		{"errors", func(f benchproc.Final) benchproc.Final { f.Errors = 3; return f }, produceLoad, "3 errors"},
		{"short", func(f benchproc.Final) benchproc.Final { f.Records = 99; return f }, produceLoad, "99 of 100 records"},
		{"too many", func(f benchproc.Final) benchproc.Final { f.Records = 101; return f }, consumeLoad, "101 of 100 records"},
		{"zero rate", func(f benchproc.Final) benchproc.Final { f.RecordsPerSec = 0; return f }, produceLoad, "records/s"},
		{"produce without latency", func(f benchproc.Final) benchproc.Final { f.Latency = nil; return f }, produceLoad, "no latency_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(tt.f(ok), tt.ld, 100)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestNewSample(t *testing.T) {
	f, err := benchproc.ParsePerfOutput([]byte(produceFinal))
	require.NoError(t, err)
	r := row{records: 500000, size: 1024}
	got := newSample(f, r, 0.5) // 0.5 CPU-s over 512,000,000 B
	require.InDelta(t, 0.5/(512e6/gib), got.cpuPerGiB, 1e-9)
	require.Equal(t, sample{recPerSec: 400000.5, mibPerSec: 390.6, p50: 2.5, p99: 9.001, p999: 12.5, cpuPerGiB: got.cpuPerGiB, hasLatency: true}, got)

	// No bytes reported: records × size is what was sent.
	f.Bytes = 0
	require.InDelta(t, 0.5/(512e6/gib), newSample(f, r, 0.5).cpuPerGiB, 1e-9)

	// A consumer counts its fetch phase, when the tool reports one.
	f, err = benchproc.ParsePerfOutput([]byte(consumeFinal))
	require.NoError(t, err)
	r.load = consumeLoad
	got = newSample(f, r, 0.25)
	require.Equal(t, sample{recPerSec: 1041666.7, mibPerSec: 1017.3, cpuPerGiB: 0.25 / (512e6 / gib)}, got)
	f.FetchRecordsPerSec, f.FetchMiBPerSec = 0, 0
	got = newSample(f, r, 0.25)
	require.Equal(t, 1000000.0, got.recPerSec)
	require.Equal(t, 976.6, got.mibPerSec)
}

func TestSummaryTakesEachFigureSeparately(t *testing.T) {
	runs := []sample{
		{recPerSec: 3, p99: 10, cpuPerGiB: 0.2, hasLatency: true},
		{recPerSec: 1, p99: 30, cpuPerGiB: 0.1, hasLatency: true},
		{recPerSec: 2, p99: 20, cpuPerGiB: 0.3, hasLatency: true},
	}
	got, ok := summary(runs)
	require.True(t, ok)
	require.Equal(t, sample{recPerSec: 2, p99: 20, cpuPerGiB: 0.2, hasLatency: true}, got)
	_, ok = summary(nil)
	require.False(t, ok)
}

// resultsOf builds results in which every role of every row of the matrix
// ran at the records/s fig returns for it.
func resultsOf(fig func(r row, ro role) sample) *results {
	rs := &results{}
	for _, r := range matrix(false) {
		rr := &rowResult{row: r, runs: map[role][]sample{}}
		for _, ro := range r.roles {
			rr.runs[ro] = []sample{fig(r, ro)}
		}
		rs.add(rr)
	}
	return rs
}

func TestRatio(t *testing.T) {
	rs := &results{}
	rs.add(&rowResult{row: row{name: "a"}, runs: map[role][]sample{
		roleQK:      {{recPerSec: 90}, {recPerSec: 100}, {recPerSec: 300}},
		rolePeer:    {{recPerSec: 80}, {recPerSec: 50}, {recPerSec: 40}},
		roleCeiling: {{recPerSec: 0}},
	}})
	got, ok := rs.ratio("a", roleQK, "a", rolePeer)
	require.True(t, ok)
	require.InDelta(t, 2.0, got, 1e-12, "a ratio of medians: 100/50")

	_, ok = rs.ratio("a", roleQK, "a", roleCeiling)
	require.False(t, ok, "a zero denominator is no ratio")
	_, ok = rs.ratio("a", roleQK, "b", roleQK)
	require.False(t, ok, "a row not run is no ratio")
	_, ok = rs.ratio("a", roleQK, "a", role(7))
	require.False(t, ok, "a role with no runs is no ratio")
}

func TestTargetsFindTheirRows(t *testing.T) {
	// Every target must evaluate on the full matrix: a renamed row would
	// otherwise turn a target into "n/a" without anyone noticing.
	rs := resultsOf(func(row, role) sample { return sample{recPerSec: 1, p99: 1, p999: 1, cpuPerGiB: 1, hasLatency: true} })
	for _, tg := range targets {
		_, ok := tg.eval(rs)
		require.True(t, ok, "target %q does not find its rows", tg.name)
	}
}

func TestTargets(t *testing.T) {
	// A good day: qk at 95% of every ceiling and 1.5× the peer, cheap and
	// quick; fsync, acks=-1 and 100 partitions barely slower.
	good := func(r row, ro role) sample {
		s := sample{recPerSec: 100, cpuPerGiB: 0.2, p99: 0.5, p999: 2, hasLatency: r.load == produceLoad}
		switch {
		case ro == roleCeiling:
			s.recPerSec = 100 / 0.95
		case ro == rolePeer:
			s.recPerSec = 100 / 1.5
		case r.fsync || r.partitions > 1 || r.acks == -1:
			s.recPerSec = 95
		}
		return s
	}
	// A bad day: everything just past each bound.
	bad := func(r row, ro role) sample {
		s := sample{recPerSec: 100, cpuPerGiB: 0.81, p99: 2.01, p999: 5.01, hasLatency: r.load == produceLoad}
		switch {
		case ro == roleCeiling:
			s.recPerSec = 100 / 0.89
		case ro == rolePeer:
			s.recPerSec = 100 / 1.19
		case r.fsync:
			s.recPerSec = 69
		case r.partitions > 1:
			s.recPerSec = 79
		case r.acks == -1:
			s.recPerSec = 89
		}
		return s
	}
	goodRS, badRS := resultsOf(good), resultsOf(bad)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			v, ok := tg.eval(goodRS)
			require.True(t, ok)
			require.True(t, tg.pass(v), "good day: %s = %v, want %s", tg.name, v, tg.want())
			v, ok = tg.eval(badRS)
			require.True(t, ok)
			require.False(t, tg.pass(v), "bad day: %s = %v, want a MISS of %s", tg.name, v, tg.want())
		})
	}
}

func TestTargetBoundsAreInclusive(t *testing.T) {
	atLeast := target{limit: 0.9, unit: "×"}
	require.True(t, atLeast.pass(0.9))
	require.False(t, atLeast.pass(0.8999))
	atMost := target{atMost: true, limit: 1, unit: "ms"}
	require.True(t, atMost.pass(1))
	require.False(t, atMost.pass(1.001))
	require.Equal(t, "≥ 0.9×", atLeast.want())
	require.Equal(t, "≤ 1 ms", atMost.want())
	require.Equal(t, "0.93×", atLeast.format(0.934))
	require.Equal(t, "0.250 ms", atMost.format(0.25))
}

func TestSelectRows(t *testing.T) {
	rows := matrix(false)
	got, err := selectRows(rows, "produce 1 KiB acks=1 none")
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, rowProduce1K, got[0].name)

	got, err = selectRows(rows, "^consume")
	require.NoError(t, err)
	require.Len(t, got, 4)

	got, err = selectRows(rows, "")
	require.NoError(t, err)
	require.Len(t, got, len(rows))

	_, err = selectRows(rows, "(")
	require.ErrorContains(t, err, "-only")
	_, err = selectRows(rows, "nothing like this")
	require.ErrorContains(t, err, "matches no row")
}

func TestMatrix(t *testing.T) {
	for _, quick := range []bool{false, true} {
		rows := matrix(quick)
		// 8 produce, 4 consume, 2 latency, 2 partitions, fsync.
		require.Len(t, rows, 17)
		names := map[string]bool{}
		perSection := map[string]int{}
		for _, r := range rows {
			require.False(t, names[r.name], "row name %q twice", r.name)
			names[r.name] = true
			perSection[r.section]++
			require.Positive(t, r.records)
			require.Equal(t, roleQK, r.roles[0], "qk runs first in every row")
		}
		require.Equal(t, map[string]int{secProduce: 8, secConsume: 4, secLatency: 2, secPartitions: 2, secFsync: 1}, perSection)
	}
	full := matrix(false)
	require.Equal(t, 2_000_000, full[0].records, "100 B × 2M")
	byName := map[string]row{}
	for _, r := range full {
		byName[r.name] = r
	}
	require.Equal(t, 500_000, byName[rowProduce1K].records, "1 KiB × 500k")
	require.Equal(t, 10_000, byName[rowLatency1K].rate)
	require.Equal(t, "0ms", byName[rowLatency1K].linger)
	require.Equal(t, 100, byName[rowPartitions1K].partitions)
	require.Equal(t, 1000, byName[rowPartitions1K1k].partitions)
	require.True(t, byName[rowFlushMessages1K].fsync)
}

func TestPerfArgs(t *testing.T) {
	r := row{load: produceLoad, records: 500000, size: 1024, acks: -1, compression: "lz4", rate: -1, linger: "5ms", partitions: 1}
	require.Equal(t, "perf produce -b 127.0.0.1:1 --topic t --num-records 500000 --record-size 1024 --throughput -1 --acks -1 "+
		"--compression lz4 --linger 5ms --payload random --producer-props enable.idempotence=true --json",
		strings.Join(produceArgs(r, "127.0.0.1:1", "t"), " "))

	lat := row{load: produceLoad, records: 100, size: 100, acks: 1, compression: "none", rate: 10000, linger: "0ms"}
	require.Contains(t, strings.Join(produceArgs(lat, "a", "t"), " "), "--throughput 10000 --acks 1 --compression none --linger 0ms --payload random --producer-props enable.idempotence=false")

	// The fill for a consume row goes at full speed whatever the row says.
	c := row{load: consumeLoad, records: 7, size: 100, acks: 1, compression: "none", rate: 10000, linger: "5ms"}
	require.Contains(t, strings.Join(produceArgs(c, "a", "t"), " "), "--throughput -1")
	require.Equal(t, "perf consume -b a --topic t --messages 7 --timeout 30000 --json",
		strings.Join(consumeArgs(c, "a", "t", 30e9), " "))
}

func TestRoles(t *testing.T) {
	rows := map[string]row{}
	for _, r := range matrix(false) {
		rows[r.name] = r
	}
	p := rows[rowProduce1K]
	require.Equal(t, kfakeSpec{mode: "blackhole", partitions: 1}, p.kfake(roleCeiling))
	require.Equal(t, kfakeSpec{mode: "peer", partitions: 1}, p.kfake(rolePeer))
	require.Nil(t, p.topicConfigs(roleQK))

	c := rows["consume 1 KiB lz4"]
	require.Equal(t, kfakeSpec{mode: "synthetic", recordBytes: 1024, compression: "lz4", partitions: 1}, c.kfake(roleCeiling))
	require.True(t, c.needsFill(roleQK))
	require.True(t, c.needsFill(rolePeer))
	require.False(t, c.needsFill(roleCeiling), "the synthetic ceiling serves its canned batch")
	require.False(t, p.needsFill(roleQK))

	f := rows[rowFlushMessages1K]
	require.Equal(t, []role{roleQK, rolePeer}, f.roles)
	require.Equal(t, kfakeSpec{mode: "peer", sync: true, partitions: 1}, f.kfake(rolePeer))
	require.Equal(t, "1", *f.topicConfigs(roleQK)["flush.messages"])
	require.Nil(t, f.topicConfigs(rolePeer))

	require.Equal(t, 100, rows[rowPartitions1K].kfake(rolePeer).partitions)
}

func TestKfakeSpecArgs(t *testing.T) {
	tests := []struct {
		spec kfakeSpec
		want string
	}{
		{kfakeSpec{mode: "peer", partitions: 1}, "-addr 127.0.0.1:0 -mode peer -partitions 1 -dir D"},
		{kfakeSpec{mode: "peer", sync: true, partitions: 100}, "-addr 127.0.0.1:0 -mode peer -partitions 100 -dir D -sync"},
		{kfakeSpec{mode: "blackhole"}, "-addr 127.0.0.1:0 -mode blackhole -partitions 1"},
		{kfakeSpec{mode: "synthetic", recordBytes: 1024, compression: "lz4", partitions: 1}, "-addr 127.0.0.1:0 -mode synthetic -partitions 1 -record-bytes 1024 -compression lz4"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, strings.Join(tt.spec.args("D"), " "))
	}
}

func TestMarkdown(t *testing.T) {
	rs := resultsOf(func(r row, ro role) sample {
		return sample{recPerSec: 1234567, mibPerSec: 12.5, p50: 0.25, p99: 0.75, p999: 1.5, cpuPerGiB: 0.5, hasLatency: r.load == produceLoad}
	})
	rs.rows[rowFlushMessages1K].err = errString("peer, run 1/5: boom | bang\nlog tail")
	h := header{describe: "v0.1-3-gabc", cpuModel: "Test CPU", cpus: 2, kernel: "6.1", goVersion: "go1.26", runs: 1}
	out := markdown(h, rs, targets)

	for _, sec := range sections {
		require.Contains(t, out, "\n## "+sec+"\n")
	}
	require.Contains(t, out, "\n## Targets\n")
	require.Contains(t, out, "Test CPU × 2 CPUs, Linux 6.1, go1.26")
	require.Contains(t, out, "v0.1-3-gabc")
	require.Regexp(t, regexp.MustCompile(`(?m)^\| produce 1 KiB acks=1 none \| qk \| 500,000 \| 1,234,567 \| 12\.5 \| 0\.250 \| 0\.750 \| 1\.500 \| 0\.50 \| 1\.00× \| 1\.00× \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| consume 1 KiB none \| ceiling \(kfake synthetic\) \| 500,000 \| 1,234,567 \| 12\.5 \| — \| — \| — \| 0\.50 \| — \| — \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| latency 1 KiB 10k/s \| qk \| 100,000 \| 1,234,567 \| 12\.5 \| 0\.250 \| 0\.750 \| 1\.500 \| 0\.50 \| — \| — \|$`), out,
		"a fixed rate has no throughput ratios")
	require.Regexp(t, regexp.MustCompile(`(?m)^\| produce 1 KiB acks=1: qk / kfake peer \| 1\.00× \| ≥ 1\.25× \| MISS \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| produce 1 KiB acks=1: qk CPU-s per GiB produced \| 0\.50 CPU-s/GiB \| ≤ 0\.8 CPU-s/GiB \| PASS \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| produce 1 KiB flush\.messages=1 \| \*\*failed\*\* \| peer, run 1/5: boom \\\| bang \|`), out)
	require.NotContains(t, out, "Every measured run", "one run has no spread to show")

	// Every table line has as many cells as its header.
	var want int
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "|") {
			want = 0
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if want == 0 {
			want = n
		}
		require.Equal(t, want, n, "table line %q", line)
	}

	// Rows not run leave their targets n/a.
	partial := &results{}
	partial.add(rs.rows[rowProduce1K])
	out = markdown(h, partial, targets)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| consume 1 KiB: qk / consumer ceiling \| — \| ≥ 0\.9× \| n/a \(rows not run\) \|$`), out)
	require.NotContains(t, out, "## "+secConsume)
}

func TestMarkdownEveryRun(t *testing.T) {
	rs := &results{}
	r := matrix(false)[0]
	rs.add(&rowResult{row: r, runs: map[role][]sample{
		roleQK:   {{recPerSec: 1000}, {recPerSec: 2000}, {recPerSec: 3000}},
		rolePeer: {{recPerSec: 10}, {recPerSec: 20}},
	}})
	out := markdown(header{runs: 3}, rs, nil)
	require.Contains(t, out, "| "+r.name+" | qk | 1,000 | 2,000 | 3,000 |\n")
	require.Contains(t, out, "| "+r.name+" | kfake peer | 10 | 20 |  |\n")
	require.Contains(t, out, "| "+r.name+" | ceiling (kfake blackhole) |  |  |  |\n")
}

type errString string

func (e errString) Error() string { return string(e) }
