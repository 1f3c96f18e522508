package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

// sample is one measured run of one row against one broker.
type sample struct {
	recPerSec  float64
	mibPerSec  float64
	p50, p99   float64 // ms, produce rows only
	p999       float64
	cpuPerGiB  float64 // broker CPU-seconds per GiB of record values moved
	hasLatency bool
}

// rowResult holds every measured run of a row, per role, and the error
// that cut the row short, if one did.
type rowResult struct {
	row  row
	runs map[role][]sample
	err  error
}

// summary is the median of each figure separately: the run with the
// median throughput need not have the median latency.
func summary(runs []sample) (sample, bool) {
	if len(runs) == 0 {
		return sample{}, false
	}
	med := func(f func(sample) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return benchproc.Median(v)
	}
	return sample{
		recPerSec:  med(func(s sample) float64 { return s.recPerSec }),
		mibPerSec:  med(func(s sample) float64 { return s.mibPerSec }),
		p50:        med(func(s sample) float64 { return s.p50 }),
		p99:        med(func(s sample) float64 { return s.p99 }),
		p999:       med(func(s sample) float64 { return s.p999 }),
		cpuPerGiB:  med(func(s sample) float64 { return s.cpuPerGiB }),
		hasLatency: runs[0].hasLatency,
	}, true
}

// results are a suite run's rows, by name, in the order they ran.
type results struct {
	order []string
	rows  map[string]*rowResult
}

func (rs *results) add(r *rowResult) {
	if rs.rows == nil {
		rs.rows = make(map[string]*rowResult)
	}
	rs.order = append(rs.order, r.row.name)
	rs.rows[r.row.name] = r
}

// median returns the summary of row's runs against role.
func (rs *results) median(rowName string, ro role) (sample, bool) {
	r, ok := rs.rows[rowName]
	if !ok {
		return sample{}, false
	}
	return summary(r.runs[ro])
}

// ratio is the throughput (records/s) of role a over role b in a row, or
// of row a over row b for one role: a ratio of medians. Both figures come
// from the same suite run, interleaved, so a machine that is slow today
// is slow for both.
func (rs *results) ratio(rowA string, a role, rowB string, b role) (float64, bool) {
	x, ok1 := rs.median(rowA, a)
	y, ok2 := rs.median(rowB, b)
	if !ok1 || !ok2 || y.recPerSec <= 0 {
		return 0, false
	}
	return x.recPerSec / y.recPerSec, true
}

// header is what the report says about where and how it was measured.
type header struct {
	date      time.Time
	describe  string // git describe of the checkout
	qkVersion string
	goVersion string
	kfake     string // module version
	cpuModel  string
	cpus      int
	kernel    string
	runs      int
	warmup    int
	quick     bool
	sets      []string
	only      string
}

// markdown renders the whole report: header, one table per section, the
// targets checklist, then every run's records/s so the spread is visible.
func markdown(h header, rs *results, targets []target) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# qk benchmark suite, %s\n\n", h.date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&sb, "- checkout: %s (%s)\n", benchproc.OrUnknown(h.describe), benchproc.OrUnknown(h.qkVersion))
	fmt.Fprintf(&sb, "- machine: %s × %d CPUs, Linux %s, %s\n", benchproc.OrUnknown(h.cpuModel), h.cpus, benchproc.OrUnknown(h.kernel), h.goVersion)
	fmt.Fprintf(&sb, "- peers and ceilings: franz-go kfake %s, one broker per process (bench/kfakebroker)\n", benchproc.OrUnknown(h.kfake))
	fmt.Fprintf(&sb, "- %s; every load is a `qk perf produce|consume --json` process over 127.0.0.1; "+
		"random (incompressible) values; 1 partition unless stated; a fresh topic per run\n", runsText(h.runs, h.warmup))
	sb.WriteString("- qk: `qk broker start` with defaults plus log.segment.delete.delay.ms=0 and group.initial.rebalance.delay.ms=0")
	if len(h.sets) > 0 {
		sb.WriteString(" and " + strings.Join(h.sets, ", "))
	}
	sb.WriteString("\n")
	if h.only != "" {
		fmt.Fprintf(&sb, "- only the rows matching `%s`\n", h.only)
	}
	sb.WriteString("\nrecords/s and MiB/s are medians; MiB and GiB count record values. Latency is the producer's, " +
		"from send to acknowledgement (ms). CPU-s/GiB is the broker process's utime+stime (/proc/<pid>/stat) " +
		"over the run, per GiB produced or served. \"× peer\" and \"× ceiling\" divide this broker's median records/s by theirs.\n\n")
	if h.quick {
		sb.WriteString("**-quick: tiny counts, one run, no warm-up: these figures say the suite works, not how fast qk is.**\n\n")
	}

	for _, sec := range sections {
		var rows []*rowResult
		for _, name := range rs.order {
			if r := rs.rows[name]; r.row.section == sec {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "## %s\n\n", sec)
		sb.WriteString(sectionNote(sec))
		cols := []string{"row", "broker", "records/run", "records/s", "MiB/s", "p50 ms", "p99 ms", "p99.9 ms", "CPU-s/GiB", "× peer", "× ceiling"}
		benchproc.TableRow(&sb, cols)
		benchproc.TableRow(&sb, alignRow(len(cols), 2))
		for _, r := range rows {
			for _, ro := range r.row.roles {
				benchproc.TableRow(&sb, rs.cells(r, ro))
			}
			if r.err != nil {
				cells := make([]string, len(cols))
				cells[0], cells[1], cells[2] = r.row.name, "**failed**", oneLine(r.err.Error())
				benchproc.TableRow(&sb, cells)
			}
		}
		sb.WriteString("\n")
	}

	sb.WriteString("## Targets\n\n")
	if h.quick {
		sb.WriteString("**-quick: a PASS or MISS here is no verdict.**\n\n")
	}
	cols := []string{"target", "measured", "want", "result"}
	benchproc.TableRow(&sb, cols)
	benchproc.TableRow(&sb, []string{"---", "---:", "---:", "---"})
	for _, t := range targets {
		v, ok := t.eval(rs)
		if !ok {
			benchproc.TableRow(&sb, []string{t.name, "—", t.want(), "n/a (rows not run)"})
			continue
		}
		verdict := "MISS"
		if t.pass(v) {
			verdict = "PASS"
		}
		benchproc.TableRow(&sb, []string{t.name, t.format(v), t.want(), verdict})
	}

	if h.runs > 1 {
		sb.WriteString("\n## Every measured run (records/s)\n\n")
		cols := []string{"row", "broker"}
		for i := range h.runs {
			cols = append(cols, fmt.Sprintf("run %d", i+1))
		}
		benchproc.TableRow(&sb, cols)
		benchproc.TableRow(&sb, alignRow(len(cols), 2))
		for _, name := range rs.order {
			r := rs.rows[name]
			for _, ro := range r.row.roles {
				cells := []string{r.row.name, r.row.roleName(ro)}
				for i := range h.runs {
					c := ""
					if i < len(r.runs[ro]) {
						c = benchproc.Group(r.runs[ro][i].recPerSec)
					}
					cells = append(cells, c)
				}
				benchproc.TableRow(&sb, cells)
			}
		}
	}
	return sb.String()
}

// cells are one table line: row r against role ro.
func (rs *results) cells(r *rowResult, ro role) []string {
	s, ok := summary(r.runs[ro])
	cells := []string{r.row.name, r.row.roleName(ro), benchproc.Group(float64(r.row.records))}
	if !ok {
		return append(cells, "—", "—", "—", "—", "—", "—", "—", "—")
	}
	cells = append(cells, benchproc.Group(s.recPerSec), fmt.Sprintf("%.1f", s.mibPerSec))
	if s.hasLatency {
		cells = append(cells, ms(s.p50), ms(s.p99), ms(s.p999))
	} else {
		cells = append(cells, "—", "—", "—")
	}
	cells = append(cells, fmt.Sprintf("%.2f", s.cpuPerGiB))
	// Ratios compare a broker with those that bound it: qk with the peer,
	// qk and the peer with the ceiling. At a fixed rate every broker keeps
	// up, so there the latency columns are the comparison.
	vsPeer, vsCeiling := "—", "—"
	if r.row.rate > 0 {
		return append(cells, vsPeer, vsCeiling)
	}
	if ro == roleQK {
		if v, ok := rs.ratio(r.row.name, roleQK, r.row.name, rolePeer); ok {
			vsPeer = fmt.Sprintf("%.2f×", v)
		}
	}
	if ro != roleCeiling {
		if v, ok := rs.ratio(r.row.name, ro, r.row.name, roleCeiling); ok {
			vsCeiling = fmt.Sprintf("%.2f×", v)
		}
	}
	return append(cells, vsPeer, vsCeiling)
}

func sectionNote(sec string) string {
	switch sec {
	case secProduce:
		return "Unthrottled producer, linger 5 ms; acks=-1 rows use an idempotent producer. " +
			"The ceiling acknowledges without storing (kfake.BlackholeProduce).\n\n"
	case secConsume:
		return "Each run first fills a fresh topic (unmeasured, acks=1, same codec), then one consumer reads it back from the start. " +
			"The ceiling answers every fetch from one canned batch of the same size and codec (kfake.SyntheticFetch). " +
			"records/s and MiB/s are the fetch phase's when `qk perf consume` reports one (after any group join), as kafka-consumer-perf-test's fetch.MB.sec.\n\n"
	case secLatency:
		return "The producer is held to 10,000 records/s, acks=1, linger 0, so latency is the broker's and the loopback's, not a queue's. " +
			"Every broker keeps up, so there are no throughput ratios: compare the latency columns.\n\n"
	case secPartitions:
		return "The produce 1 KiB acks=1 row, spread by the producer's default partitioner over a 100-partition topic.\n\n"
	case secFsync:
		return "qk's topic has flush.messages=1 (an fsync per batch); the kfake peer runs with SyncWrites.\n\n"
	}
	return ""
}

// alignRow left-aligns the first text columns and right-aligns the rest.
func alignRow(n, text int) []string {
	cells := make([]string, n)
	for i := range cells {
		cells[i] = "---:"
		if i < text {
			cells[i] = "---"
		}
	}
	return cells
}

func ms(v float64) string { return fmt.Sprintf("%.3f", v) }

func runsText(runs, warmup int) string {
	plural := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	s := "1 run per row and broker"
	if runs > 1 {
		s = "median of " + plural(runs, "run") + " per row and broker"
	}
	if warmup == 0 {
		return s + ", no warm-up"
	}
	return s + " after " + plural(warmup, "warm-up run") + ", brokers interleaved run by run"
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.ReplaceAll(s, "|", `\|`)
}
