package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfFinal is the last line `qk perf produce|consume --json` prints, the
// one with "type":"final". Produce fills Errors and Latency; consume the
// fetch and rebalance fields. Latencies are milliseconds.
type perfFinal struct {
	Type               string   `json:"type"`
	Records            int64    `json:"records"`
	Bytes              int64    `json:"bytes"`
	Errors             int64    `json:"errors"`
	ElapsedS           float64  `json:"elapsed_s"`
	RecordsPerSec      float64  `json:"records_per_sec"`
	MiBPerSec          float64  `json:"mib_per_sec"`
	Latency            *latency `json:"latency_ms"`
	RebalanceMS        float64  `json:"rebalance_ms"`
	FetchMS            float64  `json:"fetch_ms"`
	FetchMiBPerSec     float64  `json:"fetch_mib_per_sec"`
	FetchRecordsPerSec float64  `json:"fetch_records_per_sec"`
}

// latency is a produce run's latency distribution in milliseconds, from
// send to acknowledgement.
type latency struct {
	Avg  float64 `json:"avg"`
	Max  float64 `json:"max"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// parsePerfOutput returns the last "final" line of a `qk perf --json`
// stdout. Other lines (progress reports, anything not JSON) are skipped, so
// a tool that says more than the contract does still parses.
func parsePerfOutput(out []byte) (perfFinal, error) {
	var (
		final perfFinal
		found bool
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &head) != nil || head.Type != "final" {
			continue
		}
		var f perfFinal
		if err := json.Unmarshal(line, &f); err != nil {
			return perfFinal{}, fmt.Errorf("final line %q: %w", line, err)
		}
		final, found = f, true
	}
	if err := sc.Err(); err != nil {
		return perfFinal{}, err
	}
	if !found {
		return perfFinal{}, errors.New(`no line with "type":"final"`)
	}
	return final, nil
}

// check says whether a final line is a complete run of want records: a
// run that lost records or counted errors measured something else.
func (f perfFinal) check(ld load, want int) error {
	switch {
	case f.Errors != 0:
		return fmt.Errorf("%d errors", f.Errors)
	case f.Records != int64(want):
		return fmt.Errorf("%d of %d records", f.Records, want)
	case f.ElapsedS <= 0 || f.RecordsPerSec <= 0:
		return fmt.Errorf("elapsed %vs, %v records/s", f.ElapsedS, f.RecordsPerSec)
	case ld == produceLoad && f.Latency == nil:
		return errors.New("no latency_ms")
	}
	return nil
}

// produceArgs is the `qk perf produce` command line that writes r's
// records to topic at addr. A fill (for a consume row) is the same
// producer at full speed.
func produceArgs(r row, addr, topic string) []string {
	idem := "false"
	if r.acks == -1 {
		idem = "true"
	}
	rate := r.rate
	if r.load == consumeLoad {
		rate = -1
	}
	return []string{"perf", "produce",
		"-b", addr,
		"--topic", topic,
		"--num-records", strconv.Itoa(r.records),
		"--record-size", strconv.Itoa(r.size),
		"--throughput", strconv.Itoa(rate),
		"--acks", strconv.Itoa(r.acks),
		"--compression", r.compression,
		"--linger", r.linger,
		"--payload", "random",
		"--producer-props", "enable.idempotence=" + idem,
		"--json",
	}
}

// consumeArgs is the `qk perf consume` command line that reads r's records
// from topic at addr. idle is how long the consumer waits for a record
// before it gives up.
func consumeArgs(r row, addr, topic string, idle time.Duration) []string {
	return []string{"perf", "consume",
		"-b", addr,
		"--topic", topic,
		"--messages", strconv.Itoa(r.records),
		"--timeout", strconv.FormatInt(idle.Milliseconds(), 10),
		"--json",
	}
}

// runPerf runs `qk args...` as a process of its own, bounded by timeout,
// and returns its final line. The load runs in a separate process so that
// the broker's /proc CPU is the broker's alone and the client is the one
// operators use.
func runPerf(ctx context.Context, qk string, args []string, timeout time.Duration) (perfFinal, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, qk, args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	line := "qk " + strings.Join(args, " ")
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return perfFinal{}, fmt.Errorf("%s: not done within %v; killed\n%s", line, timeout, tail(stderr.Bytes(), 2<<10))
	}
	if err != nil {
		return perfFinal{}, fmt.Errorf("%s: %w\n%s", line, err, tail(stderr.Bytes(), 2<<10))
	}
	f, err := parsePerfOutput(stdout.Bytes())
	if err != nil {
		return perfFinal{}, fmt.Errorf("%s: %w\nstdout:\n%s", line, err, tail(stdout.Bytes(), 2<<10))
	}
	return f, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
