package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chzyer/readline"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// isTerminal reports whether r is a terminal: query then opens the shell.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// historyFile is where the shell keeps its history: $ZKPRESTO_HISTORY, or
// .zkpresto_history in the user's home; "" for none.
func historyFile() string {
	if p := os.Getenv("ZKPRESTO_HISTORY"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".zkpresto_history")
}

// shellPrompts are presto-cli's prompts: "presto:schema> " with the
// session's current schema (USE changes it), and for the lines that
// continue a statement "-> " aligned under it.
func shellPrompts(trino bool, schema string) (first, next string) {
	first = "presto"
	if trino {
		first = "trino"
	}
	if schema != "" {
		// As presto-cli's Console: a colon would read as the separator.
		first += ":" + strings.ReplaceAll(schema, ":", "")
	}
	first += "> "
	return first, strings.Repeat(" ", len(first)-3) + "-> "
}

// runShell is the interactive shell: it reads statements with line editing
// and history, runs each one as soon as its ";" is typed, and goes on after
// errors. quit or exit (or Ctrl-D) leaves; Ctrl-C at the prompt drops the
// statement being typed, and while a statement runs it cancels it.
func runShell(ctx context.Context, db *sql.DB, conn *heldConn, cfg *zkdriver.Config, write resultWriter, in io.Reader, out, errOut io.Writer, o queryOptions) error {
	first, next := shellPrompts(cfg.Trino, cfg.Schema)
	history := o.historyFile
	if history == "" {
		history = historyFile()
	}
	if pager := pagerCommand(o, out); pager != nil {
		// Each statement's results go through the pager, as trino-cli's.
		direct := write
		o.paging = new(atomic.Bool)
		write = func(w io.Writer, rows *sql.Rows) error {
			pw, wait, err := paged(pager, w, errOut)
			if err != nil {
				return err
			}
			o.paging.Store(true)
			defer o.paging.Store(false)
			err = direct(pw, rows)
			if errors.Is(err, errPagerQuit) {
				// The user has seen enough: the rest is not read
				// (closing the rows cancels the query).
				err = nil
			}
			if werr := wait(); err == nil {
				err = werr
			}
			return err
		}
	}
	rlcfg := &readline.Config{
		Prompt:                 first,
		HistoryFile:            history,
		DisableAutoSaveHistory: true, // a statement is saved whole, once complete
		HistorySearchFold:      true,
		InterruptPrompt:        "^C",
		EOFPrompt:              "",
		Stdout:                 out,
		Stderr:                 errOut,
	}
	if in != os.Stdin {
		// Tests drive the shell through a pipe.
		rc, ok := in.(io.ReadCloser)
		if !ok {
			rc = io.NopCloser(in)
		}
		rlcfg.Stdin = rc
		rlcfg.FuncIsTerminal = func() bool { return false }
	}
	var complete *completer
	if in == os.Stdin && !o.client.disableAutoSuggestion {
		// Tab completion, as trino-cli's, with names fetched in the
		// background on connections of their own.
		cctx, cancel := context.WithCancel(ctx)
		complete = newCompleter(cctx, db, cfg.Catalog, cfg.Schema)
		defer complete.wait()
		defer cancel()
		rlcfg.AutoComplete = complete
	}
	rl, err := readline.NewEx(rlcfg)
	if err != nil {
		return fmt.Errorf("starting the shell: %w", err)
	}
	defer rl.Close()

	var pending strings.Builder // the statement being typed
	for {
		if pending.Len() == 0 {
			rl.SetPrompt(first)
		} else {
			rl.SetPrompt(next)
		}
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			pending.Reset()
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("reading the shell's input: %w", err)
		}
		if pending.Len() == 0 {
			switch strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), ";"))) {
			case "quit", "exit":
				return nil
			case "help":
				fmt.Fprintln(out, shellHelp)
				fmt.Fprintln(out)
				continue
			case "":
				continue
			}
		}
		pending.WriteString(line)
		pending.WriteByte('\n')
		statements, rest := splitStatements(pending.String())
		if len(statements) == 0 {
			if rest == "" {
				pending.Reset() // only comments
			}
			continue
		}
		for _, s := range statements {
			_ = rl.SaveHistory(strings.Join(strings.Fields(s), " ") + ";")
		}
		pending.Reset()
		if rest != "" {
			pending.WriteString(rest + "\n")
		}
		for _, s := range statements {
			if ctx.Err() != nil {
				return nil // SIGTERM
			}
			shellStatement(ctx, conn, s, write, out, errOut, o)
		}
		// The statements may have changed the session (USE).
		session := sessionOf(conn.conn)
		first, next = shellPrompts(cfg.Trino, session.Schema)
		if complete != nil {
			complete.setSession(session.Catalog, session.Schema)
		}
	}
}

// shellStatement runs one statement of the shell, cancelled by an
// interrupt, and reports its failure.
func shellStatement(ctx context.Context, conn *heldConn, query string, write resultWriter, out, errOut io.Writer, o queryOptions) {
	started := time.Now()
	last, err, byUser := interruptible(ctx, o, true, func(ctx context.Context) (zkdriver.Progress, error) {
		return runStatement(ctx, conn, query, write, out, errOut, o)
	})
	switch {
	case err == nil:
	case byUser:
		fmt.Fprintln(errOut, abortedByUser(err))
	default:
		fmt.Fprintln(errOut, describeFailure(err, o.debug))
	}
	if err == nil && last.QueryID != "" {
		// presto-cli's summary after each statement.
		fmt.Fprintln(errOut)
		fmt.Fprintln(errOut, strings.Join(renderProgress(last, time.Since(started), 0), "\n"))
	}
	fmt.Fprintln(out)
}

// shellHelp is what help prints, after presto-cli's Help.
const shellHelp = `Supported commands:
QUIT
EXIT
HELP
USE [<catalog>.]<schema>
SET SESSION <name> = <value>
RESET SESSION <name>
SHOW CATALOGS, SHOW SCHEMAS, SHOW TABLES, DESCRIBE <table>
and any other SQL statement, ended by ";"

Ctrl-C cancels the running statement (on the coordinator too) or drops the
one being typed; Tab completes keywords, catalogs, schemas and tables;
Ctrl-R searches the history; Ctrl-D or quit leaves.`

// defaultPager is trino-cli's pager (Pager.LESS): -F quits when the
// result fits one screen, -X leaves it on the screen, -R passes colours,
// -S chops long lines rather than folding them, -n skips line numbers.
var defaultPager = []string{"less", "-FXRSn"}

// pagerCommand is the shell's pager as a command line, nil for none, as
// trino-cli chooses it: --pager if given, else $PRESTO_PAGER, else
// $TRINO_PAGER (a custom pager runs through sh); one of them given but
// blank turns paging off. Without any, less -FXRSn when out is a terminal
// and less is installed.
func pagerCommand(o queryOptions, out io.Writer) []string {
	custom, given := o.pager, o.pagerSet
	for _, name := range []string{"PRESTO_PAGER", "TRINO_PAGER"} {
		if given {
			break
		}
		custom, given = os.LookupEnv(name)
	}
	switch {
	case given && strings.TrimSpace(custom) == "":
		return nil
	case given:
		return []string{"sh", "-c", custom}
	}
	isTerminal := o.isTerminal
	if isTerminal == nil {
		isTerminal = writerIsTerminal
	}
	if !isTerminal(out) {
		return nil
	}
	if _, err := exec.LookPath(defaultPager[0]); err != nil {
		return nil
	}
	return defaultPager
}

// paged returns a writer that pipes one statement's results into the
// pager, and a function that waits for it. The pager writes to out
// itself, not through a pipe: on a terminal (os.Stdout) less pages rather
// than behaving as cat. The progress display, if out carries one, stops
// first. A pager the user quit early is no failure.
func paged(pager []string, out, errOut io.Writer) (io.Writer, func() error, error) {
	if s, ok := out.(stopOnWrite); ok {
		s.stop()
		out = s.Writer
	}
	cmd := exec.Command(pager[0], pager[1:]...)
	cmd.Stdout, cmd.Stderr = out, errOut
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting the pager %q: %w", strings.Join(pager, " "), err)
	}
	return pagerInput{in}, func() error {
		in.Close()
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("the pager %q: %w", strings.Join(pager, " "), err)
		}
		return nil
	}, nil
}

// pagerInput is the pager's stdin. Once the pager has quit (q in less
// before the end) writes fail with errPagerQuit, which ends the result
// without reporting a failure.
type pagerInput struct{ w io.Writer }

func (p pagerInput) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		return n, errPagerQuit
	}
	return n, err
}

// errPagerQuit is the write error of a pager that quit before the end of
// the result.
var errPagerQuit = errors.New("the pager quit")
