package main

import (
	"fmt"
	"regexp"
)

// role is what a broker stands for in a row: the broker under test, a
// peer doing the same work, or a ceiling that does (almost) no broker
// work, so that its figure is what the client and loopback alone reach.
type role int

const (
	roleQK role = iota
	rolePeer
	roleCeiling
)

// load is what a row's measured `qk perf` process does.
type load int

const (
	produceLoad load = iota
	consumeLoad
)

// Sections of the report, in order; each is one Markdown table.
const (
	secProduce    = "Produce"
	secConsume    = "Consume"
	secLatency    = "Latency at a fixed 10k records/s"
	secPartitions = "100 and 1,000 partitions"
	secFsync      = "fsync per batch"
)

var sections = []string{secProduce, secConsume, secLatency, secPartitions, secFsync}

// Names of the rows the targets compare; -only matches row names.
const (
	rowProduce1K       = "produce 1 KiB acks=1 none"
	rowProduce100      = "produce 100 B acks=1 none"
	rowProduce1KAll    = "produce 1 KiB acks=-1 none"
	rowProduce100All   = "produce 100 B acks=-1 none"
	rowConsume1K       = "consume 1 KiB none"
	rowLatency100      = "latency 100 B 10k/s"
	rowLatency1K       = "latency 1 KiB 10k/s"
	rowPartitions1K    = "produce 1 KiB 100 partitions"
	rowPartitions1K1k  = "produce 1 KiB 1000 partitions"
	rowFlushMessages1K = "produce 1 KiB flush.messages=1"
)

// row is one line of the matrix: one workload, run against each of its
// roles in turn.
type row struct {
	section     string
	name        string
	load        load
	size        int    // value bytes
	records     int    // per run
	acks        int    // 1, or -1 with an idempotent producer
	compression string // none or lz4
	rate        int    // records/s the producer is held to; -1 unthrottled
	linger      string
	partitions  int
	fsync       bool // qk topic flush.messages=1; kfake peer -sync
	roles       []role
}

// Record counts per run. The full counts are the issue's: long enough
// that start-up (connect, metadata) is noise, short enough for ≥ 6 runs of
// every row on a shared 2-core machine. 100k records at 10k/s is 10 s a
// run, 100 samples above the p99.9. Quick counts only check the pipeline.
const (
	full100B, full1KiB, fullLatency    = 2_000_000, 500_000, 100_000
	quick100B, quick1KiB, quickLatency = 20_000, 5_000, 2_000
)

// matrix returns every row, in report order.
func matrix(quick bool) []row {
	n100, n1k, nLat := full100B, full1KiB, fullLatency
	if quick {
		n100, n1k, nLat = quick100B, quick1KiB, quickLatency
	}
	sizes := []struct {
		label string
		size  int
		n     int
	}{{"100 B", 100, n100}, {"1 KiB", 1 << 10, n1k}}
	all := []role{roleQK, rolePeer, roleCeiling}
	// Throughput rows linger 5 ms (Kafka 4's producer default): at full
	// speed batches fill before the linger ends anyway.
	base := func(section, name string, ld load, size, n int) row {
		return row{section: section, name: name, load: ld, size: size, records: n,
			acks: 1, compression: "none", rate: -1, linger: "5ms", partitions: 1, roles: all}
	}

	var rows []row
	for _, sz := range sizes {
		for _, acks := range []int{1, -1} {
			for _, c := range []string{"none", "lz4"} {
				r := base(secProduce, fmt.Sprintf("produce %s acks=%d %s", sz.label, acks, c), produceLoad, sz.size, sz.n)
				r.acks, r.compression = acks, c
				rows = append(rows, r)
			}
		}
	}
	for _, sz := range sizes {
		for _, c := range []string{"none", "lz4"} {
			r := base(secConsume, fmt.Sprintf("consume %s %s", sz.label, c), consumeLoad, sz.size, sz.n)
			r.compression = c
			rows = append(rows, r)
		}
	}
	for _, sz := range sizes {
		r := base(secLatency, fmt.Sprintf("latency %s 10k/s", sz.label), produceLoad, sz.size, nLat)
		r.rate, r.linger = 10_000, "0ms"
		rows = append(rows, r)
	}
	r := base(secPartitions, rowPartitions1K, produceLoad, 1<<10, n1k)
	r.partitions = 100
	rows = append(rows, r)
	// Broker CPU per GiB as partitions grow (one producer: batches get
	// smaller, requests carry more partitions).
	r = base(secPartitions, rowPartitions1K1k, produceLoad, 1<<10, n1k)
	r.partitions = 1000
	rows = append(rows, r)
	// No ceiling: the blackhole stores nothing, so it has nothing to sync.
	r = base(secFsync, rowFlushMessages1K, produceLoad, 1<<10, n1k)
	r.fsync, r.roles = true, []role{roleQK, rolePeer}
	rows = append(rows, r)
	return rows
}

// selectRows keeps the rows whose name matches only ("" keeps all).
func selectRows(rows []row, only string) ([]row, error) {
	if only == "" {
		return rows, nil
	}
	re, err := regexp.Compile(only)
	if err != nil {
		return nil, fmt.Errorf("-only: %w", err)
	}
	var out []row
	for _, r := range rows {
		if re.MatchString(r.name) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		var names []string
		for _, r := range rows {
			names = append(names, r.name)
		}
		return nil, fmt.Errorf("-only %q matches no row; rows are %q", only, names)
	}
	return out, nil
}

// roleName is how the report names the broker playing role in r.
func (r row) roleName(ro role) string {
	switch ro {
	case roleQK:
		return "qk"
	case rolePeer:
		if r.fsync {
			return "kfake peer (-sync)"
		}
		return "kfake peer"
	}
	if r.load == consumeLoad {
		return "ceiling (kfake synthetic)"
	}
	return "ceiling (kfake blackhole)"
}

// kfake is the kfakebroker command line for role in r; roleQK has none.
func (r row) kfake(ro role) kfakeSpec {
	switch ro {
	case rolePeer:
		return kfakeSpec{mode: "peer", sync: r.fsync, partitions: r.partitions}
	case roleCeiling:
		if r.load == consumeLoad {
			return kfakeSpec{mode: "synthetic", recordBytes: r.size, compression: r.compression, partitions: r.partitions}
		}
		return kfakeSpec{mode: "blackhole", partitions: r.partitions}
	}
	panic("kfake: the qk role runs qk")
}

// topicConfigs are the configs a run's topic is created with on role.
func (r row) topicConfigs(ro role) map[string]*string {
	if r.fsync && ro == roleQK {
		one := "1"
		return map[string]*string{"flush.messages": &one}
	}
	return nil
}

// needsFill says whether the run must first produce the records the
// measured consumer reads; the synthetic ceiling serves its canned batch.
func (r row) needsFill(ro role) bool {
	return r.load == consumeLoad && ro != roleCeiling
}
