package fuzzcorpus

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMarshal(t *testing.T) {
	got, err := Marshal(int16(-1), byte(3), []byte("a\x00\xff"), "s", true, uint32(7))
	require.NoError(t, err)
	require.Equal(t, "go test fuzz v1\nint16(-1)\nbyte('\\x03')\n[]byte(\"a\\x00\\xff\")\nstring(\"s\")\nbool(true)\nuint32(7)\n", string(got))
	_, err = Marshal(int32(1))
	require.ErrorContains(t, err, "unsupported type int32")
}
