// Command qk is a Kafka-compatible broker and the operator toolkit around it.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	err := newRootCmd(os.Stdout, os.Stderr).Execute()
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "qk:", ee.msg)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "qk:", err)
	os.Exit(1)
}

// exitError carries a specific exit status out of a command. Commands return
// errors (RunE); only main turns them into an exit status.
type exitError struct {
	code int
	msg  string // printed to stderr when non-empty
}

func (e *exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit status %d", e.code)
}
