package main

import (
	"math"
	"testing"
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
			got, err := parseStatCPU(tt.stat, tt.ticks)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMedianOf(t *testing.T) {
	runs := []metrics{
		{label: "1 KiB", produceRecS: 3, p99ms: 10},
		{label: "1 KiB", produceRecS: 1, p99ms: 30},
		{label: "1 KiB", produceRecS: 2, p99ms: 20},
	}
	got := medianOf(runs)
	if got.produceRecS != 2 || got.p99ms != 20 {
		t.Fatalf("odd count: got rec/s %v p99 %v, want 2 and 20", got.produceRecS, got.p99ms)
	}
	got = medianOf(runs[:2])
	if got.produceRecS != 2 || got.p99ms != 20 {
		t.Fatalf("even count: got rec/s %v p99 %v, want the mean of the middle two, 2 and 20", got.produceRecS, got.p99ms)
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}
