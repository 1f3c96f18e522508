package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// check says whether a final line is a complete run of want records: a
// run that lost records or counted errors measured something else.
func check(f benchproc.Final, ld load, want int) error {
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
