package main

import "fmt"

// target is one line of the checklist: a figure the suite
// measures, and the bound it must meet. Every figure is either a ratio of
// two medians from the same suite run or the broker's own cost, so a
// slow or noisy machine moves both sides of a comparison alike.
type target struct {
	name   string
	eval   func(rs *results) (float64, bool) // false: a row it needs was not run
	atMost bool                              // true: v ≤ limit passes; false: v ≥ limit
	limit  float64
	unit   string // "×", "ms", "CPU-s/GiB"
}

func (t target) pass(v float64) bool {
	if t.atMost {
		return v <= t.limit
	}
	return v >= t.limit
}

func (t target) format(v float64) string {
	switch t.unit {
	case "×":
		return fmt.Sprintf("%.2f×", v)
	case "ms":
		return fmt.Sprintf("%.3f ms", v)
	}
	return fmt.Sprintf("%.2f %s", v, t.unit)
}

func (t target) want() string {
	op := "≥"
	if t.atMost {
		op = "≤"
	}
	if t.unit == "×" {
		return fmt.Sprintf("%s %g×", op, t.limit)
	}
	return fmt.Sprintf("%s %g %s", op, t.limit, t.unit)
}

// ratioOf compares role a of rowA with role b of rowB by records/s.
func ratioOf(rowA string, a role, rowB string, b role) func(*results) (float64, bool) {
	return func(rs *results) (float64, bool) { return rs.ratio(rowA, a, rowB, b) }
}

// figureOf is one median figure of qk in a row.
func figureOf(rowName string, f func(sample) float64) func(*results) (float64, bool) {
	return func(rs *results) (float64, bool) {
		s, ok := rs.median(rowName, roleQK)
		if !ok {
			return 0, false
		}
		return f(s), true
	}
}

// targets are the issue's, in its order. Compression none: the values are
// random, so lz4 only adds work on both sides.
var targets = []target{
	{name: "produce 1 KiB acks=1: qk / producer ceiling", eval: ratioOf(rowProduce1K, roleQK, rowProduce1K, roleCeiling), limit: 0.9, unit: "×"},
	{name: "produce 1 KiB acks=1: qk / kfake peer", eval: ratioOf(rowProduce1K, roleQK, rowProduce1K, rolePeer), limit: 1.25, unit: "×"},
	{name: "produce 1 KiB acks=1: qk CPU-s per GiB produced", eval: figureOf(rowProduce1K, func(s sample) float64 { return s.cpuPerGiB }), atMost: true, limit: 0.8, unit: "CPU-s/GiB"},
	{name: "produce 100 B acks=1: qk / producer ceiling", eval: ratioOf(rowProduce100, roleQK, rowProduce100, roleCeiling), limit: 0.9, unit: "×"},
	{name: "consume 1 KiB: qk / consumer ceiling", eval: ratioOf(rowConsume1K, roleQK, rowConsume1K, roleCeiling), limit: 0.9, unit: "×"},
	{name: "consume 1 KiB: qk / kfake peer", eval: ratioOf(rowConsume1K, roleQK, rowConsume1K, rolePeer), limit: 1.2, unit: "×"},
	{name: "consume 1 KiB: qk CPU-s per GiB served", eval: figureOf(rowConsume1K, func(s sample) float64 { return s.cpuPerGiB }), atMost: true, limit: 0.3, unit: "CPU-s/GiB"},
	{name: "produce 1 KiB: qk acks=-1 idempotent / acks=1", eval: ratioOf(rowProduce1KAll, roleQK, rowProduce1K, roleQK), limit: 0.9, unit: "×"},
	{name: "produce 100 B: qk acks=-1 idempotent / acks=1", eval: ratioOf(rowProduce100All, roleQK, rowProduce100, roleQK), limit: 0.9, unit: "×"},
	{name: "produce 1 KiB: qk flush.messages=1 / no fsync", eval: ratioOf(rowFlushMessages1K, roleQK, rowProduce1K, roleQK), limit: 0.7, unit: "×"},
	{name: "latency 100 B at 10k/s: qk p99", eval: figureOf(rowLatency100, func(s sample) float64 { return s.p99 }), atMost: true, limit: 1, unit: "ms"},
	{name: "latency 1 KiB at 10k/s: qk p99", eval: figureOf(rowLatency1K, func(s sample) float64 { return s.p99 }), atMost: true, limit: 2, unit: "ms"},
	{name: "latency 100 B at 10k/s: qk p99.9", eval: figureOf(rowLatency100, func(s sample) float64 { return s.p999 }), atMost: true, limit: 5, unit: "ms"},
	{name: "latency 1 KiB at 10k/s: qk p99.9", eval: figureOf(rowLatency1K, func(s sample) float64 { return s.p999 }), atMost: true, limit: 5, unit: "ms"},
	{name: "produce 1 KiB: qk 100 partitions / 1 partition", eval: ratioOf(rowPartitions1K, roleQK, rowProduce1K, roleQK), limit: 0.8, unit: "×"},
}
