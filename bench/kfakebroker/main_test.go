package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpts(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"peer", []string{"-mode", "peer", "-dir", "d"}, ""},
		{"peer with sync and partitions", []string{"-mode", "peer", "-dir", "d", "-sync", "-partitions", "100"}, ""},
		{"blackhole", []string{"-mode", "blackhole"}, ""},
		{"synthetic", []string{"-mode", "synthetic", "-record-bytes", "1024", "-compression", "lz4"}, ""},
		{"peer needs a dir", []string{"-mode", "peer"}, "needs -dir"},
		{"sync is for the peer", []string{"-mode", "blackhole", "-sync"}, "-dir and -sync are for -mode peer"},
		{"a dir is for the peer", []string{"-mode", "synthetic", "-dir", "d"}, "-dir and -sync are for -mode peer"},
		{"record bytes are for synthetic", []string{"-mode", "blackhole", "-record-bytes", "1024"}, "for -mode synthetic"},
		{"unknown codec", []string{"-mode", "synthetic", "-compression", "zstd"}, "want none or lz4"},
		{"no records", []string{"-mode", "synthetic", "-record-bytes", "0"}, "want at least 1"},
		{"no partitions", []string{"-mode", "blackhole", "-partitions", "0"}, "want at least 1"},
		{"unknown mode", []string{"-mode", "memory"}, "want peer, blackhole or synthetic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags(tt.args, io.Discard)
			require.NoError(t, err)
			_, err = c.opts()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
	_, err := parseFlags([]string{"-mode", "peer", "extra"}, io.Discard)
	require.ErrorContains(t, err, "unexpected arguments")
}
