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
func runShell(ctx context.Context, conn *heldConn, cfg *zkdriver.Config, write resultWriter, in io.Reader, out, errOut io.Writer, o queryOptions) error {
	first, next := shellPrompts(cfg.Trino, cfg.Schema)
	history := o.historyFile
	if history == "" {
		history = historyFile()
	}
	if pager := pagerCommand(o); pager != "" {
		// Each statement's results go through the pager, as presto-cli's.
		direct := write
		write = func(w io.Writer, rows *sql.Rows) error {
			pw, wait, err := paged(pager, w, errOut)
			if err != nil {
				return err
			}
			err = direct(pw, rows)
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
		first, next = shellPrompts(cfg.Trino, sessionOf(conn.conn).Schema)
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
one being typed; Ctrl-D or quit leaves.`

// pagerCommand is the shell's pager: --pager, else $PRESTO_PAGER, else
// $TRINO_PAGER; "" for none.
func pagerCommand(o queryOptions) string {
	for _, p := range []string{o.pager, os.Getenv("PRESTO_PAGER"), os.Getenv("TRINO_PAGER")} {
		if strings.TrimSpace(p) != "" {
			return p
		}
	}
	return ""
}

// paged returns a writer that pipes one statement's results into the pager
// (a command run by sh, as presto-cli runs its own), and a function that
// waits for it. Without a pager it is out itself.
func paged(pager string, out, errOut io.Writer) (io.Writer, func() error, error) {
	if pager == "" {
		return out, func() error { return nil }, nil
	}
	cmd := exec.Command("sh", "-c", pager)
	cmd.Stdout, cmd.Stderr = out, errOut
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting the pager %q: %w", pager, err)
	}
	return in, func() error {
		in.Close()
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("the pager %q: %w", pager, err)
		}
		return nil
	}, nil
}
