// Package runnable finds the shell blocks of the documentation that
// e2e's TestDocsRunnable runs against a real broker.
//
// A fenced sh block immediately preceded by the line
//
//	<!-- runnable -->
//
// is runnable. The marker is an HTML comment, so rendered Markdown does
// not show it. A marker not directly followed by a ```sh fence, and a
// block without its closing fence, are errors: a typo must not silently
// turn a block into one that never runs.
package runnable

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Marker is the line that makes the following sh block runnable.
const Marker = "<!-- runnable -->"

// Block is one runnable block.
type Block struct {
	File string // as given to Parse or found by Find
	Line int    // 1-based line of the opening fence
	Code string // the block's lines, fence indentation removed, each ending in "\n"
}

// String is file:line, as an editor jumps to it.
func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Parse returns the runnable blocks of one Markdown document; file names
// it in the blocks and errors.
func Parse(file string, data []byte) ([]Block, error) {
	var (
		blocks []Block
		lines  []string
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != Marker {
			continue
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("%s:%d: %s at the end of the file, want a ```sh block after it", file, i+1, Marker)
		}
		fence := lines[i+1]
		body := strings.TrimLeft(fence, " ")
		indent := len(fence) - len(body)
		ticks := len(body) - len(strings.TrimLeft(body, "`"))
		if ticks < 3 || strings.TrimSpace(body[ticks:]) != "sh" {
			return nil, fmt.Errorf("%s:%d: %s must be followed by a ```sh fence, not %q", file, i+2, Marker, fence)
		}
		b := Block{File: file, Line: i + 2}
		var code strings.Builder
		closed := false
		for j := i + 2; j < len(lines); j++ {
			l := lines[j]
			if t := strings.TrimSpace(l); len(t) >= ticks && strings.Trim(t, "`") == "" {
				closed, i = true, j
				break
			}
			// Strip up to the fence's indentation, as CommonMark does.
			n := len(l) - len(strings.TrimLeft(l, " "))
			code.WriteString(l[min(n, indent):])
			code.WriteByte('\n')
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: runnable block has no closing fence", file, b.Line)
		}
		b.Code = code.String()
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// Find returns the runnable blocks of root/README.md and root/docs/*.md,
// in that order, with File relative to root.
func Find(root string) ([]Block, error) {
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	var out []Block
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		bs, err := Parse(f, data)
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	return out, nil
}
