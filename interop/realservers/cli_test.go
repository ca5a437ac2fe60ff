package realservers

import (
	"context"
	"encoding/csv"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// commandLine is one of the command-line clients: its jar, and the
// flavour whose headers it speaks (and whose JDK runs it).
type commandLine struct {
	name, jar string
	flavour   coordinator.Flavour
}

var commandLines = []commandLine{
	{"trino-cli", realserver.TrinoCLI, coordinator.Trino},
	{"presto-cli", realserver.PrestoCLI, coordinator.Presto},
}

// cliRun is what one run of a command-line client left.
type cliRun struct {
	stdout, stderr string
	exit           int
}

// run runs the client in batch mode against server with the user, the
// tpch.tiny catalog and schema, and args, within a minute.
func (c commandLine) run(t *testing.T, server string, args ...string) cliRun {
	t.Helper()
	bin, err := realserver.Java(c.flavour)
	if err != nil {
		t.Fatal(err)
	}
	path := jar(t, c.jar)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The flags keep the JVM's and jline's warnings (native access, no
	// terminal) off standard error, which then holds only the client's own
	// messages.
	cmd := exec.CommandContext(ctx, bin, append([]string{"--enable-native-access=ALL-UNNAMED",
		"-Dorg.jline.terminal.dumb=true", "-jar", path, "--server", server,
		"--user", "alice", "--catalog", "tpch", "--schema", "tiny"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return cliRun{stdout: stdout.String(), stderr: stderr.String()}
	case errors.As(err, &exit) && ctx.Err() == nil:
		return cliRun{stdout: stdout.String(), stderr: stderr.String(), exit: exit.ExitCode()}
	default:
		t.Fatalf("%s %s: %v\n%s\n%s", c.name, strings.Join(args, " "), err, stdout.String(), stderr.String())
		return cliRun{}
	}
}

// readCSV parses a client's CSV output.
func readCSV(t *testing.T, out string) [][]string {
	t.Helper()
	records, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("output %q is not CSV: %v", out, err)
	}
	return records
}

// cliTarget is where a command-line client is pointed: the gateway in
// front of a flavour's servers, or one of them directly.
type cliTarget struct {
	name, url string
}

// cliTargets are the gateway in front of f's servers and, for the client
// of f's flavour, its first server directly: a client of the other
// flavour reaches f only through the gateway, which renames its headers.
func cliTargets(t *testing.T, f *flavourFleet, c commandLine) []cliTarget {
	targets := []cliTarget{{"gateway", startGateway(t, f)}}
	if c.flavour == f.flavour {
		targets = append(targets, cliTarget{"direct", f.servers[0].URL()})
	}
	return targets
}

// eachCLITarget runs fn for each command-line client and each of its
// targets on each flavour's servers.
func eachCLITarget(t *testing.T, fn func(t *testing.T, f *flavourFleet, c commandLine, url string)) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		for _, c := range commandLines {
			t.Run(c.name, func(t *testing.T) {
				for _, tg := range cliTargets(t, f, c) {
					t.Run(tg.name, func(t *testing.T) { fn(t, f, c, tg.url) })
				}
			})
		}
	})
}

// --execute with two statements and --output-format CSV_HEADER: each
// statement's result is printed in turn, each with its header line and
// every value quoted, on standard output; nothing on standard error, and
// the exit code is 0. Both CLIs split the statements themselves and send
// them one by one (trino `cli/Console.java` `executeCommand` with
// `StatementSplitter`; prestodb `presto-cli/.../Console.java` the same),
// and print CSV_HEADER through `CsvPrinter`, the header line first and
// every value quoted (trino `CsvPrinter.CsvOutputFormat`; prestodb
// `CsvPrinter` with its header flag, from `ClientOptions.OutputFormat`).
func TestCLIExecuteCSVHeader(t *testing.T) {
	eachCLITarget(t, func(t *testing.T, f *flavourFleet, c commandLine, url string) {
		r := c.run(t, url, "--output-format", "CSV_HEADER",
			"--execute", "SELECT count(*) AS nations FROM nation; SELECT name FROM region ORDER BY regionkey")
		if r.exit != 0 || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q", r.exit, r.stderr)
		}
		if got, want := r.stdout, "\"nations\"\n\"25\"\n\"name\"\n\"AFRICA\"\n\"AMERICA\"\n\"ASIA\"\n\"EUROPE\"\n\"MIDDLE EAST\"\n"; got != want {
			t.Errorf("printed %q, want %q", got, want)
		}
	})
}

// --file runs the file's statements in order; the first that fails ends
// the run with exit code 1 and the server's message on standard error,
// and the statements after it are not sent (trino `Console.java`,
// `executeCommand`: `if (!process(...)) { if (!ignoreErrors) return false; }`;
// prestodb `Console.java` the same).
func TestCLIFileStopsAtTheFirstFailure(t *testing.T) {
	eachCLITarget(t, func(t *testing.T, f *flavourFleet, c commandLine, url string) {
		file := filepath.Join(t.TempDir(), "statements.sql")
		statements := "SELECT count(*) FROM region;\n" +
			"SELECT regionkey FROM region WHERE name = 'ASIA';\n" +
			"SELECT * FROM no_such_table;\n" +
			"SELECT 'after the failure';\n"
		if err := os.WriteFile(file, []byte(statements), 0o644); err != nil {
			t.Fatal(err)
		}
		r := c.run(t, url, "--output-format", "TSV", "--file", file)
		if got, want := r.stdout, "5\n2\n"; got != want {
			t.Errorf("printed %q, want %q (and nothing after the failure)", got, want)
		}
		if r.exit != 1 || !strings.Contains(r.stderr, "no_such_table") || !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("exit %d, stderr %q; want 1 and the server's message", r.exit, r.stderr)
		}
	})
}

// A session property given with --session reaches the server with every
// statement (X-Trino-Session or X-Presto-Session, trino `ClientOptions`
// `--session`, `StatementClientV1` `buildQueryRequest`): SHOW SESSION
// lists it with its value. One the server does not know fails the
// statement with the server's message, exit code 1.
func TestCLISessionProperty(t *testing.T) {
	eachCLITarget(t, func(t *testing.T, f *flavourFleet, c commandLine, url string) {
		r := c.run(t, url, "--output-format", "CSV", "--session", "query_max_run_time=17m", "--execute", "SHOW SESSION")
		if r.exit != 0 || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q", r.exit, r.stderr)
		}
		var value string
		for _, rec := range readCSV(t, r.stdout) {
			if rec[0] == "query_max_run_time" {
				value = rec[1]
			}
		}
		if value != "17m" {
			t.Errorf("SHOW SESSION says query_max_run_time is %q, want 17m:\n%s", value, r.stdout)
		}
		r = c.run(t, url, "--session", "no_such_property=1", "--execute", "SELECT 1")
		if r.exit != 1 || r.stdout != "" || !strings.Contains(r.stderr, "no_such_property") {
			t.Errorf("an unknown session property: exit %d, stdout %q, stderr %q", r.exit, r.stdout, r.stderr)
		}
	})
}

// queryFailed is how both CLIs report a failed query on standard error:
// "Query <id> failed: <message>" (trino `cli/Query.java` and prestodb
// `presto-cli/.../Query.java`, `renderFailure`), with the server's
// message for a missing table: Trino's carries its location and quotes
// the name (trino `SemanticExceptions`, `MISSING_TABLE`), PrestoDB
// 0.287's neither (prestodb `StatementAnalyzer`, `MISSING_TABLE`).
var queryFailed = map[coordinator.Flavour]*regexp.Regexp{
	coordinator.Trino:  regexp.MustCompile(`(?m)^Query \d{8}_\d{6}_\d{5}_\w{5} failed: line 1:15: Table 'tpch\.tiny\.no_such_table' does not exist$`),
	coordinator.Presto: regexp.MustCompile(`(?m)^Query \d{8}_\d{6}_\d{5}_\w{5} failed: Table tpch\.tiny\.no_such_table does not exist$`),
}

// A failing query: exit code 1, nothing on standard output, and on
// standard error the query's id and the server's message with its
// location, as the CLI got it straight from the server.
func TestCLIFailingQuery(t *testing.T) {
	eachCLITarget(t, func(t *testing.T, f *flavourFleet, c commandLine, url string) {
		r := c.run(t, url, "--execute", "SELECT * FROM no_such_table")
		if want := queryFailed[f.flavour]; r.exit != 1 || r.stdout != "" || !want.MatchString(r.stderr) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, and %s", r.exit, r.stdout, r.stderr, want)
		}
	})
}
