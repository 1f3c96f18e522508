// Package brokertest starts qk brokers inside a test process: each on
// 127.0.0.1 with a port the system picks, its data in t.TempDir(),
// logging to the test's output, and stopped by t.Cleanup. A single broker
// keeps its metadata in the embedded store of its data dir, so Restart
// finds its topics, configs and data again; a cluster's brokers share one
// in-memory store, each with its own session (so each registers and can
// be elected controller on its own).
package brokertest
