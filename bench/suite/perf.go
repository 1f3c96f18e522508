package main

import (
	"strconv"
	"time"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

// check says whether a final line is a complete run of want records of
// load ld.
func check(f benchproc.Final, ld load, want int) error {
	return f.Complete(want, ld == produceLoad)
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
