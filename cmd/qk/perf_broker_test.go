//go:build linux

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qk-project/qk/broker/brokertest"
	"github.com/qk-project/qk/perf"
	"github.com/stretchr/testify/require"
)

// TestPerfQK runs the perf tools against an in-process qk broker.
func TestPerfQK(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithConfig("group.initial.rebalance.delay.ms", "0"))
	checkPerf(t, b.Addr)
}

// TestPerfThroughput: a 5 s run at --throughput 2000 holds 2000 records/s
// within 5%. The rate is modest (100-byte records) so that the client can
// always go faster than asked, even on a loaded machine: the throttler's
// schedule is absolute, so a stall is caught up and only the tail of the
// run (the last acknowledgement) adds to the elapsed time.
func TestPerfThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("5 s run")
	}
	b := brokertest.StartBroker(t)
	createTopic(t, b.Addr, "rate", 1)
	out, errOut, err := runQK(t, "perf", "produce", "-b", b.Addr, "--topic", "rate", "--num-records", "10000",
		"--record-size", "100", "--throughput", "2000", "--json")
	require.NoError(t, err, errOut)
	ls := lines(out)
	var r perf.ProduceReport
	require.NoError(t, json.NewDecoder(strings.NewReader(ls[len(ls)-1])).Decode(&r))
	require.Equal(t, "final", r.Type)
	require.EqualValues(t, 10000, r.Records)
	require.InEpsilon(t, 2000, float64(r.Records)/r.ElapsedS, 0.05, "records/s over the run: %+v", r)
	require.InEpsilon(t, 2000, r.RecordsPerSec, 0.05)
}
