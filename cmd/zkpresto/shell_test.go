package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// polled reports whether the client of c's latest statement has asked for
// its next page: it then read the first answer, and knows the query's id.
// A Ctrl-C sent before that cancels a statement whose id the client does
// not know yet.
func polled(c *coordinator.Coordinator) bool {
	reqs := c.Requests()
	if len(reqs) == 0 {
		return false
	}
	id := reqs[len(reqs)-1].QueryID
	for _, call := range c.Calls() {
		if call.Method == http.MethodGet && call.QueryID == id {
			return true
		}
	}
	return false
}

// cancelled reports whether the coordinator got a DELETE for query id.
func cancelled(c *coordinator.Coordinator, id string) bool {
	for _, call := range c.Calls() {
		if call.Method == http.MethodDelete && call.QueryID == id {
			return true
		}
	}
	return false
}

func TestShellRunsStatementsAsTheyEndAndSurvivesInterrupts(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	history := t.TempDir() + "/history"
	t.Setenv("ZKPRESTO_HISTORY", history)
	stdin, typing := io.Pipe()
	defer typing.Close()
	interrupts := make(chan os.Signal, 1)
	o := queryOptions{server: c.URL(), logLevel: "warn", shell: true, interrupts: interrupts}
	out, errOut := &testutil.Buffer{}, &testutil.Buffer{}
	done := make(chan error, 1)
	go func() { done <- runQuery(context.Background(), stdin, out, errOut, o, nil) }()
	typeLine := func(line string) {
		t.Helper()
		if _, err := io.WriteString(typing, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	// A statement over several lines runs once its ";" is typed, printed
	// ALIGNED.
	typeLine("SELECT *")
	typeLine("FROM rows(2)")
	time.Sleep(100 * time.Millisecond)
	if c.Statements() != 0 {
		t.Fatal("a statement ran before its semicolon")
	}
	typeLine("; -- done")
	eventually(t, "the result", func() bool { return strings.Contains(out.String(), " n \n---\n 1 \n 2 \n(2 rows)\n") })

	// An error is reported and the shell goes on.
	typeLine("SELECT fail('no such table');")
	eventually(t, "the error", func() bool { return strings.Contains(errOut.String(), "no such table") })

	// An interrupt cancels the running statement, on the coordinator too.
	typeLine("SELECT * FROM sleep(5000);")
	eventually(t, "the long statement", func() bool { return c.Running() == 1 && polled(c) })
	interrupts <- os.Interrupt
	eventually(t, "the abort", func() bool { return strings.Contains(errOut.String(), "aborted by user") })
	reqs := c.Requests()
	id := reqs[len(reqs)-1].QueryID
	if !strings.Contains(errOut.String(), "Query "+id+" aborted by user") {
		t.Errorf("stderr %q does not name the query %s", errOut.String(), id)
	}
	eventually(t, "the DELETE", func() bool { return cancelled(c, id) })

	typeLine("SELECT * FROM rows(1); SELECT * FROM rows(3);")
	eventually(t, "the next results", func() bool {
		return strings.Contains(out.String(), "(1 row)\n") && strings.Contains(out.String(), "(3 rows)\n")
	})
	typeLine("quit")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatal("quit did not end the shell")
	}
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SELECT * FROM rows(2);\n", "SELECT * FROM sleep(5000);\n", "SELECT * FROM rows(3);\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("history %q lacks %q", b, want)
		}
	}
}

func TestShellEndsAtEOFAndKnowsItsPrompts(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	t.Setenv("ZKPRESTO_HISTORY", t.TempDir()+"/history")
	o := queryOptions{server: c.URL(), logLevel: "warn", shell: true, interrupts: make(chan os.Signal)}
	out, errOut := &testutil.Buffer{}, &testutil.Buffer{}
	if err := runQuery(context.Background(), strings.NewReader("SELECT * FROM rows(1);\nSELECT 'unfinished'"), out, errOut, o, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(1 row)") || c.Statements() != 1 {
		t.Errorf("printed %q after %d statements", out.String(), c.Statements())
	}
	cfg, err := queryOptions{server: "h:1", catalog: "hive", schema: "web"}.config()
	if err != nil {
		t.Fatal(err)
	}
	if first, next := shellPrompts(cfg.Trino, cfg.Schema); first != "presto:web> " || next != "         -> " {
		t.Errorf("prompts %q, %q", first, next)
	}
}

// The pager is chosen as trino-cli chooses it: --pager, else
// $PRESTO_PAGER, else $TRINO_PAGER, one of them blank for none, else
// less -FXRSn on a terminal.
func TestShellPagerChoice(t *testing.T) {
	if _, err := exec.LookPath("less"); err != nil {
		t.Skipf("less not found: %v", err)
	}
	terminal := func(io.Writer) bool { return true }
	notTerminal := func(io.Writer) bool { return false }
	for _, tc := range []struct {
		name       string
		env        map[string]string // unset when absent
		flag       *string
		isTerminal func(io.Writer) bool
		want       []string
	}{
		{"terminal", nil, nil, terminal, []string{"less", "-FXRSn"}},
		{"not a terminal", nil, nil, notTerminal, nil},
		{"presto", map[string]string{"PRESTO_PAGER": "more", "TRINO_PAGER": "cat"}, nil, terminal, []string{"sh", "-c", "more"}},
		{"trino", map[string]string{"TRINO_PAGER": "cat"}, nil, notTerminal, []string{"sh", "-c", "cat"}},
		{"blank presto", map[string]string{"PRESTO_PAGER": "", "TRINO_PAGER": "cat"}, nil, terminal, nil},
		{"blank trino", map[string]string{"TRINO_PAGER": " "}, nil, terminal, nil},
		{"flag", map[string]string{"PRESTO_PAGER": "more"}, ptr("less -S"), terminal, []string{"sh", "-c", "less -S"}},
		{"blank flag", map[string]string{"PRESTO_PAGER": "more"}, ptr(""), terminal, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"PRESTO_PAGER", "TRINO_PAGER"} {
				t.Setenv(name, "")
				if v, ok := tc.env[name]; ok {
					os.Setenv(name, v)
				} else {
					os.Unsetenv(name)
				}
			}
			o := queryOptions{isTerminal: tc.isTerminal}
			if tc.flag != nil {
				o.pager, o.pagerSet = *tc.flag, true
			}
			if got := pagerCommand(o, io.Discard); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// A pager quit before the end of the result (q in less) is no failure:
// the shell goes on to the next statement.
func TestShellPagerQuitEarly(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	o := queryOptions{server: c.URL(), logLevel: "warn", shell: true, interrupts: make(chan os.Signal, 1),
		historyFile: filepath.Join(t.TempDir(), "history"), pager: "head -n 3", pagerSet: true}
	out, errOut := &testutil.Buffer{}, &testutil.Buffer{}
	// 2 MB of results, more than a pipe holds: head quits long before.
	in := "SELECT * FROM bigrows(20, 100000);\nSELECT * FROM rows(2);\n"
	if err := runQuery(context.Background(), strings.NewReader(in), out, errOut, o, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut.String(), "failed") || strings.Contains(errOut.String(), "pipe") {
		t.Errorf("quitting the pager reported a failure:\n%s", errOut.String())
	}
	if c.Statements() != 2 || !strings.Contains(out.String(), " n \n---\n 1 ") {
		t.Errorf("%d statements, stdout %.300q: the shell did not go on", c.Statements(), out.String())
	}
}
