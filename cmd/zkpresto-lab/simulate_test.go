package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSimulateQuick(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "p99.svg")
	text, errOut, err := run([]string{"simulate", "--quick", "--strategies", "random,ROUND_ROBIN,weighted", "--svg", svg}, "")
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, errOut)
	}
	if !strings.HasPrefix(text, "zkpresto-lab simulate --requests 20000 --seed 1 --strategies random,poll,weighted\n") {
		t.Errorf("output does not start with the command that reproduces it:\n%s", text)
	}
	for _, scenario := range []string{"1:1:4 70%", "1:1:4 90%", "1:1:4 slow 70%", "1:1:4 slow 90%", "1:1:1 90%"} {
		if !strings.Contains(text, "\n"+scenario+": ") {
			t.Errorf("output lacks scenario %q:\n%s", scenario, text)
		}
		if !strings.Contains(errOut, "simulated "+scenario+" ") {
			t.Errorf("no progress line for %q:\n%s", scenario, errOut)
		}
	}
	// random is its own baseline: 100% in every scenario.
	if got := len(regexp.MustCompile(`(?m)^\s+random\s.*\s100%\s`).FindAllString(text, -1)); got != 5 {
		t.Errorf("%d random rows at 100%% of random, want 5:\n%s", got, text)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed: %v", err)
		}
	}
	if got := strings.Count(string(data), `class="bar"`); got != 15 {
		t.Errorf("%d bars, want 5 scenarios × 3 strategies", got)
	}
}

// --json prints one JSON object per case and line; --clients and
// --strategies narrow the suite.
func TestSimulateJSON(t *testing.T) {
	out, errOut, err := run([]string{"simulate", "--json", "--requests", "2000", "--clients", "10", "--strategies", "p2c,shared_p2c"}, "")
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// 2 capacities × 2 loads × (p2c + 4 ways to publish).
	if len(lines) != 20 {
		t.Fatalf("%d lines, want 20:\n%s", len(lines), out)
	}
	for _, line := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if row["clients"] != 10.0 || !strings.HasPrefix(line, `{"scenario":"base","capacities":`) {
			t.Errorf("row %s", line)
		}
	}
}

// --clients splits the table scenarios' arrivals.
func TestSimulateClients(t *testing.T) {
	out, _, err := run([]string{"simulate", "--requests", "2000", "--clients", "5", "--strategies", "shared_p2c"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "zkpresto-lab simulate --requests 2000 --seed 1 --clients 5 --strategies shared_p2c\n") {
		t.Errorf("output:\n%s", out)
	}
}

func TestSimulateMarkdown(t *testing.T) {
	out, _, err := run([]string{"simulate", "--requests", "2000", "--seed", "9", "--strategies", "poll", "--markdown"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, "| poll |"); got != 5 {
		t.Errorf("%d Markdown rows for poll, want 5:\n%s", got, out)
	}
}

func TestSimulateRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--requests", "0"}, "--requests must be positive"},
		{[]string{"simulate", "--quick", "--strategies", "random,bogus"}, `unknown strategy "bogus"`},
		{[]string{"simulate", "--clients", "-2"}, "--clients must be positive"},
		{[]string{"simulate", "--json", "--markdown"}, "does not go with"},
		{[]string{"simulate", "--json", "--clients", "7"}, "no case of the suite has 7 clients"},
	} {
		if _, _, err := run(tc.args, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
