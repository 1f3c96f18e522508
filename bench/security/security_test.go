package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/bench/internal/benchproc"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5, c.runs)
	require.Equal(t, 1, c.warmup)
	require.Equal(t, 1_000_000, c.records)
	require.True(t, c.ballast)
	require.Equal(t, "bench/SECURITY.md", c.out)

	c, err = parseFlags([]string{"-quick", "-o", "x.md"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 1, c.runs)
	require.Equal(t, 0, c.warmup)
	require.False(t, c.ballast)
	require.Equal(t, "", c.out, "-quick never writes the report file")
	require.LessOrEqual(t, c.timeout, time.Minute)

	for _, bad := range [][]string{{"-runs", "0"}, {"-records", "-1"}, {"-warmup", "-1"}, {"extra"}} {
		_, err := parseFlags(bad, io.Discard)
		require.Error(t, err, "%q", bad)
	}
}

func TestBrokerArgs(t *testing.T) {
	got := strings.Join(brokerArgs([numListeners]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, "/d", "/k.pem", "/ca.pem"), " ")
	require.Equal(t, "broker start --set listeners=PLAINTEXT://127.0.0.1:1,SSL://127.0.0.1:2,SASL_SSL://127.0.0.1:3 --set log.dirs=/d "+
		"--set ssl.keystore.type=PEM --set ssl.keystore.location=/k.pem --set ssl.truststore.type=PEM --set ssl.truststore.location=/ca.pem "+
		"--set sasl.enabled.mechanisms=SCRAM-SHA-512 --set log.segment.delete.delay.ms=0 --set group.initial.rebalance.delay.ms=0 "+
		"--set qk.http.listener=127.0.0.1:0", got)
	require.Equal(t, "user alter --entity-name alice --add-config SCRAM-SHA-512=[iterations=8192,password=alice-secret] -b p:1",
		strings.Join(userArgs("p:1"), " "))
}

func TestSecurityArgs(t *testing.T) {
	tests := []struct {
		ln   int
		want string
	}{
		{lnPlaintext, ""},
		{lnSSL, "-X security.protocol=SSL -X ssl.ca.location=/ca.pem"},
		{lnSASLSSL, "-X security.protocol=SASL_SSL -X ssl.ca.location=/ca.pem -X sasl.mechanism=SCRAM-SHA-512 " +
			"-X sasl.username=alice -X sasl.password=alice-secret"},
	}
	for _, tt := range tests {
		t.Run(listenerNames[tt.ln], func(t *testing.T) {
			require.Equal(t, tt.want, strings.Join(securityArgs(tt.ln, "/ca.pem"), " "))
		})
	}
}

func TestPerfArgs(t *testing.T) {
	sec := securityArgs(lnSSL, "ca.pem")
	require.Equal(t, "perf produce -b a:1 --topic t --num-records 7 --record-size 1024 --throughput -1 --acks 1 --compression none "+
		"--linger 5ms --payload random --producer-props enable.idempotence=false --json -X security.protocol=SSL -X ssl.ca.location=ca.pem",
		strings.Join(produceArgs("a:1", "t", 7, sec), " "))
	require.Equal(t, "perf consume -b a:1 --topic t --messages 7 --timeout 30000 --json",
		strings.Join(consumeArgs("a:1", "t", 7, 30*time.Second, nil), " "))
}

func TestOrder(t *testing.T) {
	require.Equal(t, []int{0, 1, 2}, order(0))
	require.Equal(t, []int{1, 2, 0}, order(1))
	require.Equal(t, []int{2, 0, 1}, order(2))
	require.Equal(t, []int{0, 1, 2}, order(3))
}

func TestNewSample(t *testing.T) {
	// 1 GiB in 2 s with 3 CPU-seconds: 512 MiB/s, 3 CPU-s/GiB.
	f := benchproc.Final{Type: "final", Records: 1 << 20, Bytes: gib, ElapsedS: 2, RecordsPerSec: 1 << 19, MiBPerSec: 512,
		FetchRecordsPerSec: 1 << 20, FetchMiBPerSec: 1024}
	p := newSample(f, ldProduce, 1<<20, 3)
	require.InDelta(t, 512*mbPerMiB, p.mbPerSec, 1e-9)
	require.InDelta(t, float64(1<<19), p.recPerSec, 1e-9)
	require.InDelta(t, 3, p.cpuPerGiB, 1e-9)
	// A consumer counts its fetch phase's throughput, the whole CPU.
	c := newSample(f, ldConsume, 1<<20, 3)
	require.InDelta(t, 1024*mbPerMiB, c.mbPerSec, 1e-9)
	require.InDelta(t, 3, c.cpuPerGiB, 1e-9)
	// No bytes reported: records × 1 KiB were moved; MiB/s from elapsed.
	f = benchproc.Final{Type: "final", Records: 1 << 20, ElapsedS: 4, RecordsPerSec: 1 << 18}
	s := newSample(f, ldProduce, 1<<20, 1.5)
	require.InDelta(t, 256*mbPerMiB, s.mbPerSec, 1e-9)
	require.InDelta(t, 1.5, s.cpuPerGiB, 1e-9)
}

// testResults is three runs with known figures: SSL at half and
// SASL_SSL at a quarter of PLAINTEXT's throughput, CPU per GiB 2× and
// 3×, run 2's PLAINTEXT produce twice as fast as the others (its ratios
// halve), and run 3's SASL_SSL consume missing.
func testResults() *results {
	r := &results{records: 1000, ballast: 3 << 30, commands: []string{"qk broker start ...", "qk user alter ..."}}
	for i := range 3 {
		var rd round
		for ld := range numLoads {
			base := 100.0 * float64(ld+1)
			if i == 1 && ld == ldProduce {
				base *= 2
			}
			rd[ld][lnPlaintext] = sample{recPerSec: base * 1000, mbPerSec: base, cpuPerGiB: 1}
			rd[ld][lnSSL] = sample{recPerSec: 500 * float64(ld+1), mbPerSec: 50 * float64(ld+1), cpuPerGiB: 2}
			rd[ld][lnSASLSSL] = sample{recPerSec: 250 * float64(ld+1), mbPerSec: 25 * float64(ld+1), cpuPerGiB: 3}
		}
		if i == 2 {
			rd[ldConsume][lnSASLSSL] = sample{}
		}
		r.runs = append(r.runs, rd)
	}
	return r
}

func TestRatios(t *testing.T) {
	r := testResults()
	require.InDelta(t, 0.5, r.ratio(0, ldProduce, lnSSL, figMBPerSec), 1e-9)
	require.InDelta(t, 0.25, r.ratio(1, ldProduce, lnSSL, figMBPerSec), 1e-9, "run 2's PLAINTEXT was twice as fast")
	require.InDelta(t, 0.5, r.medianRatio(ldProduce, lnSSL, figMBPerSec), 1e-9, "median of 0.5, 0.25, 0.5")
	require.InDelta(t, 2, r.medianRatio(ldProduce, lnSSL, figCPUPerGiB), 1e-9)
	require.InDelta(t, 3, r.medianRatio(ldProduce, lnSASLSSL, figCPUPerGiB), 1e-9)
	require.True(t, math.IsNaN(r.ratio(2, ldConsume, lnSASLSSL, figMBPerSec)), "a missing sample has no ratio")
	require.InDelta(t, 0.25, r.medianRatio(ldConsume, lnSASLSSL, figMBPerSec), 1e-9, "the missing run is left out")
	require.InDelta(t, 100, r.median(ldProduce, lnPlaintext, figMBPerSec), 1e-9, "median of 100, 200, 100")
	require.True(t, math.IsNaN((&results{}).medianRatio(ldProduce, lnSSL, figMBPerSec)))

	lo, hi := r.spread(ldProduce, lnSSL, figMBPerSec)
	require.InDelta(t, 0.25, lo, 1e-9)
	require.InDelta(t, 0.5, hi, 1e-9)
	lo, hi = (&results{}).spread(ldProduce, lnSSL, figMBPerSec)
	require.True(t, math.IsNaN(lo) && math.IsNaN(hi))
}

func TestMarkdown(t *testing.T) {
	h := header{Host: benchproc.Host{Describe: "v0-1-gabc", GoVersion: "go1.26", CPUModel: "Test CPU", CPUs: 2, Kernel: "6.1"},
		date: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), qkVersion: "qk 0.1", took: 90 * time.Second,
		cfg:        config{runs: 3, warmup: 1, records: 1000, ballast: true, timeout: 5 * time.Minute},
		ktls:       ktlsProbe{ulps: []string{"mptcp"}, configTLS: "# CONFIG_TLS is not set"},
		microbench: "FetchTLS/size=1MiB  2.5Gi  650Mi  -74.00%\n"}
	out := markdown(h, testResults())
	for _, want := range []string{
		"# qk TLS and SASL benchmark, 2026-12-02 10:00 UTC",
		"- machine: Test CPU × 2 CPUs, Linux 6.1, go1.26",
		"median of 3 runs after 1 warm-up run",
		"a 3.0 GiB ballast file",
		"`make bench-security` ran the micro-benchmark (last section), then `go run ./bench/security -runs 3 -warmup 1 -records 1000` started",
		"qk perf produce -b SASL_SSL_ADDR --topic TOPIC --num-records 1000",
		"## 1. Produce", "## 2. Consume", "## 3. Ratios", "## 4. What this says", "## Kernel TLS",
		"**no kTLS**; tcp_available_ulp lists `mptcp`, not `tls`; /proc/config.gz has `# CONFIG_TLS is not set`",
		"## Micro-benchmark", "FetchTLS/size=1MiB  2.5Gi  650Mi  -74.00%",
		"- Produce over SSL: 0.50× of PLAINTEXT's throughput, 2.00× its broker CPU per GiB (2.00 against 1.00 CPU-s/GiB: 1.00 CPU-s more per GiB)",
		"SASL_SSL's median CPU-per-GiB ratio falls outside", // 3× against SSL's 2× in every run
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "NaN")
	require.NotContains(t, out, "-quick")
	// Produce medians: PLAINTEXT 100 MB/s (of 100, 200, 100); SSL at
	// median 0.5× throughput, 2× CPU; SASL_SSL's consume ratio from its
	// two runs.
	require.Regexp(t, regexp.MustCompile(`(?m)^\| PLAINTEXT \| 100,000 \| 100\.0 \| 1\.00 \| 1× \| 1× \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| SSL \| 500 \| 50\.0 \| 2\.00 \| 0\.50× \| 2\.00× \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| SASL_SSL \| 500 \| 50\.0 \| 3\.00 \| 0\.25× \| 3\.00× \|$`), out, "consume: the missing run is left out")
	require.Regexp(t, regexp.MustCompile(`(?m)^\| 2 \| 0\.25× \| 2\.00× \| 0\.12× \| 3\.00× \| 0\.50× \| 2\.00× \| 0\.25× \| 3\.00× \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| 3 \| .* \| — \| — \|$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^\| \*\*median\*\* \| \*\*0\.50×\*\* \| \*\*2\.00×\*\* \| \*\*0\.25×\*\* \| \*\*3\.00×\*\* `), out)

	// -quick says so, and an early stop shows the error.
	h.cfg.quick = true
	r := testResults()
	r.err = "SSL, run 1/1: boom"
	out = markdown(h, r)
	require.Contains(t, out, "**-quick: tiny counts")
	require.Contains(t, out, "`go run ./bench/security -quick` started")
	require.Contains(t, out, "**Stopped early;")
	require.Contains(t, out, "SSL, run 1/1: boom")

	// Without runs or a micro-benchmark, no tables and no section.
	h.microbench = ""
	out = markdown(h, &results{})
	require.NotContains(t, out, "## 1. Produce")
	require.NotContains(t, out, "## Micro-benchmark")
	require.Contains(t, out, "## Kernel TLS")
}

func TestKTLSProbe(t *testing.T) {
	require.True(t, ktlsProbe{ulps: []string{"mptcp", "tls"}}.available())
	require.False(t, ktlsProbe{ulps: []string{"mptcp"}}.available())
	cfg := "CONFIG_NET=y\n# CONFIG_TLS is not set\nCONFIG_TLS_DEVICE=y\n"
	require.Equal(t, "# CONFIG_TLS is not set", configLine(cfg, "CONFIG_TLS"))
	require.Equal(t, "CONFIG_TLS_DEVICE=y", configLine(cfg, "CONFIG_TLS_DEVICE"))
	require.Equal(t, "CONFIG_TLS=m", configLine("CONFIG_TLS=m\n", "CONFIG_TLS"))
	require.Equal(t, "", configLine(cfg, "CONFIG_XFRM"))
}

// TestPKI: the key store is a key and a chain Go (and so the broker)
// loads, and its certificate is valid for 127.0.0.1 under the CA.
func TestPKI(t *testing.T) {
	p, err := newPKI(t.TempDir())
	require.NoError(t, err)
	ks, err := os.ReadFile(p.keystore)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(ks, ks)
	require.NoError(t, err)
	require.Len(t, cert.Certificate, 2, "broker certificate, then the CA's")
	caPEM, err := os.ReadFile(p.caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	require.NoError(t, err)
}
