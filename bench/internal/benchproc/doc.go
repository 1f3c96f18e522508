// Package benchproc is what qk's process-level benchmarks (bench/suite,
// bench/cluster, bench/txn) share: a broker process started, probed,
// measured and stopped by PID (Proc), a ZooKeeper and brokers on it
// (Cluster), the `qk perf --json` final line and the process that prints
// it (Final, RunPerf), medians, and a description of the machine (Host).
//
// Why processes and not in-process brokers: a benchmark that reads a
// broker's CPU from /proc/<pid>/stat, kills it with SIGKILL or measures
// the cost of a client on a separate connection must see the broker as an
// operator does. Every process is in its own process group with
// Pdeathsig set, so a benchmark that dies takes its brokers with it.
package benchproc
