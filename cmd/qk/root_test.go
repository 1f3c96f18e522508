package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runQK runs the command tree in-process, as main would, and returns what
// it printed.
func runQK(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}

func TestVersion(t *testing.T) {
	out, _, err := runQK(t, "--version")
	require.NoError(t, err)
	require.Regexp(t, `^qk version \S+\n$`, out)
}

func TestHelpHasExamples(t *testing.T) {
	out, _, err := runQK(t, "--help")
	require.NoError(t, err)
	require.Contains(t, out, "Examples:")
	require.Contains(t, out, "--log-level")
	require.Contains(t, out, "completion")
}

func TestLogLevel(t *testing.T) {
	for _, lvl := range []string{"debug", "info", "warn", "error", "WARN"} {
		_, _, err := runQK(t, "--log-level", lvl, "completion", "bash")
		require.NoError(t, err, lvl)
	}
	_, _, err := runQK(t, "--log-level", "loud", "completion", "bash")
	require.ErrorContains(t, err, `invalid --log-level "loud"`)
}

func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "# bash completion V2 for qk",
		"zsh":        "#compdef qk",
		"fish":       "# fish completion for qk",
		"powershell": "# powershell completion for qk",
	} {
		t.Run(shell, func(t *testing.T) {
			out, _, err := runQK(t, "completion", shell)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(out, marker), "%s script starts %q", shell, out[:min(len(out), 60)])
		})
	}
	_, _, err := runQK(t, "completion", "tcsh")
	require.Error(t, err)
	_, _, err = runQK(t, "completion")
	require.Error(t, err)
}

// TestCompletionsCommitted keeps completions/ in step with the command tree:
// when a command or flag changes, `make completions` must be rerun.
func TestCompletionsCommitted(t *testing.T) {
	for shell, file := range map[string]string{
		"bash": "qk.bash", "zsh": "_qk", "fish": "qk.fish", "powershell": "qk.ps1",
	} {
		want, err := os.ReadFile("../../completions/" + file)
		require.NoError(t, err)
		got, _, err := runQK(t, "completion", shell)
		require.NoError(t, err)
		require.Equal(t, string(want), got, "completions/%s is stale: run make completions", file)
	}
}
