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
		if !ee.reported {
			fmt.Fprintln(os.Stderr, "qk:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "qk:", err)
	os.Exit(1)
}

// exitError carries a specific exit status out of a command. Commands return
// errors (RunE); only main turns them into an exit status.
type exitError struct {
	code     int
	err      error
	reported bool // the command already printed err; main stays quiet
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
