package admin

import (
	"cmp"
	"fmt"
)

// Result is one named resource's outcome of create, delete or alter: the
// element of TopicResults and GroupResults, which differ only in how they
// print.
type Result struct {
	Name   string `json:"name" yaml:"name"`
	Status string `json:"status" yaml:"status"`
}

// collectResults gives one Result per name, in the order asked, from kadm's
// per-name answers; status turns one answer into its status or its error.
// A name without an answer or with an error gets no Result but an error
// "<op> <name>: …", and the first of those is returned with the results of
// the others, so one bad topic does not hide what happened to the rest.
func collectResults[R any](op string, names []string, resp map[string]R, status func(R) (string, error)) ([]Result, error) {
	var out []Result
	var first error
	for _, name := range names {
		r, ok := resp[name]
		if !ok {
			first = cmp.Or(first, fmt.Errorf("%s %s: no answer", op, name))
			continue
		}
		s, err := status(r)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("%s %s: %w", op, name, err))
			continue
		}
		out = append(out, Result{Name: name, Status: s})
	}
	return out, first
}
