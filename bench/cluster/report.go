package main

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// Goals of the issue, and the figure they are read against.
const (
	goalRF3Ratio   = 0.6                    // RF 3 acks=all / RF 1 acks=1 records/s; Kafka publishes ~0.5
	goalShutdownMS = 100 * time.Millisecond // longest gap around a controlled shutdown
)

// header is what the report says about where and how it was measured.
type header struct {
	benchproc.Host
	date      time.Time
	cfg       config
	qkVersion string
	zkVersion string
	took      time.Duration
	commands  []string // ZooKeeper's and broker 0's first command lines
}

// results is everything the sections measured; a section not run is nil
// or empty.
type results struct {
	throughput *tpResults
	lag        bool
	shutdown   *shutdownResult
	failover   []failoverResult
	commands   []string
	ballast    int64  // bytes of the page-cache ballast, 0 without
	err        string // what stopped the benchmark early
}

// markdown renders the whole report.
func markdown(h header, r *results) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# qk cluster replication benchmark, %s\n\n", h.date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&sb, "- checkout: %s (%s)\n", benchproc.OrUnknown(h.Describe), benchproc.OrUnknown(h.qkVersion))
	fmt.Fprintf(&sb, "- machine: %s × %d CPUs, Linux %s, %s\n", benchproc.OrUnknown(h.CPUModel), h.CPUs, benchproc.OrUnknown(h.Kernel), h.GoVersion)
	fmt.Fprintf(&sb, "- cluster: 3 `qk broker start` processes (ids 0, 1, 2) on one standalone ZooKeeper %s (Debian), all on 127.0.0.1, "+
		"each broker a process of its own with its own data directory\n", benchproc.OrUnknown(h.zkVersion))
	fmt.Fprintf(&sb, "- throughput: %s, %s 1 KiB records per run, configurations interleaved within each run\n",
		benchproc.RunsText(h.cfg.runs, h.cfg.warmup), benchproc.Group(float64(h.cfg.records)))
	if r.ballast > 0 {
		fmt.Fprintf(&sb, "- page cache: a %.1f GiB ballast file filled the free memory before the runs (kept until the end), so that the brokers' "+
			"writes recycle page-cache pages instead of first-touching memory this VM returned to its host (up to ~5× slower; -ballast=false turns it off)\n",
			float64(r.ballast)/(1<<30))
	} else if !h.cfg.quick {
		sb.WriteString("- page cache: no ballast (-ballast=false): writes may first-touch memory the VM returned to its host\n")
	}
	fmt.Fprintf(&sb, "- sections: %s; took %v\n", strings.Join(h.cfg.only, ", "), h.took.Round(time.Second))
	sb.WriteString("\n")
	if h.cfg.quick {
		sb.WriteString("**-quick: tiny counts, one run, one kill and one shutdown: these figures say the benchmark works, not what qk does.**\n\n")
	}
	if r.err != "" {
		fmt.Fprintf(&sb, "**Stopped early; the sections below hold what was measured before:**\n\n```\n%s\n```\n\n", strings.TrimSpace(r.err))
	}
	commandsSection(&sb, h, r)
	if r.throughput != nil {
		throughputSection(&sb, r.throughput)
		if r.lag {
			lagSection(&sb, r.throughput)
		}
	}
	if len(r.failover) > 0 {
		failoverSection(&sb, r.failover)
	}
	if r.shutdown != nil {
		shutdownSection(&sb, r.shutdown)
	}
	return sb.String()
}

func commandsSection(sb *strings.Builder, h header, r *results) {
	sb.WriteString("## How it was run\n\n")
	fmt.Fprintf(sb, "`go run ./bench/cluster %s` started, in a temporary directory:\n\n```\n", strings.Join(argsOf(h.cfg), " "))
	for _, c := range h.commands {
		sb.WriteString(c + "\n")
	}
	sb.WriteString("```\n\n")
	fmt.Fprintf(sb, "ZooKeeper has tickTime=%d and maxSessionTimeout=%d (sessions of up to 40 s; its test default of 500 ms ticks caps them at 10 s). "+
		"Brokers 1 and 2 differ from broker 0 only in broker.id, port and log.dirs. "+
		"The failover section restarts all three, one at a time, with each zookeeper.session.timeout.ms.\n\n", benchproc.ZKTickTime, 20*benchproc.ZKTickTime)
	if r.throughput != nil {
		sb.WriteString("Each throughput run creates a fresh topic with an explicit replica assignment (CreateTopics; partition i's replicas start at broker i, " +
			"so broker 0 leads the 1-partition topics and each broker leads one of 3 partitions), waits until every broker's metadata shows the " +
			"preferred leaders and full ISRs, then runs one of:\n\n```\n")
		for j, t := range tpConfigs {
			if r.throughput.only[j] {
				fmt.Fprintf(sb, "qk %s   # %s\n", strings.Join(perfArgs(t, []string{"B0", "B1", "B2"}, "TOPIC", h.cfg.records), " "), t.name)
			}
		}
		sb.WriteString("```\n\nRF 3 topics have min.insync.replicas=2. The topic is deleted after the run (log.segment.delete.delay.ms=0).\n\n")
	}
	if r.shutdown != nil || len(r.failover) > 0 {
		sb.WriteString("The shutdown and failover sections use an in-process franz-go producer writing one record at a time (a sequence number) " +
			"to a 1-partition RF 3 topic with min.insync.replicas=2: acks=all, idempotent, no linger; retries back off 10 ms, doubling to at most " +
			"100 ms, and metadata may be refreshed every 10 ms, so the times are the cluster's and not a client's back-off (Kafka's Java client " +
			"waits retry.backoff.ms=100 before a retry, which alone would fill the shutdown budget). " +
			"Every acknowledgement's time is kept; at the end the partition is read back from offset 0 to its high watermark and every " +
			"acknowledged value looked for.\n\n")
	}
}

// argsOf is the command line that reproduces cfg (without -qk and -o).
func argsOf(cfg config) []string {
	if cfg.quick {
		return []string{"-quick"}
	}
	args := []string{fmt.Sprintf("-runs %d", cfg.runs), fmt.Sprintf("-records %d", cfg.records)}
	if cfg.kills != 3 {
		args = append(args, fmt.Sprintf("-kills %d", cfg.kills))
	}
	if cfg.shutdowns != 3 {
		args = append(args, fmt.Sprintf("-shutdowns %d", cfg.shutdowns))
	}
	if len(cfg.only) != len(sections) {
		args = append(args, "-only "+strings.Join(cfg.only, ","))
	}
	return args
}

func throughputSection(sb *strings.Builder, r *tpResults) {
	sb.WriteString("## 1. Throughput, 1 KiB records\n\n")
	sb.WriteString("Medians over the runs, each figure separately. Latency is the producer's, send to acknowledgement (ms). " +
		"CPU-s/GiB is each broker process's utime+stime (/proc/<pid>/stat) over the run per GiB of record values produced: " +
		"with 1 partition broker 0 is the leader and brokers 1 and 2 are its followers (RF 3) or idle (RF 1); " +
		"with 3 partitions each broker leads one partition and follows the other two. " +
		"\"first write\" is the priming write before each run: one record per partition of the fresh topic with the run's acks, " +
		"sent once the client has metadata, until all are acknowledged. It is left out of the run because an acks=all write to a new partition " +
		"waits for the followers' first fetches of it, a cost of creating the topic that would otherwise land in every RF 3 run.\n\n")
	benchproc.TableRow(sb, []string{"configuration", "records/s", "MiB/s", "p50 ms", "p99 ms", "first write ms", "CPU-s/GiB broker 0", "broker 1", "broker 2"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"})
	for j, t := range tpConfigs {
		if !r.only[j] {
			continue
		}
		cells := []string{t.name,
			benchproc.Group(r.median(j, func(s tpSample) float64 { return s.recPerSec })),
			fmt.Sprintf("%.1f", r.median(j, func(s tpSample) float64 { return s.mibPerSec })),
			fmt.Sprintf("%.2f", r.median(j, func(s tpSample) float64 { return s.p50 })),
			fmt.Sprintf("%.2f", r.median(j, func(s tpSample) float64 { return s.p99 })),
			fmt.Sprintf("%.0f", r.median(j, func(s tpSample) float64 { return s.firstWrite })),
		}
		for id := range 3 {
			cells = append(cells, fmt.Sprintf("%.2f", r.median(j, func(s tpSample) float64 {
				if id < len(s.cpuPerGiB) {
					return s.cpuPerGiB[id]
				}
				return math.NaN()
			})))
		}
		benchproc.TableRow(sb, cells)
	}
	sb.WriteString("\n")

	pairs := []struct {
		name   string
		rf3    int
		rf1    int
		enough bool
	}{
		{"1 partition", tp1RF3, tp1RF1, r.only[tp1RF3] && r.only[tp1RF1]},
		{"3 partitions", tp3RF3, tp3RF1, r.only[tp3RF3] && r.only[tp3RF1]},
	}
	if !pairs[0].enough && !pairs[1].enough {
		return
	}
	fmt.Fprintf(sb, "RF 3 acks=all / RF 1 acks=1 records/s, per run (both measured seconds apart) and the median of those ratios. "+
		"The goal is ≥ %.1f×; Kafka's published figure is about 0.5×.\n\n", goalRF3Ratio)
	head := []string{"run"}
	align := []string{"---"}
	for _, p := range pairs {
		if p.enough {
			head, align = append(head, p.name), append(align, "---:")
		}
	}
	benchproc.TableRow(sb, head)
	benchproc.TableRow(sb, align)
	for i := range r.runs {
		cells := []string{fmt.Sprint(i + 1)}
		for _, p := range pairs {
			if p.enough {
				cells = append(cells, ratioText(r.ratio(i, p.rf3, p.rf1)))
			}
		}
		benchproc.TableRow(sb, cells)
	}
	cells := []string{"**median**"}
	for _, p := range pairs {
		if p.enough {
			m := r.medianRatio(p.rf3, p.rf1)
			cells = append(cells, fmt.Sprintf("**%s** %s", ratioText(m), verdict(m >= goalRF3Ratio, m)))
		}
	}
	benchproc.TableRow(sb, cells)
	sb.WriteString("\n")
}

func ratioText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

// verdict is PASS or MISS, or nothing for a figure that is not there.
func verdict(pass bool, v float64) string {
	switch {
	case math.IsNaN(v):
		return ""
	case pass:
		return "PASS"
	default:
		return "MISS"
	}
}

func lagSection(sb *strings.Builder, r *tpResults) {
	sb.WriteString("## 2. Replication lag under the 1-partition acks=all load\n\n")
	sb.WriteString("Every 100 ms during each measured run of \"1 partition, RF 3, acks=all\", one DescribeLogDirs to each broker at once " +
		"(kadm DescribeAllLogDirs) gives the size in bytes of its replica's log; a follower's lag is the leader's (broker 0) size minus its own. " +
		"Samples count from the first one in which the leader holds data to the end of the perf process. The three sizes are read at nearly, " +
		"not exactly, the same instant, so a follower can look ahead of the leader: that counts as 0. Records are approximate: lag bytes over " +
		"the leader's log bytes per record at the end of the run (record and batch overhead included). Followers fetch whole batches, and the producer's batches are up to ~1 MB, so the lag moves in steps of about that size. The table has the median over runs of " +
		"each run's p50 and p99, and the largest lag of any run.\n\n")
	type agg struct{ p50, p99, max, samples []float64 }
	per := map[int32]*agg{}
	var bpr []float64
	failed := 0
	for _, run := range r.runs {
		l := run[tp1RF3].lag
		if l == nil {
			continue
		}
		bpr = append(bpr, l.bytesPerRecord)
		failed += l.failed
		for _, f := range l.followers {
			a := per[f.id]
			if a == nil {
				a = &agg{}
				per[f.id] = a
			}
			a.p50, a.p99, a.max = append(a.p50, f.p50), append(a.p99, f.p99), append(a.max, f.max)
			a.samples = append(a.samples, float64(f.samples))
		}
	}
	if len(per) == 0 {
		sb.WriteString("No samples.\n\n")
		return
	}
	rec := benchproc.Median(bpr)
	benchproc.TableRow(sb, []string{"follower", "samples per run", "p50 KiB", "p99 KiB", "max KiB", "p50 records", "p99 records", "max records"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"})
	for _, id := range slices.Sorted(maps.Keys(per)) {
		a := per[id]
		p50, p99, mx := benchproc.Median(a.p50), benchproc.Median(a.p99), slices.Max(a.max)
		benchproc.TableRow(sb, []string{fmt.Sprintf("broker %d", id), benchproc.Group(benchproc.Median(a.samples)),
			fmt.Sprintf("%.1f", p50/1024), fmt.Sprintf("%.1f", p99/1024), fmt.Sprintf("%.1f", mx/1024),
			approxRecords(p50, rec), approxRecords(p99, rec), approxRecords(mx, rec)})
	}
	fmt.Fprintf(sb, "\nThe leader's log held %.0f bytes per 1 KiB record.", rec)
	if failed > 0 {
		fmt.Fprintf(sb, " %d samples failed (DescribeLogDirs did not answer within 2 s) and are left out.", failed)
	}
	sb.WriteString("\n\n")
}

func approxRecords(bytes, perRecord float64) string {
	if perRecord <= 0 || math.IsNaN(perRecord) {
		return "—"
	}
	return "~" + benchproc.Group(bytes/perRecord)
}

func shutdownSection(sb *strings.Builder, r *shutdownResult) {
	sb.WriteString("## 4. Controlled shutdown of the leader\n\n")
	fmt.Fprintf(sb, "SIGTERM to the partition's leader (qk moves its leaderships away before it stops) under the one-record-at-a-time producer. "+
		"Unavailability is the longest gap between consecutive acknowledgements from the last one before the SIGTERM to the first one more "+
		"than %v after the broker exited. The broker is restarted and the full ISR awaited between shutdowns; the next one targets whichever "+
		"broker leads then. The goal is < %v.\n\n", shutdownWindowTail, goalShutdownMS)
	benchproc.TableRow(sb, []string{"#", "leader", "longest gap ms", "gap began after SIGTERM ms", "SIGTERM to exit ms", "client errors"})
	benchproc.TableRow(sb, []string{"---", "---", "---:", "---:", "---:", "---"})
	var gaps []float64
	for i, s := range r.runs {
		gaps = append(gaps, float64(s.gap)/float64(time.Millisecond))
		benchproc.TableRow(sb, []string{fmt.Sprint(i + 1), victimText(s.victim, s.controller), msText(s.gap), msText(s.gapAfter), msText(s.stopTook), errsText(s.errs, s.exitErr)})
	}
	m := benchproc.Median(gaps)
	fmt.Fprintf(sb, "\nMedian longest gap: **%.1f ms** %s. ", m, verdict(m < float64(goalShutdownMS/time.Millisecond), m))
	fmt.Fprintf(sb, "%s\n\n", verifyText(r.verify, r.failed))
}

func failoverSection(sb *strings.Builder, rs []failoverResult) {
	sb.WriteString("## 3. Failover after kill -9 of the leader\n\n")
	sb.WriteString("SIGKILL to the partition's leader under the one-record-at-a-time producer; the time is from just before the kill to the " +
		"acknowledgement of the first record sent after it (an acknowledgement the old leader had already sent does not count; this overstates " +
		"by one round trip, about a millisecond) (from the new leader, once ZooKeeper has expired the dead broker's session and the controller has " +
		"elected a leader from the ISR). The victim is restarted and back in the ISR before the next kill, which targets whichever broker leads then. " +
		"\"controller\" marks a victim that was also the controller (so a controller election came first).\n\n")
	n := 0
	for _, r := range rs {
		n = max(n, len(r.kills))
	}
	head := []string{"zookeeper.session.timeout.ms"}
	align := []string{"---:"}
	for i := range n {
		head, align = append(head, fmt.Sprintf("kill %d", i+1)), append(align, "---:")
	}
	head = append(head, "median", "acknowledged", "lost", "duplicated", "failed")
	align = append(align, "---:", "---:", "---:", "---:", "---:")
	benchproc.TableRow(sb, head)
	benchproc.TableRow(sb, align)
	for _, r := range rs {
		cells := []string{fmt.Sprint(r.session)}
		var took []float64
		for i := range n {
			if i >= len(r.kills) {
				cells = append(cells, "")
				continue
			}
			k := r.kills[i]
			took = append(took, k.took.Seconds())
			cells = append(cells, fmt.Sprintf("%.2f s (%s)", k.took.Seconds(), victimText(k.victim, k.controller)))
		}
		cells = append(cells, fmt.Sprintf("**%.2f s**", benchproc.Median(took)),
			benchproc.Group(float64(r.verify.acked)), fmt.Sprint(r.verify.missing), fmt.Sprint(r.verify.duplicated), fmt.Sprint(r.failed))
		benchproc.TableRow(sb, cells)
	}
	sb.WriteString("\n\"lost\" counts acknowledged records not in the partition when it was read back; \"failed\" counts records the producer gave up on " +
		"(not acknowledged, so not a loss).\n\n")
}

func victimText(id int32, controller bool) string {
	if controller {
		return fmt.Sprintf("broker %d, controller", id)
	}
	return fmt.Sprintf("broker %d", id)
}

func msText(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// errsText lists distinct client errors with their counts, most frequent
// first, on one line for a table cell.
func errsText(errs map[string]int, exitErr string) string {
	var parts []string
	if exitErr != "" {
		parts = append(parts, "broker: "+exitErr)
	}
	keys := slices.SortedFunc(maps.Keys(errs), func(a, b string) int {
		if errs[a] != errs[b] {
			return errs[b] - errs[a]
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", errs[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return oneLine(strings.Join(parts, "; "))
}

func verifyText(v verifyResult, failed int) string {
	return fmt.Sprintf("Read back: %s acknowledged records, %d lost, %d duplicated (%s records in the partition); %d records failed.",
		benchproc.Group(float64(v.acked)), v.missing, v.duplicated, benchproc.Group(float64(v.read)), failed)
}

// oneLine is s as one table cell: newlines become spaces, pipes escaped.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
