package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// tmuxSession is a zkpresto command running in a terminal of its own: a
// detached tmux session on a private server.
type tmuxSession struct {
	t      *testing.T
	socket string
}

// startInTmux builds zkpresto and runs it with args in a new tmux session,
// in a 120x40 terminal. Without tmux the test is skipped, or fails under
// CI, which must run it (make deps installs tmux).
func startInTmux(t *testing.T, env []string, args ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required in CI (scripts/install-tmux.sh): %v", err)
		}
		t.Skipf("tmux not found: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "zkpresto")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building zkpresto: %v\n%s", err, out)
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("zkpresto-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	command := bin
	for _, a := range args {
		command += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cmd := exec.Command("tmux", "-L", s.socket, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "cli", command)
	cmd.Env = append(os.Environ(), append([]string{"TERM=xterm", "HOME=" + dir}, env...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

// send types keys (tmux key names such as Enter or C-c, or text).
func (s *tmuxSession) send(keys ...string) {
	s.t.Helper()
	args := []string{"send-keys", "-t", "cli"}
	for _, k := range keys {
		// tmux reads an argument ending in ";" as the end of a command.
		if strings.HasSuffix(k, ";") {
			k = strings.TrimSuffix(k, ";") + `\;`
		}
		args = append(args, k)
	}
	if out, err := s.tmux(args...); err != nil {
		s.t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

// screen is what the terminal shows, with its scroll-back.
func (s *tmuxSession) screen() string {
	out, _ := s.tmux("capture-pane", "-p", "-S", "-200", "-t", "cli")
	return out
}

// waitScreen waits until the screen holds want.
func (s *tmuxSession) waitScreen(what, want string) {
	s.t.Helper()
	deadline := time.Now().Add(waitFor)
	for !strings.Contains(s.screen(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: the screen never showed %q:\n%s", what, want, s.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *tmuxSession) alive() bool {
	_, err := s.tmux("has-session", "-t", "cli")
	return err == nil
}

func TestShellInATerminal(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	history := filepath.Join(t.TempDir(), "history")
	s := startInTmux(t, []string{"ZKPRESTO_HISTORY=" + history}, "query", "--server", c.URL(), "--catalog", "hive", "--schema", "web",
		"--disable-auto-suggestion") // no background statements: the test counts them
	s.waitScreen("the prompt", "presto:web>")

	// A statement over two lines, with the continuation prompt.
	s.send("SELECT *", "Enter")
	s.waitScreen("the continuation prompt", "\n         ->")
	s.send("FROM rows(3);", "Enter")
	s.waitScreen("the result", "(3 rows)")
	if screen := s.screen(); !strings.Contains(screen, " n\n---\n 1\n 2\n 3\n(3 rows)") {
		t.Errorf("the result is not ALIGNED:\n%s", screen)
	}

	// A long statement shows its progress; Ctrl-C cancels it and leaves
	// the shell running.
	s.send("SELECT * FROM sleep(5000);", "Enter")
	eventually(t, "the long statement", func() bool { return c.Running() == 1 })
	s.waitScreen("the progress", ", RUNNING")
	s.send("C-c")
	s.waitScreen("the abort", "aborted by user")
	reqs := c.Requests()
	id := reqs[len(reqs)-1].QueryID
	eventually(t, "the coordinator's DELETE", func() bool { return cancelled(c, id) })
	if c.Running() != 0 {
		t.Errorf("%d statements still running after Ctrl-C", c.Running())
	}
	if !s.alive() {
		t.Fatal("Ctrl-C ended the shell")
	}
	s.send("SELECT * FROM rows(1);", "Enter")
	s.waitScreen("a statement after the abort", "(1 row)")

	s.send("quit", "Enter")
	eventually(t, "quit to end the shell", func() bool { return !s.alive() })
	b, err := os.ReadFile(history)
	if err != nil || !strings.Contains(string(b), "SELECT * FROM rows(3);") {
		t.Errorf("history %q (%v)", b, err)
	}
}

func TestShellPromptFollowsUse(t *testing.T) {
	cs := startCoordinators(t, 2)
	dsn := "presto://" + cs[0].Addr() + "," + cs[1].Addr() + "/hive/web;zooKeeperStrategy=ROUND_ROBIN?user=alice"
	s := startInTmux(t, []string{"ZKPRESTO_HISTORY=" + filepath.Join(t.TempDir(), "history")}, "query", "--dsn", dsn,
		"--disable-auto-suggestion") // no background statements: the test reads the latest one
	s.waitScreen("the prompt", "presto:web>")
	s.send("USE tpch.tiny;", "Enter")
	s.waitScreen("the new schema in the prompt", "\npresto:tiny>")
	if screen := s.screen(); !strings.Contains(screen, "\nUSE\n") {
		t.Errorf("USE did not print USE:\n%s", screen)
	}
	s.send("SET SESSION query_max_run_time = '1h';", "Enter")
	s.waitScreen("SET SESSION's status", "\nSET SESSION\n")
	s.send("SELECT * FROM rows(2);", "Enter")
	s.waitScreen("the result", "(2 rows)")
	r := latest(cs)
	if r.Catalog != "tpch" || r.Schema != "tiny" || r.SessionProperties["query_max_run_time"] != "1h" {
		t.Errorf("the statement after USE reached the coordinator as %+v", r)
	}
	s.send("quit", "Enter")
	eventually(t, "quit to end the shell", func() bool { return !s.alive() })
}

// visible is the terminal's visible screen, without trailing blank lines.
func (s *tmuxSession) visible() string {
	out, _ := s.tmux("capture-pane", "-p", "-t", "cli")
	return strings.TrimRight(out, "\n ")
}

// waitFor waits until the screen (with its scroll-back) satisfies ok.
func (s *tmuxSession) waitFor(what string, ok func(visible string) bool) {
	s.t.Helper()
	deadline := time.Now().Add(waitFor)
	for !ok(s.visible()) {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: never on the screen:\n%s", what, s.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A result longer than the terminal goes to less -FXRSn on the terminal,
// as in trino-cli: its first page, less's prompt, and q back to the shell.
func TestShellPagesResultsWithLess(t *testing.T) {
	if _, err := exec.LookPath("less"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("less is required in CI: %v", err)
		}
		t.Skipf("less not found: %v", err)
	}
	c := startCoordinators(t, 1)[0]
	for _, name := range []string{"PRESTO_PAGER", "TRINO_PAGER"} {
		t.Setenv(name, "")
		os.Unsetenv(name) // no pager chosen: the default, less
	}
	s := startInTmux(t, []string{"ZKPRESTO_HISTORY=" + filepath.Join(t.TempDir(), "history"), "LESS=", "LESSOPEN="},
		"query", "--server", c.URL(), "--catalog", "hive", "--schema", "web")
	s.waitScreen("the prompt", "presto:web>")

	// 100 rows in a 40-line terminal: the first page and less's prompt.
	s.send("SELECT * FROM rows(100);", "Enter")
	s.waitFor("less's prompt", func(v string) bool { return strings.HasSuffix(v, "\n:") })
	v := s.visible()
	var cells []string
	for _, line := range strings.Split(v, "\n") {
		cells = append(cells, strings.TrimSpace(line))
	}
	if !slices.Contains(cells, "1") || slices.Contains(cells, "100") || strings.Contains(v, "(100 rows)") {
		t.Errorf("not the first page of the result:\n%s", v)
	}
	s.send("q")
	s.waitFor("the prompt after q", func(v string) bool { return strings.HasSuffix(v, "presto:web>") })

	// A result that fits the screen is printed, and the shell goes on.
	s.send("SELECT * FROM rows(2);", "Enter")
	s.waitScreen("a short result", "(2 rows)")
	s.waitFor("the prompt", func(v string) bool { return strings.HasSuffix(v, "presto:web>") })
	s.send("quit", "Enter")
	eventually(t, "quit to end the shell", func() bool { return !s.alive() })
}

// Tab completes keywords and the names the coordinator lists, and Ctrl-R
// searches the history. The simulator answers SHOW CATALOGS and
// information_schema.tables, as any statement without markers, with one
// row whose first columns are its name and the user: here catalog (and
// schema) "tpch" and table "orders".
func TestShellCompletesAndSearchesHistory(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Name: "tpch"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := startInTmux(t, []string{"ZKPRESTO_HISTORY=" + filepath.Join(t.TempDir(), "history")},
		"query", "--server", c.URL(), "--catalog", "hive", "--schema", "web", "--user", "orders")
	s.waitScreen("the prompt", "presto:web>")

	// A keyword, in the case it is typed in.
	s.send("sel", "Tab")
	s.waitFor("the keyword completed", func(v string) bool { return strings.HasSuffix(v, "presto:web> select") })
	// A catalog, once the names have come: Tab again until they have.
	s.send(" * from tp")
	eventually(t, "the catalog completed", func() bool {
		s.send("Tab")
		return strings.HasSuffix(s.visible(), "presto:web> select * from tpch")
	})
	// A table of the schema tpch.
	s.send(".or", "Tab")
	s.waitFor("the table completed", func(v string) bool { return strings.HasSuffix(v, "select * from tpch.orders") })
	s.send(";", "Enter")
	ran := func(n int) func() bool {
		return func() bool {
			count := 0
			for _, r := range c.Requests() {
				if r.SQL == "select * from tpch.orders" {
					count++
				}
			}
			return count == n
		}
	}
	eventually(t, "the completed statement", ran(1))

	// Ctrl-R finds it in the history; Enter takes it and runs it again.
	s.waitScreen("the result", "(1 row)")
	s.send("C-r", "tpch.ord")
	s.waitScreen("the history search", "bck-i-search: tpch.ord")
	s.waitFor("the statement found", func(v string) bool { return strings.Contains(v, "select * from tpch.orders;") })
	s.send("Enter")
	eventually(t, "the statement found by Ctrl-R", ran(2))
	s.send("quit", "Enter")
	eventually(t, "quit to end the shell", func() bool { return !s.alive() })

	// --disable-auto-suggestion: Tab completes nothing.
	s = startInTmux(t, []string{"ZKPRESTO_HISTORY=" + filepath.Join(t.TempDir(), "history")},
		"query", "--server", c.URL(), "--disable-auto-suggestion")
	s.waitScreen("the prompt", "presto>")
	s.send("SELECT * FROM rows(1) WHERE sel", "Tab", " ;", "Enter")
	s.waitScreen("the result", "(1 row)")
	if got := lastRequestOf(t, c).SQL; strings.Contains(got, "select") || strings.Contains(got, "SELECT\t") {
		t.Errorf("with --disable-auto-suggestion the statement was %q", got)
	}
}
