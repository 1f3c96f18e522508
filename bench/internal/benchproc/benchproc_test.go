package benchproc

import (
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses: fields are counted from
	// the last ')'.
	stat := []byte("4242 (qk (broker) x) S 1 4242 4242 0 -1 4194560 1177 0 0 0 250 130 0 0 20 0 9 0 100 0 0\n")
	tests := []struct {
		name  string
		stat  []byte
		ticks float64
		want  float64
		err   bool
	}{
		{"user+system", stat, 100, 3.8, false},
		{"other tick rate", stat, 1000, 0.38, false},
		{"no paren", []byte("4242 qk S 1"), 100, 0, true},
		{"truncated", []byte("4242 (qk) S 1 2 3"), 100, 0, true},
		{"not a number", []byte("4242 (qk) S 1 4242 4242 0 -1 4194560 1177 0 0 0 x 130 0"), 100, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatCPU(tt.stat, tt.ticks)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.InDelta(t, tt.want, got, 1e-9)
		})
	}
}

const (
	produceFinal = `{"type":"final","records":500000,"bytes":512000000,"errors":0,"elapsed_s":1.25,"records_per_sec":400000.5,"mib_per_sec":390.6,"latency_ms":{"avg":3.1,"max":40.25,"p50":2.5,"p95":7.125,"p99":9.001,"p999":12.5}}`
	consumeFinal = `{"type":"final","records":500000,"bytes":512000000,"elapsed_s":0.5,"records_per_sec":1000000,"mib_per_sec":976.6,"rebalance_ms":0,"fetch_ms":480,"fetch_mib_per_sec":1017.3,"fetch_records_per_sec":1041666.7}`
)

func TestParsePerfOutput(t *testing.T) {
	progress := `{"type":"progress","records":250000,"records_per_sec":410000,"mib_per_sec":400.4}`
	tests := []struct {
		name    string
		out     string
		want    Final
		wantErr string
	}{
		{
			name: "produce with progress lines",
			out:  progress + "\n" + progress + "\n" + produceFinal + "\n",
			want: Final{Type: "final", Records: 500000, Bytes: 512000000, ElapsedS: 1.25, RecordsPerSec: 400000.5, MiBPerSec: 390.6,
				Latency: &Latency{Avg: 3.1, Max: 40.25, P50: 2.5, P95: 7.125, P99: 9.001, P999: 12.5}},
		},
		{
			name: "consume",
			out:  consumeFinal,
			want: Final{Type: "final", Records: 500000, Bytes: 512000000, ElapsedS: 0.5, RecordsPerSec: 1000000, MiBPerSec: 976.6,
				FetchMS: 480, FetchMiBPerSec: 1017.3, FetchRecordsPerSec: 1041666.7},
		},
		{
			name: "text and blank lines around, the last final wins, unknown fields ignored",
			out:  "connecting to 127.0.0.1:9092\n\n" + `{"type":"final","records":1,"records_per_sec":1}` + "\n  " + `{"type":"final","records":2,"records_per_sec":2,"new_field":[1,2]}` + "  \nbye\n",
			want: Final{Type: "final", Records: 2, RecordsPerSec: 2},
		},
		{name: "no final line", out: progress + "\n", wantErr: `no line with "type":"final"`},
		{name: "empty", out: "", wantErr: `no line with "type":"final"`},
		{name: "final with a wrong type", out: `{"type":"final","records":"many"}`, wantErr: "final line"},
		{name: "not JSON after a brace", out: "{oops\n", wantErr: `no line with "type":"final"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePerfOutput([]byte(tt.out))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"one", []float64{7}, 7},
		{"odd, unsorted", []float64{5, 1, 9, 3, 7}, 5},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"an outlier does not move it", []float64{10, 11, 12, 13, 1e9}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			require.Equal(t, tt.want, Median(tt.in))
			require.Equal(t, in, tt.in, "median must not reorder its input (runs are listed in order)")
		})
	}
	require.True(t, math.IsNaN(Median(nil)))
}

func TestListeningAddr(t *testing.T) {
	path := t.TempDir() + "/log"
	require.Equal(t, "", ListeningAddr(path), "no file yet")
	require.NoError(t, writeFile(path, "kfake: starting\n"))
	require.Equal(t, "", ListeningAddr(path))
	require.NoError(t, writeFile(path, "kfake: starting\nlistening on 127.0.0.1:4242\n"))
	require.Equal(t, "127.0.0.1:4242", ListeningAddr(path))
}

func TestParseCPUInfo(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	model, n := ParseCPUInfo(info, 9)
	require.Equal(t, "AMD EPYC 7B13", model)
	require.Equal(t, 2, n)
	model, n = ParseCPUInfo("Features: fp asimd\n", 4) // some arm64 kernels have no model name
	require.Equal(t, "", model)
	require.Equal(t, 4, n)
}

func TestGroup(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999.4: "999", 999.5: "1,000", 1234567: "1,234,567", -1000: "-1,000"} {
		require.Equal(t, want, Group(v), "Group(%v)", v)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e300} {
		require.Equal(t, "—", Group(v), "Group(%v)", v)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

func TestParseMemFree(t *testing.T) {
	got, err := parseMemFree([]byte("MemTotal:       24576000 kB\nMemFree:        12000000 kB\nMemAvailable:   23000000 kB\n"))
	require.NoError(t, err)
	require.Equal(t, int64(12000000)<<10, got)
	_, err = parseMemFree([]byte("MemTotal: 1 kB\n"))
	require.Error(t, err)
}

func TestWriteBallast(t *testing.T) {
	// Leaving all but ~2 MiB of the free memory: a small file, written
	// and removed.
	free, err := memFree()
	require.NoError(t, err)
	b, err := WriteBallast(t.TempDir()+"/ballast", free-2<<20)
	require.NoError(t, err)
	st, err := os.Stat(b.Path)
	if b.Bytes > 0 {
		require.NoError(t, err)
		require.Equal(t, b.Bytes, st.Size())
	}
	require.NoError(t, b.Remove())
	_, err = os.Stat(b.Path)
	require.True(t, b.Bytes == 0 || os.IsNotExist(err))
}
