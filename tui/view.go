package tui

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

type styles struct {
	title, tabOn, tabOff, head, sel, warn, bad, changed, dim lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	return styles{
		title:   r.NewStyle().Bold(true),
		tabOn:   r.NewStyle().Bold(true).Reverse(true),
		tabOff:  r.NewStyle().Faint(true),
		head:    r.NewStyle().Bold(true).Underline(true),
		sel:     r.NewStyle().Reverse(true),
		warn:    r.NewStyle().Foreground(lipgloss.Color("11")),
		bad:     r.NewStyle().Foreground(lipgloss.Color("9")).Bold(true),
		changed: r.NewStyle().Foreground(lipgloss.Color("13")).Bold(true),
		dim:     r.NewStyle().Faint(true),
	}
}

// column is one table column; flex columns (names) give up width first
// when the terminal is narrow.
type column struct {
	title string
	right bool
	flex  bool
	// optional: hidden when the table would not fit the width even with
	// one-space gaps and its flex columns at their narrowest.
	optional bool
}

// row is one table line: its cells, the values it sorts by (NaN: sort
// by the cell's text) and how it is marked.
type row struct {
	key   string
	cells []string
	vals  []float64
	mark  rowMark
}

type rowMark int

const (
	markNone rowMark = iota
	markWarn
	markBad
	markChanged
)

var columns = [numViews][]column{
	viewBrokers: {{title: "ID", right: true}, {title: "HOST", flex: true}, {title: "RACK"}, {title: "STATUS"},
		{title: "LED", right: true}, {title: "HOSTED", right: true}, {title: "IN/S", right: true}, {title: "OUT/S", right: true}, {title: "ENDPOINT", flex: true}},
	viewPartitions: {{title: "TOPIC", flex: true}, {title: "PARTITION", right: true}, {title: "LEADER", right: true},
		{title: "REPLICAS"}, {title: "ISR"}, {title: "HW", right: true}, {title: "LSO", right: true, optional: true}, {title: "LEO"}, {title: "LAG", right: true}, {title: "STATUS"}},
	viewTopics: {{title: "TOPIC", flex: true}, {title: "PARTS", right: true}, {title: "RF", right: true}, {title: "URP", right: true},
		{title: "OFFLINE", right: true}, {title: "SIZE", right: true}, {title: "MSG IN/S", right: true}, {title: "IN/S", right: true}, {title: "OUT/S", right: true}},
	viewGroups: {{title: "GROUP", flex: true}, {title: "STATE"}, {title: "MEMBERS", right: true}, {title: "LAG", right: true},
		{title: "TREND"}, {title: "LAG PER TOPIC", flex: true}},
}

func columnsOf(v viewID) []column { return columns[v] }

var nan = math.NaN()

// rows builds the current view's rows, filtered and sorted.
func (m *Model) rows() []row {
	s := m.snap
	if s == nil {
		return nil
	}
	var out []row
	add := func(r row) {
		if m.matches(r.cells) {
			out = append(out, r)
		}
	}
	switch m.view {
	case viewBrokers:
		for _, b := range s.Brokers {
			st, mark := upDown(b), markNone
			if !b.Up || len(b.OfflineLogDirs) > 0 {
				mark = markBad
			}
			// Without an endpoint the broker's LEOs are unavailable.
			// ":port" when it is on the broker's own host, which is
			// the usual case and keeps the row within 80 columns.
			endpoint := "none"
			if b.HTTP != "" {
				endpoint = b.HTTP
				if h, port, ok := strings.Cut(strings.TrimPrefix(b.HTTP, "http://"), ":"); ok && h == b.Host {
					endpoint = ":" + port
				}
			}
			add(row{key: "b/" + strconv.Itoa(int(b.ID)), mark: mark,
				cells: []string{strconv.Itoa(int(b.ID)), hostPort(b), dash(b.Rack), st, strconv.Itoa(b.Led), strconv.Itoa(b.Hosted),
					bytesCell(b.BytesIn), bytesCell(b.BytesOut), endpoint},
				vals: []float64{float64(b.ID), nan, nan, nan, float64(b.Led), float64(b.Hosted), optF(b.BytesIn), optF(b.BytesOut), nan}})
		}
	case viewPartitions:
		for _, p := range s.Partitions {
			k := partKey(p.Topic, p.Partition)
			mark := markNone
			isr := ids(p.ISR)
			if _, ok := m.isrChanged[k]; ok {
				// The asterisk keeps the change visible without colour.
				isr += "*"
				mark = markChanged
			}
			switch p.Status {
			case StatusOffline, StatusLeaderDown:
				mark = markBad
			case StatusUnderReplicated, StatusTxnStuck:
				if mark == markNone {
					mark = markWarn
				}
			}
			add(row{key: k, mark: mark,
				cells: []string{p.Topic, strconv.Itoa(int(p.Partition)), leaderText(p.Leader), ids(p.Replicas), isr,
					optInt(p.HighWatermark), optInt(p.LastStableOffset), leoText(p.LogEndOffsets, "unavailable"), optInt(p.MaxFollowerLag), p.Status},
				vals: []float64{nan, float64(p.Partition), float64(p.Leader), nan, float64(len(p.ISR)),
					float64(optOr(p.HighWatermark, -1)), float64(optOr(p.LastStableOffset, -1)), nan, float64(optOr(p.MaxFollowerLag, -1)), nan}})
		}
	case viewTopics:
		for _, t := range s.Topics {
			mark := markNone
			switch {
			case t.Offline > 0:
				mark = markBad
			case t.UnderReplicated > 0:
				mark = markWarn
			}
			add(row{key: "t/" + t.Name, mark: mark,
				cells: []string{t.Name, strconv.Itoa(t.Partitions), strconv.Itoa(t.ReplicationFactor), strconv.Itoa(t.UnderReplicated),
					strconv.Itoa(t.Offline), size(t.SizeBytes), countCell(t.MessagesIn), bytesCell(t.BytesIn), bytesCell(t.BytesOut)},
				vals: []float64{nan, float64(t.Partitions), float64(t.ReplicationFactor), float64(t.UnderReplicated),
					float64(t.Offline), float64(optOr(t.SizeBytes, -1)), optF(t.MessagesIn), optF(t.BytesIn), optF(t.BytesOut)}})
		}
	case viewGroups:
		for _, g := range s.Groups {
			var per []string
			for _, l := range g.Lag {
				per = append(per, l.Topic+":"+strconv.FormatInt(l.Lag, 10))
			}
			k := "g/" + g.ID
			trend := "-"
			if h := m.hist[k]; h != nil && len(h.a) > 1 {
				trend = sparkline(h.a, 8)
			}
			state := g.State
			if g.Error != "" {
				state = "ERROR"
			}
			add(row{key: k, cells: []string{g.ID, dash(state), strconv.Itoa(g.Members), strconv.FormatInt(g.TotalLag, 10), trend, dash(strings.Join(per, " "))},
				vals: []float64{nan, nan, float64(g.Members), float64(g.TotalLag), nan, nan}})
		}
	}
	col, desc := m.sortCol[m.view], m.sortDesc[m.view]
	slices.SortStableFunc(out, func(a, b row) int {
		var c int
		if av, bv := a.vals[col], b.vals[col]; !math.IsNaN(av) && !math.IsNaN(bv) {
			c = cmp.Compare(av, bv)
		} else {
			c = strings.Compare(a.cells[col], b.cells[col])
		}
		if desc {
			c = -c
		}
		return c
	})
	return out
}

// Fixed lines around the table: two header lines, the tabs, the column
// titles and the footer.
const chromeLines = 5

// detailLines is the height of the detail pane.
const detailLines = 5

func (m *Model) bodyRows() int {
	n := m.height - chromeLines
	if m.detail {
		n -= detailLines
	}
	return max(n, 0)
}

// View renders the screen: exactly height lines, none wider than width.
func (m *Model) View() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	lines := []string{m.header1(), m.header2(), m.tabs()}
	switch {
	case m.help:
		lines = append(lines, m.helpLines()...)
	case m.snap == nil:
		what := "connecting"
		if m.bootstrap != "" {
			what += " to " + m.bootstrap
		}
		lines = append(lines, "", "  "+what+"...")
	default:
		lines = append(lines, m.table()...)
	}
	body := h - 1
	if len(lines) > body {
		lines = lines[:body]
	}
	for len(lines) < body {
		lines = append(lines, "")
	}
	lines = append(lines, m.footer())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "")
	}
	return strings.Join(lines[:h], "\n")
}

func (m *Model) header1() string {
	s := m.snap
	if s == nil {
		return m.st.title.Render("qk top")
	}
	ctrl := "none"
	if s.Controller >= 0 {
		ctrl = strconv.Itoa(int(s.Controller))
	}
	up := s.BrokersUp()
	brokers := fmt.Sprintf("brokers %d/%d up", up, len(s.Brokers))
	if up < len(s.Brokers) {
		brokers = m.st.bad.Render(brokers)
	}
	state := "every " + m.interval.String()
	if m.paused {
		state = "PAUSED"
	}
	return m.st.title.Render("qk top") + "  cluster " + dash(s.ClusterID) + "  controller " + ctrl + "  " + brokers + "  " + state
}

func (m *Model) header2() string {
	s := m.snap
	if s == nil {
		return ""
	}
	r := s.Rates
	msgs := func(v *float64) string { return strings.TrimSuffix(countRate(v), "/s") + " msg/s" }
	line := "in " + msgs(r.MessagesIn) + " " + bytesRate(r.BytesIn) + "  out " + msgs(r.MessagesOut) + " " + bytesRate(r.BytesOut)
	src := map[string]string{"metrics": "via /metrics", "high_watermark": "via HW", "": "rates next round"}[s.RateSource]
	return line + "  " + src + "  " + s.Time.UTC().Format("15:04:05")
}

func (m *Model) tabs() string {
	var b strings.Builder
	for i, n := range viewNames {
		label := strconv.Itoa(i+1) + " " + n
		if viewID(i) == m.view {
			// Brackets mark the current view without colour.
			b.WriteString(m.st.tabOn.Render("[" + label + "]"))
		} else {
			b.WriteString(m.st.tabOff.Render(" " + label + " "))
		}
		b.WriteByte(' ')
	}
	b.WriteString(" ? help")
	return b.String()
}

// table lays out the columns to fit the width: a flex column shrinks to
// its title first, then the gaps narrow from two spaces to one; a line
// still too wide is cut at the edge.
func (m *Model) table() []string {
	cols := columnsOf(m.view)
	rows := m.rows()
	widths := make([]int, len(cols))
	titles := make([]string, len(cols))
	for i, c := range cols {
		titles[i] = c.title
		if i == m.sortCol[m.view] {
			// ^ or v after the title marks the sort column and order.
			titles[i] += map[bool]string{false: "^", true: "v"}[m.sortDesc[m.view]]
		}
		widths[i] = ansi.StringWidth(titles[i])
	}
	for _, r := range rows {
		for i, c := range r.cells {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	gap := 2
	hidden := make([]bool, len(cols))
	// One column on the left holds the selection marker.
	total := func() int {
		t := 1 - gap
		for i, w := range widths {
			if !hidden[i] {
				t += gap + w
			}
		}
		return t
	}
	// An optional column goes first when even the narrowest layout is
	// too wide (LSO at 80 columns: the per-replica LEO matters more, and
	// the detail pane shows the LSO).
	narrowest := func() int {
		t := 0
		for i, w := range widths {
			if hidden[i] {
				continue
			}
			if cols[i].flex {
				w = min(w, max(ansi.StringWidth(titles[i]), 6))
			}
			t += 1 + w
		}
		return t
	}
	for i := range cols {
		if cols[i].optional && narrowest() > m.width {
			hidden[i] = true
		}
	}
	// The last flex column gives up width first: names on the left are
	// what a row is read by.
	for i := len(cols) - 1; i >= 0; i-- {
		if over := total() - m.width; over > 0 && cols[i].flex {
			widths[i] = max(widths[i]-over, ansi.StringWidth(titles[i]), 6)
		}
	}
	if total() > m.width {
		gap = 1
	}
	line := func(cells []string) string {
		var b strings.Builder
		first := true
		for i, c := range cells {
			if hidden[i] {
				continue
			}
			if !first {
				b.WriteString(strings.Repeat(" ", gap))
			}
			first = false
			wdt := widths[i]
			c = ansi.Truncate(c, wdt, "…")
			pad := strings.Repeat(" ", max(wdt-ansi.StringWidth(c), 0))
			if cols[i].right {
				b.WriteString(pad + c)
			} else if i == len(cells)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		return b.String()
	}
	out := []string{" " + m.st.head.Render(line(titles))}
	n := m.bodyRows()
	cur := &m.cursor[m.view]
	*cur = min(max(*cur, 0), max(len(rows)-1, 0))
	top := &m.top[m.view]
	if *cur < *top {
		*top = *cur
	}
	if n > 0 && *cur >= *top+n {
		*top = *cur - n + 1
	}
	*top = min(*top, max(len(rows)-n, 0))
	if len(rows) == 0 {
		msg := "  (none)"
		if m.filter.Value() != "" {
			msg = "  (no rows match /" + m.filter.Value() + ")"
		}
		out = append(out, msg)
	}
	for i := *top; i < len(rows) && i < *top+n; i++ {
		r := rows[i]
		l := line(r.cells)
		switch {
		case i == *cur:
			// The selected row is marked with '>' as well as reverse video.
			l = m.st.sel.Render(ansi.Truncate(l, m.width-1, ""))
			l = ">" + l
		case r.mark == markBad:
			l = " " + m.st.bad.Render(l)
		case r.mark == markWarn:
			l = " " + m.st.warn.Render(l)
		case r.mark == markChanged:
			l = " " + m.st.changed.Render(l)
		default:
			l = " " + l
		}
		out = append(out, l)
	}
	if m.detail {
		for len(out) < n+1 {
			out = append(out, "")
		}
		var sel *row
		if *cur < len(rows) {
			sel = &rows[*cur]
		}
		out = append(out, m.detailPane(sel)...)
	}
	return out
}

// detailPane shows the selected row's history as sparklines.
func (m *Model) detailPane(r *row) []string {
	rule := func(title string) string {
		t := "── " + title + " "
		return m.st.dim.Render(t + strings.Repeat("─", max(m.width-ansi.StringWidth(t), 0)))
	}
	if r == nil {
		return []string{rule("detail"), "  nothing selected"}
	}
	h := m.hist[r.key]
	if h == nil {
		h = &history{}
	}
	sw := max(m.width-24, 8)
	spark := func(label string, v []float64, format func(float64) string) string {
		last := "-"
		if len(v) > 0 && v[len(v)-1] >= 0 {
			last = format(v[len(v)-1])
		}
		return fmt.Sprintf("  %-4s %-*s %s", label, sw, sparkline(v, sw), last)
	}
	intf := func(f float64) string { return strconv.FormatInt(int64(f), 10) }
	switch m.view {
	case viewPartitions:
		var p *Partition
		for i := range m.snap.Partitions {
			q := &m.snap.Partitions[i]
			if partKey(q.Topic, q.Partition) == r.key {
				p = q
			}
		}
		info := ""
		if p != nil {
			info = fmt.Sprintf("  leader %s epoch %d  replicas %s  isr %s  LEO %s", leaderText(p.Leader), p.LeaderEpoch, ids(p.Replicas), ids(p.ISR), perReplica(p.LogEndOffsets))
		}
		title := r.cells[0] + "/" + r.cells[1]
		if p != nil {
			title += txnSummary(p)
		}
		return []string{rule(title), spark("HW", h.a, intf), spark("LEO", h.b, intf), spark("LAG", h.c, intf), info}
	case viewBrokers:
		return []string{rule("broker " + r.cells[0]), spark("IN", h.a, rateF(bytesRate)), spark("OUT", h.b, rateF(bytesRate)), spark("LED", h.c, intf), ""}
	case viewTopics:
		return []string{rule("topic " + r.cells[0]), spark("MSG", h.a, rateF(countRate)), spark("IN", h.b, rateF(bytesRate)), spark("OUT", h.c, rateF(bytesRate)), ""}
	default:
		return []string{rule("group " + r.cells[0]), spark("LAG", h.a, intf), spark("MEMB", h.b, intf), "", ""}
	}
}

// txnSummary is the detail pane's word on transactions: the LSO when
// known, and the oldest open transaction, "  LSO 800  txn pid 4000 @800
// open 17m0s (2 open)".
func txnSummary(p *Partition) string {
	if p.LastStableOffset == nil {
		return ""
	}
	out := "  LSO " + strconv.FormatInt(*p.LastStableOffset, 10)
	if len(p.OpenTransactions) == 0 {
		return out
	}
	oldest := p.OpenTransactions[0]
	for _, t := range p.OpenTransactions[1:] {
		if t.AgeMs > oldest.AgeMs {
			oldest = t
		}
	}
	out += fmt.Sprintf("  txn pid %d @%d open %s", oldest.ProducerID, oldest.FirstOffset, txnAge(oldest.AgeMs))
	if n := len(p.OpenTransactions); n > 1 {
		out += fmt.Sprintf(" (%d open)", n)
	}
	return out
}

func rateF(f func(*float64) string) func(float64) string {
	return func(v float64) string { return f(&v) }
}

// perReplica is "0=1200 1=1180 2=unavailable".
func perReplica(v []ReplicaLEO) string {
	var parts []string
	for _, r := range v {
		s := "unavailable"
		if r.LogEndOffset != nil {
			s = strconv.FormatInt(*r.LogEndOffset, 10)
		}
		parts = append(parts, strconv.Itoa(int(r.Broker))+"="+s)
	}
	return strings.Join(parts, " ")
}

func (m *Model) helpLines() []string {
	out := []string{"", "  keys"}
	for _, b := range []struct{ k, h string }{
		{"1 2 3 4", "brokers, partitions, topics, groups"},
		{"tab / shift+tab", "next / previous view"},
		{"up down j k", "move; pgup pgdown home end"},
		{"/", keys.filter.Help().Desc},
		{"s / r", "sort by the next column / reverse (^ v in the titles)"},
		{"enter", "detail pane: sparklines of HW, LEO and lag"},
		{"p", keys.pause.Help().Desc},
		{"+ / -", "refresh faster / slower (now every " + m.interval.String() + ")"},
		{"q ctrl+c", "quit"},
	} {
		out = append(out, fmt.Sprintf("  %-16s %s", b.k, b.h))
	}
	return append(out, "",
		"  ISR ids ending in * changed in the last "+isrHighlight.String()+"; STATUS says",
		"  UNDER-REPLICATED, OFFLINE, or TXN-STUCK (a transaction open too long);",
		"  LSO is the last stable offset (on wide screens and in the detail pane);",
		"  LEO lists each replica's, ? where unknown,",
		"  unavailable when no broker is qk (the Kafka protocol has no follower LEO).",
		"", "  any key closes this help")
}

func (m *Model) footer() string {
	if m.filtering {
		return m.filter.View()
	}
	var parts []string
	if f := m.filter.Value(); f != "" {
		parts = append(parts, "filter /"+f)
	}
	if m.err != nil {
		age := ""
		if m.snap != nil {
			age = " (showing " + m.snap.Time.UTC().Format("15:04:05") + ")"
		}
		parts = append(parts, m.st.bad.Render("! "+oneLine(m.err.Error())+age))
	} else if m.snap != nil && len(m.snap.Errors) > 0 {
		e := "! " + m.snap.Errors[0]
		if n := len(m.snap.Errors); n > 1 {
			e += fmt.Sprintf(" (+%d more)", n-1)
		}
		parts = append(parts, m.st.warn.Render(e))
	} else {
		parts = append(parts, m.st.dim.Render("/ filter  s sort  enter detail  p pause  +/- rate  q quit"))
	}
	return strings.Join(parts, "  ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// sparkline draws the last width values, scaled between their min and
// max; unknown values (negative) are blanks.
func sparkline(v []float64, width int) string {
	if len(v) > width {
		v = v[len(v)-width:]
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if x >= 0 {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	var b strings.Builder
	for _, x := range v {
		switch {
		case x < 0:
			b.WriteByte(' ')
		case hi == lo:
			b.WriteRune(sparkRunes[0])
		default:
			b.WriteRune(sparkRunes[int((x-lo)/(hi-lo)*float64(len(sparkRunes)-1)+0.5)])
		}
	}
	return b.String()
}

// bytesCell and countCell are rates in a column titled per second.
func bytesCell(v *float64) string { return strings.TrimSuffix(bytesRate(v), "/s") }
func countCell(v *float64) string { return strings.TrimSuffix(countRate(v), "/s") }

// countRate is "1.2k/s"; "-" when unknown.
func countRate(v *float64) string {
	if v == nil {
		return "-"
	}
	return human(*v, 1000, "") + "/s"
}

// bytesRate is "3.4MB/s"; "-" when unknown.
func bytesRate(v *float64) string {
	if v == nil {
		return "-"
	}
	return human(*v, 1024, "B") + "/s"
}

func size(v *int64) string {
	if v == nil {
		return "-"
	}
	return human(float64(*v), 1024, "B")
}

func human(v, base float64, unit string) string {
	prefixes := []string{"", "k", "M", "G", "T", "P"}
	if base == 1024 {
		prefixes = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi"}
	}
	i := 0
	for v >= base && i < len(prefixes)-1 {
		v /= base
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + unit
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + prefixes[i] + unit
}
