package admin

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCollectResults(t *testing.T) {
	errBad := errors.New("bad")
	resp := map[string]error{"a": nil, "b": errBad, "d": nil, "e": errors.New("worse")}
	status := func(err error) (string, error) { return "done", err }

	out, err := collectResults("delete topic", []string{"d", "b", "c", "a", "e"}, resp, status)
	require.Equal(t, []Result{{"d", "done"}, {"a", "done"}}, out, "the others' results, in the order asked")
	require.EqualError(t, err, "delete topic b: bad", "the first failure")
	require.ErrorIs(t, err, errBad)

	_, err = collectResults("delete group", []string{"c", "b"}, resp, status)
	require.EqualError(t, err, "delete group c: no answer")

	out, err = collectResults("create topic", []string{"a"}, resp, status)
	require.NoError(t, err)
	require.Equal(t, []Result{{"a", "done"}}, out)
}
