package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// Goals of issue 20, and the figures they are read against.
const (
	goalProduceRatio = 0.97 // transactional / idempotent records/s: "≤ 3% lower", as Kafka measured
	goalConsumeRatio = 0.97 // read_committed / read_uncommitted speed
)

// header is what the report says about where and how it was measured.
type header struct {
	benchproc.Host
	date      time.Time
	cfg       config
	qkVersion string
	zkVersion string
	took      time.Duration
	load      [2]string // /proc/loadavg at the start and the end
}

// loadAvg is the first three fields of /proc/loadavg ("" when unreadable).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// results is everything the sections measured; a section not run is nil.
type results struct {
	produce  *prodResults
	consume  *consResults
	endTxn   *endTxnResults
	commands []string // ZooKeeper's and broker 0's command lines
	ballast  int64    // bytes of the page-cache ballast, 0 without
	err      string   // what stopped the benchmark early
}

// markdown renders the whole report.
func markdown(h header, r *results) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# qk transactions benchmark, %s\n\n", h.date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&sb, "- checkout: %s (%s)\n", benchproc.OrUnknown(h.Describe), benchproc.OrUnknown(h.qkVersion))
	fmt.Fprintf(&sb, "- machine: %s × %d CPUs, Linux %s, %s; the cores are shared with other jobs of the machine, "+
		"and the three brokers, ZooKeeper and the client all run on them\n",
		benchproc.OrUnknown(h.CPUModel), h.CPUs, benchproc.OrUnknown(h.Kernel), h.GoVersion)
	fmt.Fprintf(&sb, "- cluster: 3 `qk broker start` processes (ids 0, 1, 2) on one standalone ZooKeeper %s (Debian), all on 127.0.0.1, "+
		"each broker a process of its own with its own data directory; __transaction_state with its defaults (50 partitions, RF 3)\n",
		benchproc.OrUnknown(h.zkVersion))
	fmt.Fprintf(&sb, "- runs: %s, the two sides of each comparison interleaved within each run (the side measured first alternating)\n",
		benchproc.RunsText(h.cfg.runs, h.cfg.warmup))
	if r.ballast > 0 {
		fmt.Fprintf(&sb, "- page cache: a %.1f GiB ballast file filled the free memory before the runs (kept until the end), so that the brokers' "+
			"writes recycle page-cache pages instead of first-touching memory this VM returned to its host (up to ~5× slower; -ballast=false turns it off)\n",
			float64(r.ballast)/(1<<30))
	}
	if len(h.cfg.set) > 0 {
		fmt.Fprintf(&sb, "- broker settings beyond the defaults: `%s`\n", strings.Join(h.cfg.set, "`, `"))
	}
	fmt.Fprintf(&sb, "- load average (1, 5, 15 min) at the start: %s; at the end: %s\n", benchproc.OrUnknown(h.load[0]), benchproc.OrUnknown(h.load[1]))
	fmt.Fprintf(&sb, "- sections: %s; took %v\n", strings.Join(h.cfg.only, ", "), h.took.Round(time.Second))
	sb.WriteString("\n")
	if h.cfg.quick {
		sb.WriteString("**-quick: tiny counts, one run, no warm-up: these figures say the benchmark works, not what qk does.**\n\n")
	}
	if r.err != "" {
		fmt.Fprintf(&sb, "**Stopped early; the sections below hold what was measured before:**\n\n```\n%s\n```\n\n", strings.TrimSpace(r.err))
	}
	summary(&sb, r)
	commandsSection(&sb, h, r)
	if r.produce != nil {
		produceSection(&sb, r.produce)
	}
	if r.consume != nil {
		consumeSection(&sb, r.consume)
	}
	if r.endTxn != nil {
		endTxnSection(&sb, r.endTxn)
	}
	return sb.String()
}

// summary is the goals of the issue and the figures read against them.
func summary(sb *strings.Builder, r *results) {
	if r.produce == nil && r.consume == nil && r.endTxn == nil {
		return
	}
	sb.WriteString("## Summary\n\n")
	benchproc.TableRow(sb, []string{"figure", "median", "goal", ""})
	benchproc.TableRow(sb, []string{"---", "---:", "---", "---"})
	if r.produce != nil {
		m := r.produce.medianRatio()
		benchproc.TableRow(sb, []string{"transactional / idempotent producer records/s (1 KiB, commit every 100 ms, RF 3)",
			ratioText(m), fmt.Sprintf("≥ %.2f× (≤ 3%% lower, as Kafka)", goalProduceRatio), verdict(m >= goalProduceRatio, m)})
	}
	if r.consume != nil {
		m := r.consume.medianRatio()
		benchproc.TableRow(sb, []string{"read_committed / read_uncommitted speed (time to read the partition to its end)",
			ratioText(m), fmt.Sprintf("≥ %.2f×", goalConsumeRatio), verdict(m >= goalConsumeRatio, m)})
	}
	if r.endTxn != nil {
		benchproc.TableRow(sb, []string{"EndTxn (commit) latency, RF 3",
			fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", r.endTxn.median(func(s endTxnSample) float64 { return s.p50 }),
				r.endTxn.median(func(s endTxnSample) float64 { return s.p99 })), "reported", ""})
	}
	sb.WriteString("\n")
}

func commandsSection(sb *strings.Builder, h header, r *results) {
	sb.WriteString("## How it was run\n\n")
	fmt.Fprintf(sb, "`go run ./bench/txn %s` started, in a temporary directory:\n\n```\n", strings.Join(argsOf(h.cfg), " "))
	for _, c := range r.commands {
		sb.WriteString(c + "\n")
	}
	sb.WriteString("```\n\n")
	sb.WriteString("Brokers 1 and 2 differ from broker 0 only in broker.id, port and log.dirs. Every topic is created with an explicit replica " +
		"assignment (partition i's replicas start at broker i, so broker 0 leads partition 0), RF 3 and min.insync.replicas=2, and the benchmark " +
		"waits until every broker's metadata shows the preferred leaders and full ISRs.\n\n")
	if r.produce != nil {
		sb.WriteString("Each produce run creates a fresh 1-partition topic, writes one priming record to it (the first acks=all write to a new partition " +
			"waits for the followers' first fetches, a cost of creating the topic), then runs one of:\n\n```\n")
		for _, p := range producers {
			fmt.Fprintf(sb, "qk %s   # %s\n", strings.Join(produceArgs(p, []string{"B0", "B1", "B2"}, "TOPIC", "ID", r.produce.records, h.cfg.txnEvery), " "), p.name)
		}
		sb.WriteString("```\n\nThe topic is deleted after the run (log.segment.delete.delay.ms=0). Each run's transactional id is new.\n\n")
	}
	if r.consume != nil {
		f := r.consume.fill
		fmt.Fprintf(sb, "The consume section's topic (1 partition) is filled once, before its runs, by %d franz-go transactional producers in this "+
			"process writing at once (so their transactions interleave in the log), %d records of 1 KiB per transaction (every record's "+
			"value the same random 1 KiB, in batches snappy-compressed as franz-go does by default), %s: %s transactions, %s of them "+
			"aborted, %s committed and %s aborted records, written in %v. The benchmark then waits "+
			"until the partition's last stable offset is its high watermark. Each run reads the partition from the start to its end with a fresh "+
			"group, the properties file holding only isolation.level:\n\n```\n",
			fillProducers, txnRecords, abortedPhrase(h.cfg.abortEvery), benchproc.Group(float64(f.txns)), benchproc.Group(float64(f.abortedTxns)),
			benchproc.Group(float64(f.committed)), benchproc.Group(float64(f.aborted)), f.took.Round(time.Millisecond))
		for _, iso := range isolations {
			fmt.Fprintf(sb, "qk %s   # %s\n", strings.Join(consumeArgs([]string{"B0", "B1", "B2"}, "TOPIC", "GROUP", iso.level+".properties", f.records(iso.level)), " "), iso.level)
		}
		sb.WriteString("```\n\n")
	}
	if r.endTxn != nil {
		fmt.Fprintf(sb, "The EndTxn section is a franz-go transactional producer in this process, a new transactional id per run, over a %d-partition "+
			"topic (each broker leads one partition): per transaction BeginTransaction, one 1 KiB record to each partition with ProduceSync "+
			"(all acknowledged, no linger), then EndTransaction(commit), timed alone with HdrHistogram (µs, 3 significant digits). The first %d "+
			"transactions of each run are not measured.\n\n", endTxnPartitions, h.cfg.txnWarmup)
	}
}

// argsOf is the command line that reproduces cfg (without -qk and -o).
func argsOf(cfg config) []string {
	if cfg.quick {
		return []string{"-quick"}
	}
	args := []string{fmt.Sprintf("-runs %d", cfg.runs)}
	if cfg.warmup != 1 {
		args = append(args, fmt.Sprintf("-warmup %d", cfg.warmup))
	}
	if cfg.abortEvery != defaultAbortEvery {
		args = append(args, fmt.Sprintf("-abort-every %d", cfg.abortEvery))
	}
	if cfg.txnWarmup != 50 {
		args = append(args, fmt.Sprintf("-txn-warmup %d", cfg.txnWarmup))
	}
	args = append(args, fmt.Sprintf("-records %d", cfg.records), fmt.Sprintf("-fill %d", cfg.fill), fmt.Sprintf("-txns %d", cfg.txns))
	if len(cfg.only) != len(sections) {
		args = append(args, "-only "+strings.Join(cfg.only, ","))
	}
	for _, kv := range cfg.set {
		args = append(args, "-set "+kv)
	}
	return args
}

func produceSection(sb *strings.Builder, r *prodResults) {
	fmt.Fprintf(sb, "## 1. Producer throughput, 1 KiB records, RF 3\n\n")
	fmt.Fprintf(sb, "%s records per run at full speed to 1 partition (leader broker 0, followers 1 and 2). Medians over the runs, each figure "+
		"separately. Latency is the producer's, send to acknowledgement (ms). CPU-s/GiB is each broker process's utime+stime "+
		"(/proc/<pid>/stat) over the run per GiB of record values produced; the transactional run's includes the coordinator's work "+
		"(whichever broker leads the transactional id's __transaction_state partition).\n\n", benchproc.Group(float64(r.records)))
	benchproc.TableRow(sb, []string{"producer", "records/s", "MiB/s", "p50 ms", "p99 ms", "CPU-s/GiB broker 0", "broker 1", "broker 2"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"})
	for j, p := range producers {
		cells := []string{p.name,
			benchproc.Group(r.median(j, func(s prodSample) float64 { return s.recPerSec })),
			fmt.Sprintf("%.1f", r.median(j, func(s prodSample) float64 { return s.mibPerSec })),
			fmt.Sprintf("%.2f", r.median(j, func(s prodSample) float64 { return s.p50 })),
			fmt.Sprintf("%.2f", r.median(j, func(s prodSample) float64 { return s.p99 })),
		}
		for id := range 3 {
			cells = append(cells, fmt.Sprintf("%.2f", r.median(j, func(s prodSample) float64 {
				if id < len(s.cpuPerGiB) {
					return s.cpuPerGiB[id]
				}
				return math.NaN()
			})))
		}
		benchproc.TableRow(sb, cells)
	}
	fmt.Fprintf(sb, "\nTransactional / idempotent records/s, per run (both measured seconds apart) and the median of those ratios. "+
		"The goal is ≥ %.2f× (Kafka's designers measured about 3%% lower throughput with 1 KiB records and a commit every 100 ms).\n\n", goalProduceRatio)
	benchproc.TableRow(sb, []string{"run", "idempotent records/s", "transactional records/s", "ratio"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:"})
	for i, run := range r.runs {
		benchproc.TableRow(sb, []string{fmt.Sprint(i + 1), benchproc.Group(run[prodIdempotent].recPerSec),
			benchproc.Group(run[prodTransactional].recPerSec), ratioText(r.ratio(i))})
	}
	m := r.medianRatio()
	benchproc.TableRow(sb, []string{"**median**", "", "", fmt.Sprintf("**%s** %s", ratioText(m), verdict(m >= goalProduceRatio, m))})
	sb.WriteString("\n")
}

func consumeSection(sb *strings.Builder, r *consResults) {
	sb.WriteString("## 2. read_committed against read_uncommitted consumption\n\n")
	sb.WriteString("Each run reads the whole partition (committed and aborted transactions and their markers) from the start to its end. " +
		"read_uncommitted returns the aborted records too, read_committed drops them (the broker sends them with the list of aborted " +
		"transactions, the client filters), so the records returned differ and the comparison is of the time to read the same log: " +
		"the fetch time (elapsed less the group join) of `qk perf consume`. \"log MiB/s\" is the partition's record values (committed and " +
		"aborted) per second of it; CPU-s/GiB is the leader's (broker 0) per GiB of those. Medians over the runs.\n\n")
	benchproc.TableRow(sb, []string{"isolation.level", "records", "fetch ms", "records/s returned", "MiB/s returned", "log MiB/s", "CPU-s/GiB broker 0"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:", "---:", "---:", "---:"})
	for j, iso := range isolations {
		benchproc.TableRow(sb, []string{iso.level,
			benchproc.Group(float64(r.fill.records(iso.level))),
			fmt.Sprintf("%.0f", r.median(j, func(s consSample) float64 { return s.fetchMS })),
			benchproc.Group(r.median(j, func(s consSample) float64 { return s.recPerSec })),
			fmt.Sprintf("%.1f", r.median(j, func(s consSample) float64 { return s.mibPerSec })),
			fmt.Sprintf("%.1f", r.median(j, func(s consSample) float64 { return s.logMiBps })),
			fmt.Sprintf("%.2f", r.median(j, func(s consSample) float64 { return s.cpuPerGiB })),
		})
	}
	fmt.Fprintf(sb, "\nread_committed / read_uncommitted speed (read_uncommitted's fetch time over read_committed's), per run and the median of "+
		"those ratios. The goal is ≥ %.2f×.\n\n", goalConsumeRatio)
	benchproc.TableRow(sb, []string{"run", "read_uncommitted ms", "read_committed ms", "ratio"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:"})
	for i, run := range r.runs {
		benchproc.TableRow(sb, []string{fmt.Sprint(i + 1), fmt.Sprintf("%.0f", run[isoUncommitted].fetchMS),
			fmt.Sprintf("%.0f", run[isoCommitted].fetchMS), ratioText(r.ratio(i))})
	}
	m := r.medianRatio()
	benchproc.TableRow(sb, []string{"**median**", "", "", fmt.Sprintf("**%s** %s", ratioText(m), verdict(m >= goalConsumeRatio, m))})
	sb.WriteString("\n")
}

func endTxnSection(sb *strings.Builder, r *endTxnResults) {
	sb.WriteString("## 3. EndTxn latency, RF 3\n\n")
	sb.WriteString("EndTransaction(commit) as the client sees it, the transaction's records already acknowledged, per run and the median " +
		"of each figure over the runs. \"whole transaction\" is BeginTransaction to the commit's answer (AddPartitionsToTxn, the produce " +
		"of 3 records, EndTxn). A transaction begun while the previous one's markers are still being written gets CONCURRENT_TRANSACTIONS " +
		"on its AddPartitionsToTxn, and franz-go backs off (20 ms) and retries; the last column counts those back-offs. franz-go adds " +
		"partitions from each broker's produce path, concurrently, so with 3 leaders 6 back-offs are about 2 rounds of 20 ms.\n\n")
	benchproc.TableRow(sb, []string{"run", "transactions", "EndTxn p50 ms", "p99 ms", "p99.9 ms", "max ms", "whole transaction p50 ms", "p99 ms", "transactions/s", "CONCURRENT_TRANSACTIONS back-offs per transaction"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"})
	for i, s := range r.runs {
		benchproc.TableRow(sb, []string{fmt.Sprint(i + 1), benchproc.Group(float64(s.txns)),
			fmt.Sprintf("%.2f", s.p50), fmt.Sprintf("%.2f", s.p99), fmt.Sprintf("%.2f", s.p999), fmt.Sprintf("%.2f", s.max),
			fmt.Sprintf("%.2f", s.cycleP50), fmt.Sprintf("%.2f", s.cycleP99), fmt.Sprintf("%.1f", s.txnsPerSec), fmt.Sprintf("%.2f", s.concurrentRetries)})
	}
	med := func(fig func(endTxnSample) float64) string { return fmt.Sprintf("**%.2f**", r.median(fig)) }
	benchproc.TableRow(sb, []string{"**median**", "",
		med(func(s endTxnSample) float64 { return s.p50 }), med(func(s endTxnSample) float64 { return s.p99 }),
		med(func(s endTxnSample) float64 { return s.p999 }), med(func(s endTxnSample) float64 { return s.max }),
		med(func(s endTxnSample) float64 { return s.cycleP50 }), med(func(s endTxnSample) float64 { return s.cycleP99 }),
		fmt.Sprintf("**%.1f**", r.median(func(s endTxnSample) float64 { return s.txnsPerSec })),
		med(func(s endTxnSample) float64 { return s.concurrentRetries })})
	sb.WriteString("\n")
}

func ratioText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.3f×", v)
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

// abortedPhrase says which of the consume topic's transactions were aborted.
func abortedPhrase(every int) string {
	if every == 0 {
		return "none aborted"
	}
	return fmt.Sprintf("every %dth transaction of each aborted", every)
}
