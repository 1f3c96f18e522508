package main

import (
	"flag"
	"fmt"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/qk-project/qk/internal/fixtures"
)

// TestMain lets testscript run this test binary as the `qk` command, so the
// scripts exercise the real main (flag parsing, exit status, stderr).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"qk": main,
	})
}

// updateScripts rewrites the scripts' golden sections (cmp against an
// archive file) from what the commands print: `make golden`.
var updateScripts = flag.Bool("update", false, "rewrite golden files")

// TestScripts runs testdata/script/*.txtar end to end. $FIXTURES points at
// the Kafka-written files of testdata/fixtures.
func TestScripts(t *testing.T) { runScripts(t, false) }

// TestScriptsKfake runs the same scripts with `qkbroker` starting franz-go's
// kfake cluster instead of a qk broker, proving the CLI is not tied to qk.
// Scripts guard qk-only expectations (qk's config defaults, qk's error
// texts) with [!kfake].
func TestScriptsKfake(t *testing.T) { runScripts(t, true) }

func runScripts(t *testing.T, kfake bool) {
	fixtureDir := fixtures.Dir(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtureDir)
			return nil
		},
		Cmds: scriptCmds(t, kfake),
		Condition: func(cond string) (bool, error) {
			if cond == "kfake" {
				return kfake, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		// Goldens are written from qk only; kfake runs compare.
		UpdateScripts: *updateScripts && !kfake,
	})
}

// scriptCmds are the custom script commands (qkbroker, scrubids); the
// linux-only file that can start brokers fills them in. With kfake,
// qkbroker starts a kfake cluster instead of a qk broker.
var scriptCmds = func(*testing.T, bool) map[string]func(ts *testscript.TestScript, neg bool, args []string) { return nil }
