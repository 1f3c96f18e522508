package benchproc

import (
	"fmt"
	"strings"
)

// RunsText says how a figure was taken: "median of 5 runs after 1
// warm-up run", "1 run, no warm-up".
func RunsText(runs, warmup int) string {
	s := "1 run"
	if runs > 1 {
		s = fmt.Sprintf("median of %d runs", runs)
	}
	switch warmup {
	case 0:
		return s + ", no warm-up"
	case 1:
		return s + " after 1 warm-up run"
	default:
		return fmt.Sprintf("%s after %d warm-up runs", s, warmup)
	}
}

// TableRow writes one Markdown table row of cells.
func TableRow(sb *strings.Builder, cells []string) {
	sb.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}
