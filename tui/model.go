package tui

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// CollectFunc builds one snapshot; (*Collector).Collect in the program,
// a recorded snapshot in tests.
type CollectFunc func(context.Context) (*Snapshot, error)

// SnapshotMsg carries a finished collection round to the model. The
// round ran in a tea.Cmd goroutine, so the UI goroutine never waits on
// the cluster; tests send recorded snapshots the same way.
type SnapshotMsg struct {
	Snapshot *Snapshot
	Err      error
}

// tickMsg asks for the next round.
type tickMsg struct{}

type viewID int

const (
	viewBrokers viewID = iota
	viewPartitions
	viewTopics
	viewGroups
	numViews
)

var viewNames = [numViews]string{"Brokers", "Partitions", "Topics", "Groups"}

// isrHighlight is how long a partition whose ISR changed stays marked,
// measured in snapshot time so that recorded snapshots replay the same.
const isrHighlight = 5 * time.Second

// historyLen is how many rounds the sparklines of the detail pane keep.
const historyLen = 120

// The default refresh interval, and the bounds of --interval and of + and -.
const (
	DefaultInterval = time.Second
	MinInterval     = 100 * time.Millisecond
	MaxInterval     = time.Minute
)

// Model is the bubbletea model of qk top: the last snapshot, the view
// state, and per-row histories for the sparklines. Update is pure apart
// from the commands it returns.
type Model struct {
	collect   CollectFunc
	interval  time.Duration
	bootstrap string

	snap     *Snapshot
	err      error
	inflight bool

	width, height int
	view          viewID
	sortCol       [numViews]int
	sortDesc      [numViews]bool
	cursor        [numViews]int
	top           [numViews]int // first row shown
	filter        textinput.Model
	filtering     bool
	detail        bool
	help          bool
	paused        bool

	prevISR    map[string]string
	isrChanged map[string]time.Time
	hist       map[string]*history

	st styles
}

// history is one row's values over the last rounds.
type history struct {
	a, b, c []float64 // HW, LEO, lag for a partition; per view otherwise
}

func (h *history) push(a, b, c float64) {
	add := func(s []float64, v float64) []float64 {
		s = append(s, v)
		if len(s) > historyLen {
			s = s[len(s)-historyLen:]
		}
		return s
	}
	h.a, h.b, h.c = add(h.a, a), add(h.b, b), add(h.c, c)
}

// Option configures a Model.
type Option func(*Model)

// WithRenderer renders styles with r; tests pass one with the Ascii
// profile so golden screens hold no escape codes.
func WithRenderer(r *lipgloss.Renderer) Option { return func(m *Model) { m.st = newStyles(r) } }

// WithBootstrap names the seed brokers on the screen before the first
// snapshot arrives.
func WithBootstrap(s string) Option { return func(m *Model) { m.bootstrap = s } }

// New returns the model; collect runs every interval off the UI
// goroutine.
func New(collect CollectFunc, interval time.Duration, opts ...Option) *Model {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.CharLimit = 64
	m := &Model{
		collect:    collect,
		interval:   clampInterval(interval),
		width:      80,
		height:     24,
		filter:     ti,
		prevISR:    map[string]string{},
		isrChanged: map[string]time.Time{},
		hist:       map[string]*history{},
		st:         newStyles(lipgloss.DefaultRenderer()),
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

func clampInterval(d time.Duration) time.Duration {
	return min(max(d, MinInterval), MaxInterval)
}

// Init starts the first round at once.
func (m *Model) Init() tea.Cmd {
	m.inflight = true
	return m.collectCmd()
}

func (m *Model) collectCmd() tea.Cmd {
	collect := m.collect
	return func() tea.Msg {
		s, err := collect(context.Background())
		return SnapshotMsg{Snapshot: s, Err: err}
	}
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// keys are the bindings; help lists them.
var keys = struct {
	view1, view2, view3, view4, next, prev, filter, sort, reverse, detail, help, pause, faster, slower, quit, up, down, pgup, pgdown, home, end key.Binding
}{
	view1:   key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "brokers")),
	view2:   key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "partitions")),
	view3:   key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "topics")),
	view4:   key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "groups")),
	next:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
	prev:    key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
	filter:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter rows (enter keeps, esc clears)")),
	sort:    key.NewBinding(key.WithKeys("s", ">"), key.WithHelp("s", "sort by the next column")),
	reverse: key.NewBinding(key.WithKeys("r", "<"), key.WithHelp("r", "reverse the sort")),
	detail:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail pane with sparklines")),
	help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "this help")),
	pause:   key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause or resume refreshing")),
	faster:  key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "refresh faster")),
	slower:  key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "refresh slower")),
	quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("up/k", "move up")),
	down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("down/j", "move down")),
	pgup:    key.NewBinding(key.WithKeys("pgup", "ctrl+b")),
	pgdown:  key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " ")),
	home:    key.NewBinding(key.WithKeys("home", "g")),
	end:     key.NewBinding(key.WithKeys("end", "G")),
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case SnapshotMsg:
		m.inflight = false
		if msg.Err != nil {
			m.err = msg.Err
		} else if msg.Snapshot != nil {
			m.err = nil
			m.absorb(msg.Snapshot)
		}
		return m, m.tick()
	case tickMsg:
		if m.paused || m.inflight {
			return m, m.tick()
		}
		m.inflight = true
		return m, m.collectCmd()
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	// Keys typed faster than the terminal is read (tmux send-keys, a
	// paste, a fast typist) arrive as one message of several runes; each
	// is a key of its own, "/ord" is the filter key and then "ord".
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 {
		var cmds []tea.Cmd
		for _, r := range msg.Runes {
			_, cmd := m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
			cmds = append(cmds, cmd)
		}
		return m, tea.Batch(cmds...)
	}
	if msg.String() == "ctrl+c" {
		return m, tea.Quit
	}
	if m.filtering {
		switch msg.String() {
		case "enter":
			m.filtering = false
			m.filter.Blur()
			return m, nil
		case "esc":
			m.filtering = false
			m.filter.Blur()
			m.filter.SetValue("")
			return m, nil
		}
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		m.cursor[m.view], m.top[m.view] = 0, 0
		return m, cmd
	}
	if m.help {
		// Any key closes the help; q still quits.
		m.help = false
		if key.Matches(msg, keys.quit) {
			return m, tea.Quit
		}
		return m, nil
	}
	switch {
	case key.Matches(msg, keys.quit):
		return m, tea.Quit
	case key.Matches(msg, keys.view1):
		m.view = viewBrokers
	case key.Matches(msg, keys.view2):
		m.view = viewPartitions
	case key.Matches(msg, keys.view3):
		m.view = viewTopics
	case key.Matches(msg, keys.view4):
		m.view = viewGroups
	case key.Matches(msg, keys.next):
		m.view = (m.view + 1) % numViews
	case key.Matches(msg, keys.prev):
		m.view = (m.view + numViews - 1) % numViews
	case key.Matches(msg, keys.filter):
		m.filtering = true
		return m, m.filter.Focus()
	case msg.String() == "esc":
		switch {
		case m.detail:
			m.detail = false
		case m.filter.Value() != "":
			m.filter.SetValue("")
		}
	case key.Matches(msg, keys.sort):
		m.sortCol[m.view] = (m.sortCol[m.view] + 1) % len(columnsOf(m.view))
		m.sortDesc[m.view] = false
	case key.Matches(msg, keys.reverse):
		m.sortDesc[m.view] = !m.sortDesc[m.view]
	case key.Matches(msg, keys.detail):
		m.detail = !m.detail
	case key.Matches(msg, keys.help):
		m.help = true
	case key.Matches(msg, keys.pause):
		m.paused = !m.paused
	case key.Matches(msg, keys.faster):
		m.interval = clampInterval(m.interval / 2)
	case key.Matches(msg, keys.slower):
		m.interval = clampInterval(m.interval * 2)
	case key.Matches(msg, keys.up):
		m.cursor[m.view]--
	case key.Matches(msg, keys.down):
		m.cursor[m.view]++
	case key.Matches(msg, keys.pgup):
		m.cursor[m.view] -= max(m.bodyRows(), 1)
	case key.Matches(msg, keys.pgdown):
		m.cursor[m.view] += max(m.bodyRows(), 1)
	case key.Matches(msg, keys.home):
		m.cursor[m.view] = 0
	case key.Matches(msg, keys.end):
		m.cursor[m.view] = 1 << 30
	}
	return m, nil
}

// absorb takes a new snapshot: notes ISR changes and extends the
// histories.
func (m *Model) absorb(s *Snapshot) {
	seen := make(map[string]bool, len(s.Partitions))
	for _, p := range s.Partitions {
		k := partKey(p.Topic, p.Partition)
		seen[k] = true
		isr := ids(p.ISR)
		if was, ok := m.prevISR[k]; ok && was != isr {
			m.isrChanged[k] = s.Time
		}
		m.prevISR[k] = isr
		var leo float64 = -1
		for _, r := range p.LogEndOffsets {
			if r.Broker == p.Leader && r.LogEndOffset != nil {
				leo = float64(*r.LogEndOffset)
			}
		}
		m.record(k, float64(optOr(p.HighWatermark, -1)), leo, float64(optOr(p.MaxFollowerLag, -1)))
	}
	for k := range m.prevISR {
		if !seen[k] {
			delete(m.prevISR, k)
			delete(m.isrChanged, k)
			delete(m.hist, k)
		}
	}
	for k, at := range m.isrChanged {
		if s.Time.Sub(at) >= isrHighlight {
			delete(m.isrChanged, k)
		}
	}
	for _, b := range s.Brokers {
		m.record("b/"+strconv.Itoa(int(b.ID)), optF(b.BytesIn), optF(b.BytesOut), float64(b.Led))
	}
	for _, t := range s.Topics {
		m.record("t/"+t.Name, optF(t.MessagesIn), optF(t.BytesIn), optF(t.BytesOut))
	}
	for _, g := range s.Groups {
		m.record("g/"+g.ID, float64(g.TotalLag), float64(g.Members), 0)
	}
	m.snap = s
}

func (m *Model) record(k string, a, b, c float64) {
	h := m.hist[k]
	if h == nil {
		h = &history{}
		m.hist[k] = h
	}
	h.push(a, b, c)
}

func partKey(topic string, p int32) string { return "p/" + topic + "/" + strconv.Itoa(int(p)) }

func optOr(v *int64, or int64) int64 {
	if v == nil {
		return or
	}
	return *v
}

func optF(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}

// matches reports whether a row passes the filter: a case-insensitive
// substring of any of its cells.
func (m *Model) matches(cells []string) bool {
	f := strings.ToLower(strings.TrimSpace(m.filter.Value()))
	if f == "" {
		return true
	}
	for _, c := range cells {
		if strings.Contains(strings.ToLower(c), f) {
			return true
		}
	}
	return false
}
