package zkstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/metadata/zkstore"
)

func TestParseConnect(t *testing.T) {
	for _, tc := range []struct {
		in      string
		servers []string
		chroot  string
		err     string
	}{
		{in: "127.0.0.1:2181", servers: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2,c:3/kafka", servers: []string{"a:1", "b:2", "c:3"}, chroot: "/kafka"},
		{in: "a,b/kafka/prod/", servers: []string{"a:2181", "b:2181"}, chroot: "/kafka/prod"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: "/kafka", err: "names no server"},
		{in: "a:1/k//x", err: "bad chroot"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			servers, chroot, err := zkstore.ParseConnect(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.servers, servers)
			require.Equal(t, tc.chroot, chroot)
		})
	}
}
