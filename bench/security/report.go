package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// header is what the report says about where and how it was measured.
type header struct {
	benchproc.Host
	date       time.Time
	cfg        config
	qkVersion  string
	took       time.Duration
	ktls       ktlsProbe
	microbench string // benchstat output, or ""
}

// markdown renders the whole report.
func markdown(h header, r *results) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# qk TLS and SASL benchmark, %s\n\n", h.date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&sb, "- checkout: %s (%s)\n", benchproc.OrUnknown(h.Describe), benchproc.OrUnknown(h.qkVersion))
	fmt.Fprintf(&sb, "- machine: %s × %d CPUs, Linux %s, %s\n", benchproc.OrUnknown(h.CPUModel), h.CPUs, benchproc.OrUnknown(h.Kernel), h.GoVersion)
	sb.WriteString("- broker: one `qk broker start` process with three listeners on 127.0.0.1: PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512), " +
		"a P-256 ECDSA certificate from a CA made at start; Go's crypto/tls defaults (TLS 1.3, AES-128-GCM)\n")
	fmt.Fprintf(&sb, "- load: `qk perf produce` then `qk perf consume` processes, 1 KiB records, %s records per run, one partition; "+
		"%s, each run going through the three listeners in turn (run i starting at the next listener of PLAINTEXT, SSL, SASL_SSL)\n", benchproc.Group(float64(r.records)), benchproc.RunsText(h.cfg.runs, h.cfg.warmup))
	if r.ballast > 0 {
		fmt.Fprintf(&sb, "- page cache: a %.1f GiB ballast file filled the free memory before the runs, so that the broker's writes recycle "+
			"page-cache pages instead of first-touching memory this VM returned to its host (up to ~5× slower; -ballast=false turns it off)\n",
			float64(r.ballast)/(1<<30))
	} else if !h.cfg.quick {
		sb.WriteString("- page cache: no ballast (-ballast=false): writes may first-touch memory the VM returned to its host\n")
	}
	fmt.Fprintf(&sb, "- took %v\n", h.took.Round(time.Second))
	sb.WriteString("- noise: 2 cores shared by the broker, the client and other work on the host; throughput swings 1.5–2× between runs " +
		"of the same thing (reference/machine-limits.md), so read the ratios, each taken within one run, and their spread in section 3\n\n")
	if h.cfg.quick {
		sb.WriteString("**-quick: tiny counts and one run: these figures say the benchmark works, not what qk does.**\n\n")
	}
	if r.err != "" {
		fmt.Fprintf(&sb, "**Stopped early; the sections below hold what was measured before:**\n\n```\n%s\n```\n\n", strings.TrimSpace(r.err))
	}
	commandsSection(&sb, h, r)
	if len(r.runs) > 0 {
		loadSection(&sb, r, ldProduce, "## 1. Produce, 1 KiB records, acks=1\n\n")
		loadSection(&sb, r, ldConsume, "## 2. Consume, 1 KiB records\n\n")
		ratioSection(&sb, r)
		saysSection(&sb, r)
	}
	ktlsSection(&sb, h.ktls)
	microSection(&sb, h.microbench)
	return sb.String()
}

func commandsSection(sb *strings.Builder, h header, r *results) {
	sb.WriteString("## How it was run\n\n")
	if h.microbench != "" {
		sb.WriteString("`make bench-security` ran the micro-benchmark (last section), then ")
	}
	fmt.Fprintf(sb, "`%s` started, in a temporary directory holding the CA (`ca.pem`) and the broker's PEM key store "+
		"(PKCS#8 key, then its certificate and the CA's):\n\n```\n", invocation(h.cfg))
	for _, c := range r.commands {
		sb.WriteString(c + "\n")
	}
	sb.WriteString("```\n\nthen, for each run and each listener, a fresh one-partition topic, and over that listener:\n\n```\n")
	for ln := range numListeners {
		sec := securityArgs(ln, "ca.pem")
		fmt.Fprintf(sb, "qk %s\n", strings.Join(produceArgs(listenerNames[ln]+"_ADDR", "TOPIC", r.records, sec), " "))
		fmt.Fprintf(sb, "qk %s\n", strings.Join(consumeArgs(listenerNames[ln]+"_ADDR", "TOPIC", r.records, min(h.cfg.timeout, 30*time.Second), sec), " "))
	}
	sb.WriteString("```\n\nThe topic is deleted after its consumer ends (log.segment.delete.delay.ms=0). " +
		"CPU-s/GiB is the broker process's utime+stime (/proc/<pid>/stat) read just before and after each perf process, " +
		"per GiB of record values moved; the client runs in its own process and is not counted. " +
		"A consumer's records/s and MB/s are its fetch phase's (after its group join), as kafka-consumer-perf-test's fetch.MB.sec; " +
		"its CPU-s/GiB is over the whole process. MB are 10^6 bytes.\n\n")
}

// invocation is the command line that reproduces cfg (without -qk, -o
// and -microbench).
func invocation(cfg config) string {
	if cfg.quick {
		return "go run ./bench/security -quick"
	}
	s := fmt.Sprintf("go run ./bench/security -runs %d -warmup %d -records %d", cfg.runs, cfg.warmup, cfg.records)
	if !cfg.ballast {
		s += " -ballast=false"
	}
	return s
}

// loadSection is one load's medians per listener, with the medians of
// the per-run ratios to PLAINTEXT.
func loadSection(sb *strings.Builder, r *results, ld int, title string) {
	sb.WriteString(title)
	sb.WriteString("Medians over the runs, each figure separately; the × columns are the median of each run's ratio to PLAINTEXT's figure in the same run.\n\n")
	benchproc.TableRow(sb, []string{"listener", "records/s", "MB/s", "broker CPU-s/GiB", "throughput × PLAINTEXT", "CPU-s/GiB × PLAINTEXT"})
	benchproc.TableRow(sb, []string{"---", "---:", "---:", "---:", "---:", "---:"})
	for ln := range numListeners {
		tput, cpu := "1×", "1×"
		if ln != lnPlaintext {
			tput = ratioText(r.medianRatio(ld, ln, figMBPerSec))
			cpu = ratioText(r.medianRatio(ld, ln, figCPUPerGiB))
		}
		benchproc.TableRow(sb, []string{listenerNames[ln],
			benchproc.Group(r.median(ld, ln, figRecPerSec)),
			floatText(r.median(ld, ln, figMBPerSec), 1),
			floatText(r.median(ld, ln, figCPUPerGiB), 2),
			tput, cpu})
	}
	sb.WriteString("\n")
}

// ratioSection is every run's ratios, the figures the medians are of.
func ratioSection(sb *strings.Builder, r *results) {
	sb.WriteString("## 3. Ratios to PLAINTEXT, run by run\n\n")
	sb.WriteString("Each cell divides a figure of one listener by PLAINTEXT's in the same run, seconds apart " +
		"(throughput: MB/s; CPU: broker CPU-s/GiB). Below 1× is slower (throughput), above 1× is dearer (CPU).\n\n")
	head := []string{"run"}
	align := []string{"---"}
	for ld := range numLoads {
		for ln := lnSSL; ln < numListeners; ln++ {
			head = append(head, fmt.Sprintf("%s %s MB/s", loadNames[ld], listenerNames[ln]), fmt.Sprintf("%s %s CPU/GiB", loadNames[ld], listenerNames[ln]))
			align = append(align, "---:", "---:")
		}
	}
	benchproc.TableRow(sb, head)
	benchproc.TableRow(sb, align)
	for i := range r.runs {
		cells := []string{fmt.Sprint(i + 1)}
		for ld := range numLoads {
			for ln := lnSSL; ln < numListeners; ln++ {
				cells = append(cells, ratioText(r.ratio(i, ld, ln, figMBPerSec)), ratioText(r.ratio(i, ld, ln, figCPUPerGiB)))
			}
		}
		benchproc.TableRow(sb, cells)
	}
	cells := []string{"**median**"}
	for ld := range numLoads {
		for ln := lnSSL; ln < numListeners; ln++ {
			cells = append(cells, "**"+ratioText(r.medianRatio(ld, ln, figMBPerSec))+"**", "**"+ratioText(r.medianRatio(ld, ln, figCPUPerGiB))+"**")
		}
	}
	benchproc.TableRow(sb, cells)
	sb.WriteString("\n")
}

// saysSection reads the medians: what TLS costs the broker per GiB on
// each path, whether SCRAM adds to it, and why the consume path pays
// more of it.
func saysSection(sb *strings.Builder, r *results) {
	sb.WriteString("## 4. What this says\n\n")
	cpu := func(ld, ln int) float64 { return r.median(ld, ln, figCPUPerGiB) }
	for ld := range numLoads {
		fmt.Fprintf(sb, "- %s over SSL: %s of PLAINTEXT's throughput, %s its broker CPU per GiB (%s against %s CPU-s/GiB: %s CPU-s more per GiB); "+
			"over SASL_SSL: %s and %s.\n", capitalize(loadNames[ld]),
			ratioText(r.medianRatio(ld, lnSSL, figMBPerSec)), ratioText(r.medianRatio(ld, lnSSL, figCPUPerGiB)),
			floatText(cpu(ld, lnSSL), 2), floatText(cpu(ld, lnPlaintext), 2), floatText(cpu(ld, lnSSL)-cpu(ld, lnPlaintext), 2),
			ratioText(r.medianRatio(ld, lnSASLSSL, figMBPerSec)), ratioText(r.medianRatio(ld, lnSASLSSL, figCPUPerGiB)))
	}
	sb.WriteString("\n")
	within := true
	for ld := range numLoads {
		lo, hi := r.spread(ld, lnSSL, figCPUPerGiB)
		if m := r.medianRatio(ld, lnSASLSSL, figCPUPerGiB); math.IsNaN(m) || m < lo || m > hi {
			within = false
		}
	}
	if within {
		sb.WriteString("SASL_SSL costs what SSL does: its median CPU-per-GiB ratios lie within the range of SSL's per-run ratios. " +
			"SCRAM is one exchange per connection (a few milliseconds of PBKDF2 at 8192 iterations) and nothing per byte, " +
			"so the price of security here is TLS's.\n\n")
	} else {
		sb.WriteString("SASL_SSL's median CPU-per-GiB ratio falls outside the range of SSL's per-run ratios for at least one load. " +
			"SCRAM is one exchange per connection and nothing per byte, so a gap that holds up in a rerun would point at the SASL " +
			"path rather than at TLS.\n\n")
	}
	pCPU, cCPU := r.medianRatio(ldProduce, lnSSL, figCPUPerGiB), r.medianRatio(ldConsume, lnSSL, figCPUPerGiB)
	sb.WriteString("Why: a PLAINTEXT fetch response is sendfile'd from the page cache to the socket, so serving a GiB costs the broker " +
		"little beyond framing. Over TLS, crypto/tls encrypts in user space, so the broker sendfiles the region into the relay's Unix " +
		"socket pair, the relay goroutine reads it back, encrypts it (AES-128-GCM) and writes it to the TCP socket: two extra kernel " +
		"copies and the cipher for every byte served. A produce over TLS pays the decryption and the same two copies in the other " +
		"direction, on a path that already copies, checks CRCs and appends. ")
	extra := func(ld int) float64 { return cpu(ld, lnSSL) - cpu(ld, lnPlaintext) }
	if cCPU > pCPU {
		fmt.Fprintf(sb, "TLS adds %s CPU-s per GiB to produce and %s to consume, but consume starts from a much smaller base, "+
			"so its ratio (%s) is the larger one (produce %s): fetch over TLS loses the zero-copy path that makes PLAINTEXT "+
			"consumption nearly free.\n\n", floatText(extra(ldProduce), 2), floatText(extra(ldConsume), 2), ratioText(cCPU), ratioText(pCPU))
	} else {
		fmt.Fprintf(sb, "TLS adds %s CPU-s per GiB to produce and %s to consume; the consume ratio (%s) is not above the produce "+
			"ratio (%s), against what the extra copies predict, and a rerun should say whether that holds.\n\n",
			floatText(extra(ldProduce), 2), floatText(extra(ldConsume), 2), ratioText(cCPU), ratioText(pCPU))
	}
	sb.WriteString("Throughput ratios are the whole machine's: the `qk perf` client encrypts or decrypts too, in its own process on " +
		"the same two cores, so a ratio here includes the client's TLS work competing with the broker for CPU. The broker's own price is " +
		"its CPU-s/GiB, which does not count the client; the micro-benchmark below isolates the network layer (a file region through " +
		"the relay against sendfile) in one process.\n\n")
}

// spread is the smallest and largest per-run ratio of fig for load ld
// over listener ln (NaN, NaN without any).
func (r *results) spread(ld, ln int, fig func(sample) float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for i := range r.runs {
		x := r.ratio(i, ld, ln, fig)
		if math.IsNaN(x) {
			continue
		}
		if math.IsNaN(lo) || x < lo {
			lo = x
		}
		if math.IsNaN(hi) || x > hi {
			hi = x
		}
	}
	return lo, hi
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func ktlsSection(sb *strings.Builder, k ktlsProbe) {
	sb.WriteString("## Kernel TLS\n\n")
	switch {
	case k.ulpErr != "":
		fmt.Fprintf(sb, "- this machine: /proc/sys/net/ipv4/tcp_available_ulp could not be read (%s)", k.ulpErr)
	case k.available():
		fmt.Fprintf(sb, "- this machine: the kernel offers the `tls` ULP (tcp_available_ulp: `%s`)", strings.Join(k.ulps, " "))
	default:
		fmt.Fprintf(sb, "- this machine: **no kTLS**; tcp_available_ulp lists `%s`, not `tls`", strings.Join(k.ulps, " "))
	}
	if k.configTLS != "" {
		fmt.Fprintf(sb, "; /proc/config.gz has `%s`", k.configTLS)
	}
	sb.WriteString(".\n")
	sb.WriteString("- Go: crypto/tls has no kernel TLS support and no API that hands a connection's traffic keys, IVs and record " +
		"sequence numbers to the caller: the record layer's state is unexported, and key updates and session tickets are handled " +
		"inside Read and Write (golang/go#44506, \"crypto/tls: support Kernel TLS\", is open). kTLS from Go (setsockopt TCP_ULP \"tls\", " +
		"then SOL_TLS TLS_TX/TLS_RX with the crypto_info) means a fork of crypto/tls, another TLS implementation, or deriving the keys " +
		"from KeyLogWriter's secrets and relying on crypto/tls's unexported sequence numbers; and for sendfile to reach the client it " +
		"would also replace the relay (network/tls.go).\n")
	sb.WriteString("- So qk does not use kTLS: this machine's kernel cannot run it, nothing could be measured, and it is to be adopted " +
		"only if measured better.\n\n")
}

func microSection(sb *strings.Builder, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	sb.WriteString("## Micro-benchmark: broker/network over plaintext and TLS\n\n")
	sb.WriteString("In one process, the network server and a raw Kafka-framing client on 127.0.0.1: " +
		"`FetchTLS` answers each request with a file region (the sendfile path; over TLS, sendfile into the relay's pair, then encryption); " +
		"`RoundTripTLS` echoes pipelined requests of the size shown. The client's decryption is in the figures. " +
		"The six runs are separate `go test` processes run one after the other, so plaintext and TLS alternate:\n\n```\n" +
		"go test -c -o /tmp/network.test ./broker/network/\n" +
		"for i in 1 2 3 4 5 6; do /tmp/network.test -test.run '^$' -test.bench 'FetchTLS|RoundTripTLS' -test.benchmem; done > micro.txt\n" +
		"benchstat -col /transport micro.txt\n```\n\n```\n")
	sb.WriteString(strings.TrimRight(text, "\n") + "\n```\n\n")
}

func ratioText(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

func floatText(v float64, prec int) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, v)
}
