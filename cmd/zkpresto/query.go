package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

func init() { subcommands = append(subcommands, newQueryCommand) }

type queryOptions struct {
	// Where the coordinators are: exactly one of these.
	dsn       string
	server    string
	zookeeper string
	// Discovery settings over the DSN's.
	namespace string
	strategy  string
	// The session, over the DSN's.
	catalog    string
	schema     string
	user       string
	source     string
	sessions   []string
	clientTags string
	clientInfo string
	timeZone   string
	// password asks for a password: $PRESTO_PASSWORD or $TRINO_PASSWORD,
	// else a prompt on the terminal (readPassword, nil for the real one).
	password     bool
	readPassword func(prompt string) (string, error)
	// What to run.
	execute string
	file    string
	// How to print it.
	outputFormat    string
	format          string
	showCoordinator bool
	timeout         time.Duration
	logLevel        string
	debug           bool
	// ignoreErrors goes on after a failed statement in batch mode (the
	// exit status still says one failed), as presto-cli's --ignore-errors.
	ignoreErrors bool
	// pager, in the shell, is the command results are piped through
	// (--pager, when pagerSet; see pagerCommand for the default).
	pager    string
	pagerSet bool
	// paging is set while the pager runs: Ctrl-C is then the pager's
	// (less's), not a cancel of the statement, as in trino-cli.
	paging *atomic.Bool
	// historyFile is the shell's history (--history-file); "" for the
	// default, see historyFile.
	historyFile string
	// client holds trino-cli's TLS, authentication and logging flags.
	client clientFlags

	// shell is set for the interactive shell, which gets Ctrl-C as
	// interrupts.
	shell      bool
	interrupts <-chan os.Signal
	// noProgress turns the progress display off; progress turns it on in
	// batch mode, where presto-cli shows none by default; isTerminal (nil
	// for the real check) tells whether stderr can show it.
	noProgress bool
	progress   bool
	isTerminal func(io.Writer) bool
}

func newQueryCommand() *cobra.Command {
	var o queryOptions
	cmd := &cobra.Command{
		Use:   "query [SQL]",
		Short: "Run SQL through the driver and print the results, as presto-cli does",
		Long: `query runs SQL through the zkpresto driver and prints the results on stdout.
It takes presto-cli's flags with their meaning.

Where: --server URL is one coordinator (or a gateway), http://host[:port]
(port 80 by default, as in presto-cli), used as is, without discovery;
--zookeeper HOSTS discovers the coordinators registered under --namespace
and balances statements with --strategy; --dsn (or $ZKPRESTO_DSN) is a full
zkpresto DSN. --catalog, --schema, --user, --source, --client-tags,
--client-info, --time-zone and --session name=value (repeatable) set the
session, over what the DSN says; the user is by default the DSN's, else the
operating system's. --password sends a password (over TLS only): from
$PRESTO_PASSWORD or $TRINO_PASSWORD, else asked for. All statements run on
one connection, so USE and SET SESSION apply to the ones after them.

TLS: --server https://host[:port] (port 443 by default) trusts the system's
CA certificates; --truststore-path takes a PEM file of CA certificates,
--keystore-path a PEM file with the client certificate and its key, and
--insecure skips verifying the coordinators' certificates; with --dsn or
--zookeeper they set the DSN's ssl_* keys. Java key stores (JKS, PKCS12)
cannot be read: convert them to PEM (the error says how). --access-token,
--role and --extra-credential are not supported yet and say what to use
instead. --network-logging BASIC shows the driver's debug logs.

What: --execute (-e) SQL, or --file (-f) FILE, or the arguments joined by
spaces, or standard input. A trailing semicolon is dropped.

How: --output-format takes presto-cli's formats: ALIGNED (a table with a
row count), VERTICAL (a block per record), CSV (every value quoted, no
header), CSV_HEADER, TSV (escaped with backslashes), TSV_HEADER, JSON (an
object per line) and NULL (nothing). With --execute, --file or SQL on
stdin (not a terminal) the default is CSV, as in presto-cli's and
trino-cli's batch mode. --format table|csv|json keeps this command's
original formats, and table is the default for SQL given as arguments.
NULL shows as NULL in the text formats, as an empty field in CSV and TSV,
as null in JSON.

While a statement of the shell runs and stderr is a terminal, its progress
is shown there and redrawn in place (state, elapsed time, rows and bytes
read, splits, and the percentage when the coordinator reports one), until
results appear; --no-progress turns it off, --progress turns it on in batch
mode.

--show-coordinator prints which coordinator served the statement on stderr.
A failed statement exits non-zero with Presto's message and the coordinator;
with --ignore-errors batch mode goes on to the next statement (and still
exits non-zero). Ctrl-C cancels the running statement: batch mode then ends
with "Query <id> aborted by user"; the shell goes on. --debug shows the
driver's debug logs and each failure's whole error.

The shell (no SQL given, stdin a terminal) shows its progress on stderr
(batch mode with --progress only), takes help, quit and exit, keeps its
history in --history-file (default $ZKPRESTO_HISTORY, else
~/.zkpresto_history), and pages results as trino-cli does: through
--pager, else $PRESTO_PAGER, else $TRINO_PAGER (one of them set but empty:
no pager), else less -FXRSn when stdout is a terminal. Tab completes
keywords, catalogs, schemas and tables (--disable-auto-suggestion: not);
Ctrl-R searches the history.`,
		Example: `  zkpresto query --server http://coordinator:8080 --catalog hive --schema web -e 'SELECT count(*) FROM page_views'
  zkpresto query --zookeeper zk1:2181,zk2:2181 --user alice --output-format ALIGNED -e 'SHOW CATALOGS'
  zkpresto query --dsn "$DSN" 'SELECT * FROM system.runtime.nodes'
  export ZKPRESTO_DSN='presto://zk1:2181/hive/default;serviceDiscoveryMode=zooKeeper?user=alice'
  zkpresto query --output-format CSV_HEADER -f report.sql > report.csv
  echo 'SELECT current_user' | zkpresto query --format json --show-coordinator`,
		PreRunE: applyLocationEnv,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.execute == "" && o.file == "" && len(args) == 0 && isTerminal(cmd.InOrStdin()) {
				// The shell: Ctrl-C cancels the running statement, not
				// the shell; SIGTERM still ends it.
				ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
				defer stop()
				interrupts := make(chan os.Signal, 1)
				signal.Notify(interrupts, os.Interrupt)
				defer signal.Stop(interrupts)
				o.shell, o.interrupts = true, interrupts
				o.pagerSet = cmd.Flags().Changed("pager")
				return runQuery(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args)
			}
			// Batch mode: Ctrl-C aborts the running statement (on the
			// coordinator too) and ends the run, saying which query.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			interrupts := make(chan os.Signal, 1)
			signal.Notify(interrupts, os.Interrupt)
			defer signal.Stop(interrupts)
			o.interrupts = interrupts
			return runQuery(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "one coordinator or gateway, http://host[:port]; no discovery")
	f.StringVar(&o.zookeeper, "zookeeper", "", "discover coordinators in this ZooKeeper ensemble, host[:port],...")
	f.StringVar(&o.namespace, "namespace", "", "with --zookeeper or --dsn: the namespace znode (default presto)")
	f.StringVar(&o.strategy, "strategy", "", "with --zookeeper or --dsn: the load-balancing strategy (default random)")
	f.StringVar(&o.dsn, "dsn", "", "a zkpresto DSN (instead of --server or --zookeeper)")
	f.StringVar(&o.catalog, "catalog", "", "default catalog")
	f.StringVar(&o.schema, "schema", "", "default schema")
	f.StringVar(&o.user, "user", "", "user name (default: the DSN's, else the operating system's user)")
	f.BoolVar(&o.password, "password", false, "send a password (HTTP basic authentication, over TLS only): $PRESTO_PASSWORD or $TRINO_PASSWORD, else asked for")
	f.StringVar(&o.clientTags, "client-tags", "", "client tags, comma-separated (the gateway's selectors route on them)")
	f.StringVar(&o.clientInfo, "client-info", "", "free-form client information the coordinator records")
	f.StringVar(&o.timeZone, "time-zone", "", "the session time zone, e.g. UTC or Europe/Paris")
	f.StringVar(&o.source, "source", "", "the client source the coordinator records (default zkpresto-cli)")
	f.StringArrayVar(&o.sessions, "session", nil, "a session property, name=value (repeatable)")
	f.StringVarP(&o.execute, "execute", "e", "", "execute these statements and exit")
	f.StringVarP(&o.file, "file", "f", "", "execute the statements of this file and exit")
	f.StringVar(&o.outputFormat, "output-format", "", "presto-cli's output format: "+strings.Join(prestoFormats, ", "))
	f.StringVar(&o.format, "format", "", "this command's original formats: table, csv or json")
	f.BoolVar(&o.showCoordinator, "show-coordinator", false, "print the coordinator that served the statement on stderr")
	f.DurationVar(&o.timeout, "timeout", 0, "cancel the statement after this long (default: no limit)")
	f.BoolVar(&o.noProgress, "no-progress", false, "never show a running statement's progress (shown on stderr when it is a terminal)")
	f.BoolVar(&o.progress, "progress", false, "show the progress in batch mode too (--execute, --file), as the shell does")
	f.BoolVar(&o.ignoreErrors, "ignore-errors", false, "batch mode: go on after a failed statement (the exit status is still non-zero)")
	f.StringVar(&o.pager, "pager", "", "the shell's pager for results, a command run by sh; empty for none (default $PRESTO_PAGER, else $TRINO_PAGER, else less -FXRSn on a terminal)")
	f.StringVar(&o.historyFile, "history-file", "", "the shell's history file (default $ZKPRESTO_HISTORY, else ~/.zkpresto_history)")
	o.client.register(f)
	f.BoolVar(&o.debug, "debug", false, "debug information: the driver's debug logs on stderr, and each failure's whole error")
	f.StringVar(&o.logLevel, "log-level", "error", "driver logs on stderr: debug, info, warn or error (failovers and ejections are warnings, for operators)")
	bindLocationEnv(f)
	return cmd
}

// errNoCoordinator is the error of query without a location.
var errNoCoordinator = errors.New("no coordinator given: --server URL, --zookeeper HOSTS, or --dsn (or $ZKPRESTO_DSN)")

// legacyFormats are the --format names the first query command had, used
// with -f before -f meant --file.
var legacyFormats = map[string]bool{"table": true, "csv": true, "json": true}

func runQuery(ctx context.Context, in io.Reader, out, errOut io.Writer, o queryOptions, args []string) error {
	if legacyFormats[o.file] && o.format == "" {
		if _, err := os.Stat(o.file); err != nil {
			// -f json from before -f was --file.
			fmt.Fprintf(errOut, "reading -f %s as --format %s (-f is --file, as in presto-cli; use --output-format)\n", o.file, o.file)
			o.format, o.file = o.file, ""
		}
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if note := strategyFallbackNote(cfg.Strategy); note != "" {
		fmt.Fprintln(errOut, note)
	}
	defaultFormat := "" // the original table, for SQL given as arguments
	switch {
	case o.shell:
		defaultFormat = formatAligned
	case o.execute != "" || o.file != "" || len(args) == 0:
		// presto-cli's and trino-cli's batch mode, SQL from stdin
		// (not a terminal) included.
		defaultFormat = formatCSV
	}
	write, err := o.resultWriter(defaultFormat)
	if err != nil {
		return err
	}
	logOut := &detachableWriter{w: errOut}
	if o.debug || o.client.logsRequests() {
		o.logLevel = "debug"
	}
	logger, err := newLogger(logOut, o.logLevel)
	if err != nil {
		return err
	}
	var statements []string
	if !o.shell {
		if statements, err = o.readSQL(in, args); err != nil {
			return err
		}
	}
	connector, err := zkdriver.NewConnector(cfg, zkdriver.WithLogger(logger))
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	// Closing discovery logs its disconnection: not news for the user.
	defer logOut.detach()

	// One connection, so that the coordinator asked afterwards is the one
	// that ran the statement.
	sc, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer sc.Close()
	conn := &heldConn{conn: sc, ctx: ctx}
	defer conn.end(errOut)
	if o.shell {
		return runShell(ctx, db, conn, cfg, write, in, out, errOut, o)
	}
	// One after another; the first failure ends the run, as in presto-cli,
	// unless --ignore-errors; Ctrl-C always does.
	var failed error
	for _, query := range statements {
		if len(o.interrupts) > 0 {
			return abortedError{} // Ctrl-C between two statements
		}
		_, err, byUser := interruptible(ctx, o, false, func(ctx context.Context) (zkdriver.Progress, error) {
			return runStatement(ctx, conn, query, write, out, errOut, o)
		})
		switch {
		case err == nil:
		case byUser:
			return abortedByUser(err)
		case !o.ignoreErrors:
			return err
		default:
			fmt.Fprintln(errOut, describeFailure(err, o.debug))
			failed = errIgnoredFailures
		}
	}
	return failed
}

// errIgnoredFailures ends a batch run with --ignore-errors in which a
// statement failed: each failure was printed already.
var errIgnoredFailures = errors.New("a statement failed (--ignore-errors went on after it)")

// interruptible runs one statement, which an interrupt (Ctrl-C) cancels,
// and reports whether it did. fresh drops the interrupts from before it
// (the shell's: one given at the prompt is not for the next statement).
func interruptible(ctx context.Context, o queryOptions, fresh bool, run func(context.Context) (zkdriver.Progress, error)) (zkdriver.Progress, error, bool) {
	for fresh && len(o.interrupts) > 0 {
		<-o.interrupts
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	aborted := make(chan bool, 1)
	go func() {
		for {
			select {
			case <-o.interrupts:
				if o.paging != nil && o.paging.Load() {
					continue
				}
				aborted <- true
				cancel()
			case <-done:
				aborted <- false
			}
			return
		}
	}()
	last, err := run(qctx)
	close(done)
	return last, err, <-aborted && err != nil
}

// abortedError is presto-cli's line for a statement Ctrl-C cancelled:
// "Query <id> aborted by user", without the cancellation's error chain.
type abortedError struct{ queryID string }

func (e abortedError) Error() string {
	if e.queryID == "" {
		return "Query aborted by user"
	}
	return "Query " + e.queryID + " aborted by user"
}

// abortedByUser is the abortedError of a statement's error.
func abortedByUser(err error) error {
	var se *statementError
	if errors.As(err, &se) {
		return abortedError{queryID: se.queryID}
	}
	return abortedError{}
}

// describeFailure is a failure as printed: its message, and with --debug
// the error's whole chain, one cause a line.
func describeFailure(err error, debug bool) string {
	if !debug {
		return err.Error()
	}
	var b strings.Builder
	b.WriteString(err.Error())
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "\n  caused by (%T): %v", e, e)
	}
	return b.String()
}

// runStatement runs one statement on conn and prints its result, with
// its progress on a terminal meanwhile. Its error names the query and the
// coordinator. It returns the statement's last progress report.
func runStatement(ctx context.Context, conn *heldConn, query string, write resultWriter, out, errOut io.Writer, o queryOptions) (zkdriver.Progress, error) {
	if handled, err := conn.control(query, errOut); handled {
		return zkdriver.Progress{}, err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.timeout, errTimeout)
		defer cancel()
	}
	isTerminal := o.isTerminal
	if isTerminal == nil {
		isTerminal = writerIsTerminal
	}
	var display *progressDisplay
	if showProgress(!o.noProgress && (o.shell || o.progress), errOut, isTerminal) {
		display = startProgress(errOut, terminalWidth(errOut))
		defer display.stop()
		out = stopOnWrite{Writer: out, stop: display.stop}
	}
	var mu sync.Mutex
	var last zkdriver.Progress
	ctx = zkdriver.WithProgress(ctx, func(p zkdriver.Progress) {
		mu.Lock()
		if p.QueryID == "" {
			p.QueryID = last.QueryID
		}
		last = p
		mu.Unlock()
		if display != nil {
			display.update(p)
		}
	})
	progress := func() zkdriver.Progress {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	failed := func(err error) error {
		if errors.Is(context.Cause(ctx), errTimeout) {
			return &timeoutError{queryID: progress().QueryID, coordinator: servedBy(conn.conn), after: o.timeout, err: err}
		}
		return queryError(err, progress().QueryID, servedBy(conn.conn))
	}
	rows, err := conn.query(ctx, query)
	if err != nil {
		return progress(), failed(err)
	}
	update := progress().UpdateType != ""
	if update {
		// A statement that is no query (SET SESSION, USE, INSERT...)
		// prints what it did instead of its result, as presto-cli does;
		// its result is read to the end, never cut short.
		for rows.Next() {
		}
		err = rows.Err()
	} else {
		err = write(out, rows)
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	coordinator := servedBy(conn.conn)
	if err != nil {
		return progress(), failed(err)
	}
	if update {
		if display != nil {
			display.stop()
		}
		fmt.Fprintln(errOut, updateStatus(progress()))
	}
	if o.showCoordinator && coordinator != "" {
		fmt.Fprintln(errOut, "coordinator:", coordinator)
	}
	return progress(), nil
}

// updateStatus is presto-cli's line for a statement that is no query:
// "SET SESSION", or with a row count "INSERT: 5 rows" (presto-cli's and
// trino-cli's Query.renderUpdate).
func updateStatus(p zkdriver.Progress) string {
	if !p.HasUpdateCount {
		return p.UpdateType
	}
	if p.UpdateCount == 1 {
		return p.UpdateType + ": 1 row"
	}
	return fmt.Sprintf("%s: %d rows", p.UpdateType, p.UpdateCount)
}

// sessionOf returns the session of conn's driver connection: the DSN's,
// changed by the statements conn ran.
func sessionOf(conn *sql.Conn) zkdriver.Session {
	var s zkdriver.Session
	_ = conn.Raw(func(dc any) error {
		if c, ok := dc.(*zkdriver.Conn); ok {
			s = c.Session()
		}
		return nil
	})
	return s
}

// newLogger returns the logger of --log-level: logfmt on w.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	l, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// detachableWriter writes to w until detached, and drops what comes
// after: discovery may log while it closes, after the command returned.
type detachableWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (d *detachableWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w == nil {
		return len(p), nil
	}
	return d.w.Write(p)
}

func (d *detachableWriter) detach() {
	d.mu.Lock()
	d.w = nil
	d.mu.Unlock()
}

// config builds the driver's configuration from the location flags (or
// the DSN) and the session flags over it.
func (o queryOptions) config() (*zkdriver.Config, error) {
	given := 0
	for _, s := range []string{o.dsn, o.server, o.zookeeper} {
		if s != "" {
			given++
		}
	}
	if given > 1 {
		return nil, errors.New("--server, --zookeeper and --dsn exclude each other: give one")
	}
	var cfg *zkdriver.Config
	var err error
	switch {
	case o.server != "":
		if o.namespace != "" || o.strategy != "" {
			return nil, errors.New("--namespace and --strategy need discovery (--zookeeper or --dsn), not --server")
		}
		addr, err := serverAddr(o.server)
		if err != nil {
			return nil, err
		}
		if cfg, err = zkdriver.ParseDSN("presto://" + addr); err != nil {
			return nil, fmt.Errorf("--server %q: %w", o.server, err)
		}
	case o.zookeeper != "" || o.dsn != "":
		if cfg, err = discoveryConfig(o.dsn, o.zookeeper, o.namespace); err != nil {
			return nil, err
		}
	default:
		return nil, errNoCoordinator
	}
	if o.strategy != "" {
		cfg.Strategy = o.strategy
	}
	set := func(field *string, v string) {
		if v != "" {
			*field = v
		}
	}
	set(&cfg.Catalog, o.catalog)
	set(&cfg.Schema, o.schema)
	set(&cfg.User, o.user)
	set(&cfg.Source, o.source)
	set(&cfg.ClientInfo, o.clientInfo)
	set(&cfg.TimeZone, o.timeZone)
	if o.clientTags != "" {
		cfg.ClientTags = nil
		for tag := range strings.SplitSeq(o.clientTags, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				cfg.ClientTags = append(cfg.ClientTags, tag)
			}
		}
	}
	if cfg.User == "" {
		cfg.User = osUser()
	}
	if err := o.client.apply(cfg, o.server); err != nil {
		return nil, err
	}
	if o.password {
		if err := o.askPassword(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Source == "" {
		cfg.Source = "zkpresto-cli"
	}
	if cfg.Schema != "" && cfg.Catalog == "" {
		return nil, errors.New("--schema needs a catalog (--catalog)")
	}
	for _, s := range o.sessions {
		name, value, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--session %q: want name=value", s)
		}
		if cfg.SessionProperties == nil {
			cfg.SessionProperties = map[string]string{}
		}
		cfg.SessionProperties[strings.TrimSpace(name)] = value
	}
	return cfg, nil
}

// osUser is the operating system's user name, as presto-cli's default
// user (Java's user.name): os/user, else $USER, else "".
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// askPassword sets cfg's password for --password: $PRESTO_PASSWORD, else
// $TRINO_PASSWORD, else asked for on the terminal. As presto-cli, it
// refuses to send one over plain http.
func (o queryOptions) askPassword(cfg *zkdriver.Config) error {
	if !cfg.SSL && cfg.SSLCA == "" && cfg.SSLCert == "" && cfg.SSLKey == "" && !cfg.SSLSkipVerify {
		return errors.New("--password: a password is sent over TLS only: give --server https://host:port, or --dsn with SSL=true or the ssl_* keys")
	}
	if cfg.User == "" {
		return errors.New("--password: a password needs a user (--user)")
	}
	for _, name := range []string{"PRESTO_PASSWORD", "TRINO_PASSWORD"} {
		if p := os.Getenv(name); p != "" {
			cfg.Password = p
			return nil
		}
	}
	read := o.readPassword
	if read == nil {
		read = func(prompt string) (string, error) {
			b, err := readline.Password(prompt)
			return string(b), err
		}
	}
	p, err := read("Password: ")
	if err != nil {
		return fmt.Errorf("--password: reading the password: %w", err)
	}
	if p == "" {
		return errors.New("--password: no password given")
	}
	cfg.Password = p
	return nil
}

// serverAddr reads presto-cli's --server: http://host[:port] or
// host[:port], port 80 by default, or https://host[:port], port 443 by
// default (clientFlags.apply then asks for TLS).
func serverAddr(server string) (string, error) {
	if strings.Contains(server, "@") {
		// Never quoted: the user info may hold a password.
		return "", errors.New("--server: no user info (an @) in the URL; use --user, and a DSN for a password")
	}
	rest, port := server, "80"
	if scheme, after, ok := strings.Cut(server, "://"); ok {
		switch strings.ToLower(scheme) {
		case "http":
		case "https":
			port = "443"
		default:
			return "", fmt.Errorf("--server %q: want http://host[:port] or https://host[:port]", server)
		}
		rest = after
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.ContainsAny(rest, "/;?@,&=") {
		return "", fmt.Errorf("--server %q: want one http://host[:port]", server)
	}
	if _, _, err := net.SplitHostPort(rest); err != nil {
		rest = net.JoinHostPort(strings.Trim(rest, "[]"), port)
	}
	return rest, nil
}

// resultWriter prints one result set.
type resultWriter func(io.Writer, *sql.Rows) error

// resultWriter picks the output format: --output-format, else --format,
// else defaultFormat, a presto-cli format or "" for the original table.
func (o queryOptions) resultWriter(defaultFormat string) (resultWriter, error) {
	switch {
	case o.outputFormat != "" && o.format != "":
		return nil, errors.New("--output-format and --format exclude each other: give one")
	case o.format != "":
		write, ok := resultWriters[o.format]
		if !ok {
			return nil, fmt.Errorf("--format %q: want table, csv or json (or --output-format with presto-cli's names)", o.format)
		}
		return write, nil
	case o.outputFormat == "" && defaultFormat == "":
		return writeTable, nil
	}
	format := o.outputFormat
	if format == "" {
		format = defaultFormat
	}
	if _, err := newPrinter(format, io.Discard); err != nil {
		return nil, err
	}
	return func(w io.Writer, rows *sql.Rows) error {
		p, err := newPrinter(format, w)
		if err != nil {
			return err
		}
		return printRows(rows, p)
	}, nil
}

// statementError is the error of a failed statement, with the query's id
// when a coordinator gave it one, and the coordinator.
type statementError struct {
	queryID, coordinator string
	err                  error
}

func queryError(err error, queryID, coordinator string) error {
	return &statementError{queryID: queryID, coordinator: coordinator, err: err}
}

// errTimeout is the cause of a statement's end by --timeout.
var errTimeout = errors.New("--timeout")

// timeoutError is the error of a statement --timeout ended: what timed out
// and after how long, instead of the driver's "context deadline exceeded"
// after the URL of the request that was waiting.
type timeoutError struct {
	queryID, coordinator string
	after                time.Duration
	err                  error // the driver's, for --debug
}

func (e *timeoutError) Error() string {
	what := "query"
	if e.queryID != "" {
		what += " " + e.queryID
	}
	msg := fmt.Sprintf("%s timed out: it ran longer than --timeout %s", what, e.after)
	if e.coordinator != "" {
		msg += " and was cancelled on coordinator " + e.coordinator
	}
	return msg
}

func (e *timeoutError) Unwrap() error { return e.err }

func (e *statementError) Error() string {
	var qe *zkdriver.QueryError
	if errors.As(e.err, &qe) {
		// The server's failure: presto-cli's "Query <id> failed: ...",
		// with the coordinator, and the name and message once.
		id, coordinator := cmp.Or(qe.QueryID, e.queryID), cmp.Or(qe.Coordinator, e.coordinator)
		return queryFailure(id, coordinator) + qe.ErrorName + ": " + qe.Message
	}
	coordinator := e.coordinator
	if strings.Contains(e.err.Error(), coordinator) {
		coordinator = "" // the error names it already
	}
	return queryFailure(e.queryID, coordinator) + e.err.Error()
}

// queryFailure is the start of a failed statement's line: "query <id>
// failed on coordinator <url>: ", leaving out what is not known.
func queryFailure(queryID, coordinator string) string {
	what := "query"
	if queryID != "" {
		what += " " + queryID
	}
	if coordinator != "" {
		return what + " failed on coordinator " + coordinator + ": "
	}
	return what + " failed: "
}

func (e *statementError) Unwrap() error { return e.err }

// servedBy returns the URL of the coordinator conn's last statement went
// to, or "" if the driver does not say. It and sessionOf are the places
// that reach into the driver's connection.
func servedBy(conn *sql.Conn) string {
	var url string
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*zkdriver.Conn); ok {
			if n := c.Node(); n != nil {
				url = n.URL()
			}
		}
		return nil
	})
	return url
}

// readSQL takes the SQL from --execute, --file, the arguments or, without
// any, stdin, and splits it into statements.
func (o queryOptions) readSQL(in io.Reader, args []string) ([]string, error) {
	var text string
	switch {
	case o.execute != "" && (o.file != "" || len(args) > 0):
		return nil, errors.New("--execute excludes --file and SQL arguments")
	case o.file != "" && len(args) > 0:
		return nil, errors.New("--file excludes SQL arguments")
	case o.execute != "":
		text = o.execute
	case o.file != "":
		b, err := os.ReadFile(o.file)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		text = string(b)
	case len(args) > 0:
		text = strings.Join(args, " ")
	default:
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, fmt.Errorf("reading SQL from stdin: %w", err)
		}
		text = string(b)
	}
	statements, rest := splitStatements(text)
	if rest != "" {
		// The last statement needs no semicolon.
		statements = append(statements, rest)
	}
	if len(statements) == 0 {
		return nil, errors.New("no SQL given: pass it with --execute, --file, as an argument or on stdin")
	}
	return statements, nil
}

// resultWriters print a result set in each output format.
var resultWriters = map[string]resultWriter{
	"table": writeTable,
	"csv":   writeCSV,
	"json":  writeJSON,
}

// scanRows calls fn with the column names and then each row's values.
func scanRows(rows *sql.Rows, header func([]string) error, row func([]any) error) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if err := header(cols); err != nil {
		return err
	}
	values := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := row(values); err != nil {
			return err
		}
	}
	return rows.Err()
}

// cellText renders a value for the table and CSV formats; nullText stands
// for NULL.
func cellText(v any, nullText string) string {
	switch v := v.(type) {
	case nil:
		return nullText
	case string:
		return v
	case []byte:
		return string(v)
	case time.Time:
		return v.Format("2006-01-02 15:04:05.999999999 MST")
	case []any, map[string]any:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	default:
		return fmt.Sprint(v)
	}
}

func writeTable(w io.Writer, rows *sql.Rows) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Tabs and newlines inside values would break the alignment.
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	err := scanRows(rows,
		func(cols []string) error {
			_, err := fmt.Fprintln(tw, strings.Join(cols, "\t"))
			return err
		},
		func(values []any) error {
			cells := make([]string, len(values))
			for i, v := range values {
				cells[i] = clean.Replace(cellText(v, "NULL"))
			}
			_, err := fmt.Fprintln(tw, strings.Join(cells, "\t"))
			return err
		})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func writeCSV(w io.Writer, rows *sql.Rows) error {
	cw := csv.NewWriter(w)
	err := scanRows(rows,
		cw.Write,
		func(values []any) error {
			cells := make([]string, len(values))
			for i, v := range values {
				cells[i] = cellText(v, "")
			}
			return cw.Write(cells)
		})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	return err
}

// writeJSON streams an array of objects whose keys keep the column order.
func writeJSON(w io.Writer, rows *sql.Rows) error {
	var keys [][]byte
	n := 0
	err := scanRows(rows,
		func(cols []string) error {
			keys = make([][]byte, len(cols))
			for i, c := range cols {
				k, err := json.Marshal(c)
				if err != nil {
					return err
				}
				keys[i] = k
			}
			_, err := io.WriteString(w, "[")
			return err
		},
		func(values []any) error {
			var b strings.Builder
			if n > 0 {
				b.WriteString(",")
			}
			n++
			b.WriteString("\n  {")
			for i, v := range values {
				if i > 0 {
					b.WriteString(", ")
				}
				val, err := json.Marshal(jsonValue(v))
				if err != nil {
					return fmt.Errorf("column %s: %w", keys[i], err)
				}
				b.Write(keys[i])
				b.WriteString(": ")
				b.Write(val)
			}
			b.WriteString("}")
			_, err := io.WriteString(w, b.String())
			return err
		})
	if err != nil {
		return err
	}
	if n > 0 {
		_, err = io.WriteString(w, "\n]\n")
	} else {
		_, err = io.WriteString(w, "]\n")
	}
	return err
}

// jsonValue keeps bytes readable: as text rather than base64.
func jsonValue(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}
