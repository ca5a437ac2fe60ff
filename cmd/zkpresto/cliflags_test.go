package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// lastRequestOf is the latest statement c received.
func lastRequestOf(t *testing.T, c *coordinator.Coordinator) coordinator.Request {
	t.Helper()
	reqs := c.Requests()
	if len(reqs) == 0 {
		t.Fatal("the coordinator received no statement")
	}
	return reqs[len(reqs)-1]
}

func TestQuerySessionFlagsReachTheCoordinator(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	_, stderr, err := run([]string{"query", "--server", c.URL(), "--client-tags", "etl, nightly", "--client-info", "report 7",
		"--time-zone", "Europe/Paris", "-e", "SELECT 1"}, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	r := lastRequestOf(t, c)
	if !slices.Equal(r.ClientTags, []string{"etl", "nightly"}) || r.ClientInfo != "report 7" || r.TimeZone != "Europe/Paris" {
		t.Fatalf("the coordinator saw tags %q, client info %q, time zone %q", r.ClientTags, r.ClientInfo, r.TimeZone)
	}
}

func TestQueryDefaultUserIsTheOperatingSystemUser(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	t.Setenv("USER", "") // as under cron or in a container
	if _, stderr, err := run([]string{"query", "--server", c.URL(), "-e", "SELECT 1"}, ""); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if got := lastRequestOf(t, c).User; got != u.Username {
		t.Fatalf("the coordinator saw user %q, want the operating system's %q", got, u.Username)
	}
}

func TestQueryPasswordFromTheEnvironmentOrThePrompt(t *testing.T) {
	certs, err := testtls.Generate(t.TempDir(), "query")
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.Start(coordinator.Options{TLS: serverTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dsn := "presto://" + c.Addr() + "/hive?ssl_ca=" + certs.CAFile
	t.Setenv("PRESTO_PASSWORD", "")
	t.Setenv("TRINO_PASSWORD", "")

	// Over plain http a password is refused, as presto-cli refuses it.
	plain := startCoordinators(t, 1)[0]
	if _, _, err := run([]string{"query", "--server", plain.URL(), "--user", "alice", "--password", "-e", "SELECT 1"}, ""); err == nil ||
		!strings.Contains(err.Error(), "over TLS only") || plain.Statements() != 0 {
		t.Fatalf("a password over http: %v, %d statements", err, plain.Statements())
	}

	t.Setenv("TRINO_PASSWORD", "from-trino-env")
	if _, stderr, err := run([]string{"query", "--dsn", dsn, "--user", "alice", "--password", "-e", "SELECT 1"}, ""); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got := lastRequestOf(t, c).Password; got != "from-trino-env" {
		t.Fatalf("the coordinator saw password %q, want $TRINO_PASSWORD's", got)
	}
	t.Setenv("PRESTO_PASSWORD", "from-presto-env") // first, as presto-cli's own
	if _, stderr, err := run([]string{"query", "--dsn", dsn, "--user", "alice", "--password", "-e", "SELECT 1"}, ""); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got := lastRequestOf(t, c).Password; got != "from-presto-env" {
		t.Fatalf("the coordinator saw password %q, want $PRESTO_PASSWORD's", got)
	}

	// Neither set: asked for.
	t.Setenv("PRESTO_PASSWORD", "")
	t.Setenv("TRINO_PASSWORD", "")
	var prompted string
	o := queryOptions{dsn: dsn, user: "alice", password: true, logLevel: "warn", execute: "SELECT 1",
		readPassword: func(prompt string) (string, error) { prompted = prompt; return "typed", nil }}
	if err := runQuery(context.Background(), strings.NewReader(""), io.Discard, io.Discard, o, nil); err != nil {
		t.Fatal(err)
	}
	if got := lastRequestOf(t, c).Password; got != "typed" || prompted != "Password: " {
		t.Fatalf("the coordinator saw password %q after the prompt %q", got, prompted)
	}
}

func TestQueryIgnoreErrorsGoesOnAndStillFails(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	script := "SELECT fail('first'); SELECT * FROM rows(1)"
	stdout, _, err := run([]string{"query", "--server", c.URL(), "-e", script}, "")
	if err == nil || !strings.Contains(err.Error(), "first") || stdout != "" || c.Statements() != 1 {
		t.Fatalf("without --ignore-errors: %v, stdout %q, %d statements", err, stdout, c.Statements())
	}
	stdout, stderr, err := run([]string{"query", "--server", c.URL(), "--ignore-errors", "-e", script}, "")
	if !errors.Is(err, errIgnoredFailures) || stdout != "\"1\"\n" || !strings.Contains(stderr, "first") {
		t.Fatalf("with --ignore-errors: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
}

func TestQueryDebugShowsTheDriversDebugLogs(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	_, stderr, err := run([]string{"query", "--server", c.URL(), "--debug", "-e", "SELECT fail('boom')"}, "")
	if err == nil || !strings.Contains(stderr, "level=DEBUG") {
		t.Fatalf("--debug: %v, stderr %q", err, stderr)
	}
	if got := describeFailure(queryError(errors.New("outer"), "q1", ""), true); !strings.Contains(got, "caused by (*errors.errorString): outer") {
		t.Errorf("--debug's failure %q does not show the chain", got)
	}
}

// The shell's help, pager and history file, driven through a pipe.
func TestShellHelpPagerAndHistoryFile(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	history := filepath.Join(t.TempDir(), "my history")
	t.Setenv("ZKPRESTO_HISTORY", filepath.Join(t.TempDir(), "not this one"))
	t.Setenv("PRESTO_PAGER", "")
	os.Unsetenv("PRESTO_PAGER") // restored by Setenv's cleanup
	t.Setenv("TRINO_PAGER", "sed 's/^/paged: /'")
	o := queryOptions{server: c.URL(), logLevel: "warn", shell: true, interrupts: make(chan os.Signal, 1), historyFile: history}
	out, errOut := &testutil.Buffer{}, &testutil.Buffer{}
	if err := runQuery(context.Background(), strings.NewReader("help\nSELECT * FROM rows(2);\n"), out, errOut, o, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Supported commands:") || c.Statements() != 1 {
		t.Errorf("help: stdout %q, %d statements (help is no SQL)", out.String(), c.Statements())
	}
	if !strings.Contains(out.String(), "paged:  n \npaged: ---\npaged:  1 \npaged:  2 \npaged: (2 rows)") {
		t.Errorf("the results did not go through $TRINO_PAGER:\n%s", out.String())
	}
	b, err := os.ReadFile(history)
	if err != nil || !strings.Contains(string(b), "SELECT * FROM rows(2);") {
		t.Errorf("--history-file %q holds %q (%v)", history, b, err)
	}
	if _, err := os.Stat(os.Getenv("ZKPRESTO_HISTORY")); err == nil {
		t.Error("the history went to $ZKPRESTO_HISTORY despite --history-file")
	}

	// --pager wins over the environment.
	out = &testutil.Buffer{}
	o.pager, o.pagerSet = "sed 's/^/flag: /'", true
	if err := runQuery(context.Background(), strings.NewReader("SELECT * FROM rows(1);\n"), out, errOut, o, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "flag: (1 row)") {
		t.Errorf("--pager was not used:\n%s", out.String())
	}
}

// Ctrl-C in batch mode cancels the statement on the coordinator and ends
// the run with presto-cli's one line.
func TestBatchInterruptAbortsTheQuery(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	interrupts := make(chan os.Signal, 1)
	o := queryOptions{server: c.URL(), logLevel: "warn", execute: "SELECT * FROM sleep(5000); SELECT 2", interrupts: interrupts}
	done := make(chan error, 1)
	go func() { done <- runQuery(context.Background(), strings.NewReader(""), io.Discard, io.Discard, o, nil) }()
	eventually(t, "the long statement", func() bool { return c.Running() == 1 && polled(c) })
	interrupts <- os.Interrupt
	err := <-done
	id := lastRequestOf(t, c).QueryID
	if err == nil || err.Error() != "Query "+id+" aborted by user" {
		t.Fatalf("got %v, want exactly %q", err, "Query "+id+" aborted by user")
	}
	eventually(t, "the coordinator's DELETE", func() bool { return cancelled(c, id) })
	if c.Statements() != 1 {
		t.Errorf("%d statements ran: the run went on after Ctrl-C", c.Statements())
	}
}

// tlsCoordinator starts a coordinator serving https with certs' server
// certificate; clientCA makes it require a client certificate of the CA.
func tlsCoordinator(t *testing.T, certs *testtls.Files, clientCA bool) *coordinator.Coordinator {
	t.Helper()
	serverTLS, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	if clientCA {
		pool := x509.NewCertPool()
		b, err := os.ReadFile(certs.CAFile)
		if err != nil || !pool.AppendCertsFromPEM(b) {
			t.Fatalf("reading the CA: %v", err)
		}
		serverTLS.ClientCAs, serverTLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	c, err := coordinator.Start(coordinator.Options{TLS: serverTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// trino-cli's TLS flags, over --server https://.
func TestQueryTLSFlags(t *testing.T) {
	dir := t.TempDir()
	certs, err := testtls.Generate(dir, "flags")
	if err != nil {
		t.Fatal(err)
	}
	c := tlsCoordinator(t, certs, false)
	https := "https://" + c.Addr()
	for _, args := range [][]string{
		{"--truststore-path", certs.CAFile},
		{"--truststore-path", certs.CAFile, "--truststore-password", "changeit"},
		{"--insecure"},
	} {
		args = append([]string{"query", "--server", https, "-e", "SELECT * FROM rows(1)"}, args...)
		if out, stderr, err := run(args, ""); err != nil || out != "\"1\"\n" {
			t.Errorf("%q: %q, %v\n%s", args, out, err, stderr)
		}
	}
	// Without them the server's certificate is not trusted.
	if _, _, err := run([]string{"query", "--server", https, "-e", "SELECT 1"}, ""); err == nil {
		t.Error("an untrusted certificate was accepted")
	}

	// A client certificate and its key, in one PEM file.
	mutual := tlsCoordinator(t, certs, true)
	keystore := filepath.Join(dir, "client.pem")
	var pemFile []byte
	for _, f := range []string{certs.ClientCertFile, certs.ClientKeyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pemFile = append(pemFile, b...)
	}
	if err := os.WriteFile(keystore, pemFile, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"query", "--server", "https://" + mutual.Addr(), "--truststore-path", certs.CAFile, "-e", "SELECT 1"}
	if _, _, err := run(args, ""); err == nil {
		t.Error("the coordinator that wants a client certificate accepted none")
	}
	if _, stderr, err := run(append(args, "--keystore-path", keystore, "--keystore-password", "changeit"), ""); err != nil || mutual.Statements() != 1 {
		t.Errorf("--keystore-path: %v, %d statements\n%s", err, mutual.Statements(), stderr)
	}

	// --password goes over https.
	t.Setenv("PRESTO_PASSWORD", "from-env")
	if _, stderr, err := run([]string{"query", "--server", https, "--insecure", "--user", "alice", "--password", "-e", "SELECT 1"}, ""); err != nil {
		t.Fatalf("--password over --server https: %v\n%s", err, stderr)
	}
	if got := lastRequestOf(t, c).Password; got != "from-env" {
		t.Errorf("the coordinator saw password %q", got)
	}
}

// Bad TLS flags, and the flags the driver cannot honour yet, fail with
// what to do instead: never "unknown flag", never a secret, and no
// statement is sent.
func TestQueryFlagsUsersTryFirst(t *testing.T) {
	c := startCoordinators(t, 1)[0]
	dir := t.TempDir()
	jks := filepath.Join(dir, "truststore.jks")
	if err := os.WriteFile(jks, []byte("\xfe\xed\xfe\xed\x00\x00\x00\x02binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	certs, err := testtls.Generate(dir, "bad")
	if err != nil {
		t.Fatal(err)
	}
	encrypted := filepath.Join(dir, "encrypted.pem")
	cert, _ := os.ReadFile(certs.ClientCertFile)
	if err := os.WriteFile(encrypted, append(cert, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	https := "https://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--extra-credential", "s3cret"}, "--extra-credential (the 1. one, not shown): want name=value"},
		{[]string{"--role", "hive"}, "--role (the 1. one, not shown): want catalog=role"},
		{[]string{"--extra-credential", "a,b=s3cret"}, `credential "a,b": the name may not hold ','`},
		{[]string{"--network-logging", "HEADERS"}, "use --network-logging BASIC"},
		{[]string{"--network-logging", "LOUD"}, "want NONE, BASIC, HEADERS or BODY"},
		{[]string{"--truststore-path", jks}, "keytool -exportcert"},
		{[]string{"--keystore-path", jks}, "openssl pkcs12"},
		{[]string{"--keystore-path", certs.CAFile}, "no private key"},
		{[]string{"--keystore-path", encrypted, "--keystore-password", "s3cret"}, "the key is encrypted"},
		{[]string{"--truststore-password", "s3cret"}, "needs --truststore-path"},
		{[]string{"--keystore-password", "s3cret"}, "needs --keystore-path"},
		{[]string{"--truststore-path", filepath.Join(dir, "missing.pem")}, "no such file"},
	} {
		args := append([]string{"query", "--server", https, "-e", "SELECT 1"}, tc.args...)
		_, _, err := run(args, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "unknown flag") {
			t.Errorf("%q: got %v, want an error containing %q (and no secret)", tc.args, err, tc.want)
		}
	}
	// The TLS flags with http:// say so, rather than going without TLS.
	if _, _, err := run([]string{"query", "--server", c.URL(), "--insecure", "-e", "SELECT 1"}, ""); err == nil || !strings.Contains(err.Error(), "want https://") {
		t.Errorf("--insecure with http://: %v", err)
	}
	if c.Statements() != 0 {
		t.Errorf("%d statements sent despite the refused flags", c.Statements())
	}

	// --network-logging BASIC shows the driver's debug logs; NONE does not.
	_, stderr, err := run([]string{"query", "--server", c.URL(), "--network-logging", "basic", "-e", "SELECT fail('boom')"}, "")
	if err == nil || !strings.Contains(stderr, "level=DEBUG") {
		t.Errorf("--network-logging BASIC: %v, stderr %q", err, stderr)
	}
	_, stderr, _ = run([]string{"query", "--server", c.URL(), "--network-logging", "NONE", "-e", "SELECT fail('boom')"}, "")
	if strings.Contains(stderr, "level=DEBUG") {
		t.Errorf("--network-logging NONE logged %q", stderr)
	}
}

// TestQueryAuthFlags checks that --access-token, --role and
// --extra-credential reach the coordinator as trino-cli sends them, and
// that a token over plain http is refused without being shown.
func TestQueryAuthFlags(t *testing.T) {
	certs, err := testtls.Generate(t.TempDir(), "auth")
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino, TLS: serverTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const token = "tok-s3cret"
	args := []string{"query", "--dsn", "trino://" + c.Addr() + "/hive?ssl_ca=" + certs.CAFile, "--user", "alice",
		"--access-token", token, "--role", "hive=admin", "--role", "system=ALL",
		"--extra-credential", "s3.key=cred s3cret", "-e", "SELECT 1"}
	if _, stderr, err := run(args, ""); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	got := lastRequestOf(t, c).Identity
	if got.Get("Authorization") != "Bearer "+token || got.Get("X-Trino-Role") != "hive=ROLE%7Badmin%7D,system=ALL" ||
		got.Get("X-Trino-Extra-Credential") != "s3.key=cred+s3cret" {
		t.Fatalf("the coordinator got %v", got)
	}

	plain := startCoordinators(t, 1)[0]
	_, _, err = run([]string{"query", "--server", plain.URL(), "--access-token", token, "-e", "SELECT 1"}, "")
	if err == nil || !strings.Contains(err.Error(), "https only") || strings.Contains(err.Error(), token) || plain.Statements() != 0 {
		t.Fatalf("a token over http: %v, %d statements", err, plain.Statements())
	}
}
