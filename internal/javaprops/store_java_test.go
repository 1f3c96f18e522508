//go:build integration

package javaprops

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// javaComments is the comments argument both directions use: a line
// break, a line already starting with '!', ISO-8859-1 and non-ISO-8859-1
// characters.
const javaComments = "qk conformance é\u00ff 日本 😀\n!bang\r\nlast"

// runCheck runs testdata/Check.java with java.util.Properties on the other
// side. It fails when java is missing: make deps requires Java 17.
func runCheck(t *testing.T, args ...string) []byte {
	t.Helper()
	java, err := exec.LookPath("java")
	require.NoError(t, err, "java (17+) must be on PATH for this test; see scripts/ensure-deps.sh")
	cmd := exec.Command(java, append([]string{filepath.Join("testdata", "Check.java")}, args...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "java Check.java %v: %s", args, stderr.String())
	return out
}

func hexLine(key, value string) string {
	return hex.EncodeToString([]byte(key)) + " " + hex.EncodeToString([]byte(value))
}

// TestJavaLoadsStore writes every storeCases entry with the Go writer and
// checks that java.util.Properties.load reads back exactly those strings.
func TestJavaLoadsStore(t *testing.T) {
	b := AppendComments(nil, javaComments)
	b = AppendDate(b, time.Now())
	b = AppendProperties(b, storeProps())
	path := filepath.Join(t.TempDir(), "go.properties")
	require.NoError(t, os.WriteFile(path, b, 0o644))

	var want []string
	for _, c := range storeCases {
		want = append(want, hexLine(c.key, c.value))
	}
	sort.Strings(want)
	got := strings.Split(strings.TrimSuffix(string(runCheck(t, "load", path)), "\n"), "\n")
	require.Equal(t, want, got)
}

// TestStoreMatchesJava has Java store the same entries and checks that
// Parse reads them back, and that the Go writer produces Java's bytes: the
// same comment lines, a date line AppendDate reproduces, and the same
// key=value lines (Java writes them in hash order, so as a set).
func TestStoreMatchesJava(t *testing.T) {
	dir := t.TempDir()
	lines := []string{hex.EncodeToString([]byte(javaComments))}
	for _, c := range storeCases {
		lines = append(lines, hexLine(c.key, c.value))
	}
	entries := filepath.Join(dir, "entries")
	require.NoError(t, os.WriteFile(entries, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	path := filepath.Join(dir, "java.properties")
	runCheck(t, "store", entries, path)
	javaOut, err := os.ReadFile(path)
	require.NoError(t, err)

	props, err := Parse(javaOut)
	require.NoError(t, err)
	require.Equal(t, storeMap(), Map(props))

	comments := AppendComments(nil, javaComments)
	require.True(t, bytes.HasPrefix(javaOut, comments), "Java's header %q does not start with %q", javaOut, comments)
	rest := javaOut[len(comments):]
	dateLine, body, ok := bytes.Cut(rest, []byte("\n"))
	require.True(t, ok)
	when, err := time.Parse(DateLayout, strings.TrimPrefix(string(dateLine), "#"))
	require.NoError(t, err, "date line %q", dateLine)
	require.Equal(t, string(dateLine)+"\n", string(AppendDate(nil, when)))

	javaLines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	goLines := strings.Split(strings.TrimSuffix(string(AppendProperties(nil, storeProps())), "\n"), "\n")
	sort.Strings(javaLines)
	sort.Strings(goLines)
	require.Equal(t, javaLines, goLines)
}
