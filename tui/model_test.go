package tui

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) {
	// The filter's text input renders with the default renderer.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// loadSnapshots reads recorded rounds from testdata.
func loadSnapshots(t *testing.T, name string) []*Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var out []*Snapshot
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// newTestModel is a model fed with the recorded rounds of name at a
// fixed size, colour off; it never collects itself.
func newTestModel(t *testing.T, name string, w, h int) *Model {
	t.Helper()
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	m := New(nil, DefaultInterval, WithRenderer(r))
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	for _, s := range loadSnapshots(t, name) {
		m.Update(SnapshotMsg{Snapshot: s})
	}
	return m
}

func keys_(m *Model, ks ...string) {
	for _, k := range ks {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		m.Update(msg)
	}
}

// golden compares the screen with testdata/<name>.golden and checks it
// fits: exactly h lines, none wider than w.
func golden(t *testing.T, m *Model, name string) {
	t.Helper()
	got := m.View()
	lines := strings.Split(got, "\n")
	require.Len(t, lines, m.height, "screen height")
	for i, l := range lines {
		require.LessOrEqual(t, ansi.StringWidth(l), m.width, "line %d %q wider than %d", i, l, m.width)
		require.True(t, utf8.ValidString(l))
		require.NotContains(t, l, "\x1b", "line %d has escape codes with colour off", i)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got+"\n"), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./tui -update to write it")
	require.Equal(t, string(want), got+"\n", "screen %s (go test ./tui -update rewrites it)", name)
}

func TestViews(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
	}{
		{"brokers", nil},
		{"partitions", []string{"2"}},
		{"topics", []string{"3"}},
		{"groups", []string{"4"}},
		{"partitions_detail", []string{"2", "enter"}},
		{"partitions_detail_txn_stuck", []string{"2", "j", "j", "enter"}},
		{"partitions_sorted_lag_desc", []string{"2", "s", "s", "s", "s", "s", "s", "s", "s", "r"}},
		{"partitions_filter", []string{"2", "/", "p", "a", "y", "enter"}},
		{"topics_detail", []string{"tab", "tab", "enter"}},
		{"groups_detail", []string{"4", "enter"}},
		{"help", []string{"?"}},
		{"paused", []string{"p", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestModel(t, "cluster.json", 80, 24)
			keys_(m, tc.keys...)
			golden(t, m, tc.name)
		})
	}
}

// TestKeysInOneMessage: runes that arrive together (tmux send-keys, a
// paste) act as the keys they are, one after the other.
func TestKeysInOneMessage(t *testing.T) {
	m := newTestModel(t, "cluster.json", 80, 24)
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("2/pay")})
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	require.Equal(t, readGolden(t, "partitions_filter"), m.View()+"\n")
}

// TestResize: the screen follows the terminal's size, wide and narrow,
// and the selection survives.
func TestResize(t *testing.T) {
	m := newTestModel(t, "cluster.json", 80, 24)
	keys_(m, "2", "down", "down")
	golden(t, m, "resize_80x24")
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	golden(t, m, "resize_120x30")
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 12})
	golden(t, m, "resize_60x12")
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	require.Equal(t, readGolden(t, "resize_80x24"), m.View()+"\n")
}

func readGolden(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
	require.NoError(t, err)
	return string(b)
}

// TestBrokerDown: a broker that stopped answering is DOWN in the header
// count and its row, and the partitions it reported show what is still
// known.
func TestBrokerDown(t *testing.T) {
	m := newTestModel(t, "broker_down.json", 80, 24)
	golden(t, m, "broker_down_brokers")
	require.Contains(t, m.View(), "brokers 2/3 up")
	keys_(m, "2")
	golden(t, m, "broker_down_partitions")
}

// TestISRChangeHighlight: the ISR that changed carries a * until
// isrHighlight of snapshot time has passed.
func TestISRChangeHighlight(t *testing.T) {
	m := newTestModel(t, "cluster.json", 80, 24)
	keys_(m, "2")
	require.Contains(t, m.View(), "0,2*")
	s := *m.snap
	s.Time = s.Time.Add(isrHighlight)
	m.Update(SnapshotMsg{Snapshot: &s})
	require.NotContains(t, m.View(), "0,2*")
	require.Contains(t, m.View(), "0,2 ")
}

// TestKeys: interval, pause, quit and the tick loop.
func TestKeys(t *testing.T) {
	m := newTestModel(t, "cluster.json", 80, 24)
	keys_(m, "+")
	require.Equal(t, DefaultInterval/2, m.interval)
	keys_(m, "-", "-")
	require.Equal(t, DefaultInterval*2, m.interval)
	keys_(m, "p")
	require.True(t, m.paused)
	_, cmd := m.Update(tickMsg{})
	require.NotNil(t, cmd)
	require.False(t, m.inflight, "paused: no round started")
	keys_(m, "p")
	m.collect = func(ctx context.Context) (*Snapshot, error) { return m.snap, nil }
	_, cmd = m.Update(tickMsg{})
	require.True(t, m.inflight)
	msg := cmd()
	require.IsType(t, SnapshotMsg{}, msg)
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	require.IsType(t, tea.QuitMsg{}, cmd())
}

// TestCollectError: a failed round keeps the last snapshot on screen and
// says why.
func TestCollectError(t *testing.T) {
	m := newTestModel(t, "cluster.json", 80, 24)
	m.Update(SnapshotMsg{Err: errors.New("metadata: no answer within 2s")})
	v := m.View()
	require.Contains(t, v, "! metadata: no answer within 2s (showing 10:00:03)")
	require.Contains(t, v, "10.0.0.1:9092")
}
