package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"
)

// Formats are the values --format takes.
var Formats = []string{"text", "json", "yaml"}

// View is what a list or describe command prints: its fields are the
// json/yaml form, Text writes the aligned table.
type View interface {
	Text(w *tabwriter.Writer)
}

// RawText is a View whose text form is written as is, without
// alignment (kafka-acls.sh's tab-indented lines).
type RawText interface {
	RawText(w io.Writer)
}

// Print writes v to w in format (text, json or yaml).
func Print(w io.Writer, format string, v View) error {
	switch format {
	case "", "text":
		if r, ok := v.(RawText); ok {
			r.RawText(w)
			return nil
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		v.Text(tw)
		return tw.Flush()
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return err
		}
		return enc.Close()
	}
	return fmt.Errorf("unknown format %q (text, json or yaml)", format)
}

// row writes tab-separated cells and a newline.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}
