package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run runs a zkpresto-lab command line to the end with stdin and returns its
// stdout, stderr and error.
func run(args []string, stdin string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(stdin))
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestEveryLabCommandHasHelpWithExamples(t *testing.T) {
	for _, name := range []string{"demo", "dev", "simulate", "chaos", "spread"} {
		out, _, err := run([]string{name, "--help"}, "")
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "zkpresto-lab "+name) {
			t.Errorf("%s --help lacks examples:\n%s", name, out)
		}
	}
}
