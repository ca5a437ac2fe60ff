package coordinator

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// exchange sends one request with a plain HTTP client and returns the response (body read
// and closed) and its body.
func exchange(t *testing.T, method, uri string, header http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, uri, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s %s: %v", method, uri, err)
	}
	return resp, b
}

// runRaw submits stmt with the given headers and polls to the end. It returns the final
// page, the headers of the final answer and every row.
func runRaw(t *testing.T, c *Coordinator, header http.Header, stmt string) (wireResults, http.Header, [][]any) {
	t.Helper()
	resp, body := exchange(t, http.MethodPost, c.URL()+"/v1/statement", header, stmt)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("submit %q: status %d: %s", stmt, resp.StatusCode, body)
	}
	var page wireResults
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	var rows [][]any
	for page.NextURI != "" {
		resp, body = exchange(t, http.MethodGet, page.NextURI, header, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("poll %s: status %d: %s", page.NextURI, resp.StatusCode, body)
		}
		page = wireResults{}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		rows = append(rows, page.Data...)
	}
	return page, resp.Header, rows
}

func hdr(kv ...string) http.Header {
	h := make(http.Header)
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// lastRequest returns the most recent submission.
func lastRequest(t *testing.T, c *Coordinator) Request {
	t.Helper()
	reqs := c.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request recorded")
	}
	return reqs[len(reqs)-1]
}

func TestFlavourSetsResponsePrefix(t *testing.T) {
	for _, tc := range []struct {
		flavour     Flavour
		prefix      string
		otherPrefix string
	}{
		{Presto, "X-Presto-", "X-Trino-"},
		{Trino, "X-Trino-", "X-Presto-"},
	} {
		t.Run(string(tc.flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: tc.flavour})
			if c.Flavour() != tc.flavour {
				t.Fatalf("Flavour() = %q", c.Flavour())
			}
			final, h, rows := runRaw(t, c, hdr(tc.prefix+"User", "u"), "SET SESSION hive.compression = 'a b,c'")
			// PrestoDB answers the row "result" true, Trino no row at all.
			if final.Stats.State != "FINISHED" || (tc.flavour == Presto && (len(rows) != 1 || rows[0][0] != true)) || (tc.flavour == Trino && len(rows) != 0) {
				t.Fatalf("SET SESSION ended %+v with rows %v", final, rows)
			}
			if got := h.Get(tc.prefix + "Set-Session"); got != "hive.compression="+url.QueryEscape("a b,c") {
				t.Errorf("%sSet-Session = %q", tc.prefix, got)
			}
			if got := h.Get(tc.otherPrefix + "Set-Session"); got != "" {
				t.Errorf("%sSet-Session = %q on a %s coordinator", tc.otherPrefix, got, tc.flavour)
			}
			var info nodeInfo
			getJSON(t, c.URL()+"/v1/info", http.StatusOK, &info)
			if tc.flavour == Trino && info.NodeVersion.Version != DefaultTrinoVersion {
				t.Errorf("Trino version = %q", info.NodeVersion.Version)
			}
		})
	}
	if _, err := Start(Options{Flavour: "mysql"}); err == nil {
		t.Fatal("Start with an unknown flavour succeeded")
	}
}

func TestPrefixesReadAndRecorded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		header   http.Header
		wantUser string
		trino    bool
		presto   int
		trinoN   int
	}{
		{"presto reads presto", Options{}, hdr("X-Presto-User", "a", "X-Presto-Catalog", "hive"), "a", false, 2, 0},
		{"presto takes trino", Options{}, hdr("X-Trino-User", "a", "X-Trino-Catalog", "hive"), "a", true, 0, 2},
		{"strict presto ignores trino", Options{StrictPrefix: true}, hdr("X-Trino-User", "a"), "", false, 0, 1},
		{"trino ignores presto", Options{Flavour: Trino}, hdr("X-Presto-User", "a", "X-Presto-Catalog", "hive"), "", false, 2, 0},
		{"trino reads trino", Options{Flavour: Trino}, hdr("X-Trino-User", "a", "X-Trino-Catalog", "hive"), "a", true, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, tc.opts)
			_, _, rows := runRaw(t, c, tc.header, "SELECT 1")
			if len(rows) != 1 || rows[0][1] != tc.wantUser {
				t.Fatalf("describe rows = %v, want user %q", rows, tc.wantUser)
			}
			r := lastRequest(t, c)
			if r.User != tc.wantUser || r.Trino != tc.trino || r.PrestoHeaders != tc.presto || r.TrinoHeaders != tc.trinoN {
				t.Fatalf("request = %+v", r)
			}
			if r.HeaderBytes < len("X-Presto-User: a\r\n") {
				t.Fatalf("HeaderBytes = %d", r.HeaderBytes)
			}
		})
	}
}

// conn returns one connection of a presto-go-client database: session and transaction
// state live in the connection.
func conn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	cn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("Conn: %v", err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	return cn
}

func TestSetSessionThroughClient(t *testing.T) {
	for _, tc := range []struct {
		flavour Flavour
		scheme  string
	}{{Presto, "presto"}, {Trino, "trino"}} {
		t.Run(string(tc.flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: tc.flavour})
			cn := conn(t, openDB(t, c, tc.scheme, "alice", "/hive/default"))
			ctx := context.Background()
			if _, err := cn.ExecContext(ctx, "SET SESSION query_max_run_time = '2h'"); err != nil {
				t.Fatalf("SET SESSION: %v", err)
			}
			if _, err := cn.ExecContext(ctx, "SELECT 1"); err != nil {
				t.Fatalf("SELECT: %v", err)
			}
			if r := lastRequest(t, c); r.SessionProperties["query_max_run_time"] != "2h" || r.User != "alice" {
				t.Fatalf("statement after SET SESSION = %+v", r)
			}
			if _, err := cn.ExecContext(ctx, "RESET SESSION query_max_run_time"); err != nil {
				t.Fatalf("RESET SESSION: %v", err)
			}
			if _, err := cn.ExecContext(ctx, "SELECT 2"); err != nil {
				t.Fatalf("SELECT: %v", err)
			}
			if r := lastRequest(t, c); len(r.SessionProperties) != 0 {
				t.Fatalf("session after RESET SESSION = %v", r.SessionProperties)
			}
		})
	}
}

func TestSessionStatementHeaders(t *testing.T) {
	for _, tc := range []struct {
		flavour Flavour
		stmt    string
		header  http.Header // without prefix
	}{
		{Presto, "RESET SESSION hive.x", hdr("Clear-Session", "hive.x")},
		{Presto, `SET SESSION "Hive".x = 42;`, hdr("Set-Session", "Hive.x=42")},
		{Presto, "USE tpch.tiny", hdr("Set-Catalog", "tpch", "Set-Schema", "tiny")},
		{Presto, "use sf1", hdr("Set-Schema", "sf1")},
		{Trino, "SET PATH hive.fns, system", hdr("Set-Path", "hive.fns, system")},
		{Trino, "SET ROLE admin IN hive", hdr("Set-Role", "hive="+url.QueryEscape("ROLE{admin}"))},
		{Presto, "SET ROLE ALL", hdr("Set-Role", "cat=ALL")},
		{Trino, "SET SESSION AUTHORIZATION 'bob'", hdr("Set-Authorization-User", "bob")},
		{Trino, "RESET SESSION AUTHORIZATION", hdr("Reset-Authorization-User", "true")},
		{Presto, "PREPARE q1 FROM SELECT * FROM rows(?)", hdr("Added-Prepare", "q1="+url.QueryEscape("SELECT * FROM rows(?)"))},
	} {
		t.Run(tc.stmt, func(t *testing.T) {
			c := start(t, Options{Flavour: tc.flavour})
			p := tc.flavour.HeaderPrefix()
			final, h, _ := runRaw(t, c, hdr(p+"User", "u", p+"Catalog", "cat"), tc.stmt)
			if final.Error != nil {
				t.Fatalf("%s failed: %+v", tc.stmt, final.Error)
			}
			for name, want := range tc.header {
				if got := h.Values(p + name); !slices.Equal(got, want) {
					t.Errorf("%s%s = %q, want %q", p, name, got, want)
				}
			}
		})
	}
	// Presto has no SET SESSION AUTHORIZATION; the Presto flavour refuses it as a query error.
	c := start(t, Options{})
	final, _, _ := runRaw(t, c, hdr("X-Presto-User", "u"), "SET SESSION AUTHORIZATION bob")
	if final.Error == nil || final.Error.ErrorName != "NOT_SUPPORTED" {
		t.Fatalf("SET SESSION AUTHORIZATION on Presto = %+v", final)
	}
}

func TestPreparedStatements(t *testing.T) {
	for _, f := range []Flavour{Presto, Trino} {
		t.Run(string(f), func(t *testing.T) {
			c := start(t, Options{Flavour: f, BatchRows: 2})
			p := f.HeaderPrefix()
			_, h, _ := runRaw(t, c, hdr(p+"User", "u"), "PREPARE my_q FROM SELECT * FROM rows(?) WHERE 'a?' <> ?")
			added := h.Get(p + "Added-Prepare")
			if !strings.HasPrefix(added, "my_q=") {
				t.Fatalf("%sAdded-Prepare = %q", p, added)
			}
			// The client sends its prepared statements back with every request.
			session := hdr(p+"User", "u", p+"Prepared-Statement", added+",other="+url.QueryEscape("SELECT 2"))
			final, _, rows := runRaw(t, c, session, "EXECUTE my_q USING 5, 'x'")
			if final.Error != nil || len(rows) != 5 || rows[4][0] != float64(5) {
				t.Fatalf("EXECUTE: %+v, rows %v", final.Error, rows)
			}
			if r := lastRequest(t, c); !slices.Equal(r.PreparedStatements, []string{"my_q", "other"}) {
				t.Fatalf("PreparedStatements = %q", r.PreparedStatements)
			}
			// The describe row tells what ran: the prepared text with its parameters.
			_, _, rows = runRaw(t, c, session, "EXECUTE other")
			if len(rows) != 1 || rows[0][5] != "SELECT 2" {
				t.Fatalf("EXECUTE other rows = %v", rows)
			}
			final, _, _ = runRaw(t, c, session, "EXECUTE my_q USING 1")
			if final.Error == nil || !strings.Contains(final.Error.Message, "Incorrect number of parameters") {
				t.Fatalf("EXECUTE with too few parameters = %+v", final.Error)
			}
			_, h, _ = runRaw(t, c, session, "DEALLOCATE PREPARE my_q")
			if got := h.Get(p + "Deallocated-Prepare"); got != "my_q" {
				t.Fatalf("%sDeallocated-Prepare = %q", p, got)
			}
			// Without the header the statement is unknown: a Presto query error.
			for _, stmt := range []string{"EXECUTE my_q USING 5, 'x'", "DEALLOCATE PREPARE my_q"} {
				final, _, _ = runRaw(t, c, hdr(p+"User", "u"), stmt)
				if final.Error == nil || final.Error.ErrorName != "NOT_FOUND" || !strings.Contains(final.Error.Message, "my_q") {
					t.Fatalf("%s without the header = %+v", stmt, final.Error)
				}
			}
		})
	}
}

func TestLargePreparedStatementHeader(t *testing.T) {
	c := start(t, Options{})
	big := "SELECT '" + strings.Repeat("x", 2<<20) + "'"
	session := hdr("X-Presto-User", "u", "X-Presto-Prepared-Statement", "big="+url.QueryEscape(big))
	final, _, rows := runRaw(t, c, session, "EXECUTE big")
	if final.Error != nil || len(rows) != 1 || rows[0][5] != big {
		t.Fatalf("EXECUTE of a 2 MB statement: %+v", final.Error)
	}
	if r := lastRequest(t, c); r.HeaderBytes < 2<<20 {
		t.Fatalf("HeaderBytes = %d, want at least 2 MB", r.HeaderBytes)
	}
	// Beyond the limit the server refuses the headers, as a real one does.
	tooBig := hdr("X-Presto-User", "u", "X-Presto-Prepared-Statement", "big="+strings.Repeat("x", maxHeaderBytes+64<<10))
	resp, _ := exchange(t, http.MethodPost, c.URL()+"/v1/statement", tooBig, "EXECUTE big")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("headers over the limit: status %d, want 431", resp.StatusCode)
	}
	// net/http lingers half a second on a connection it refused before closing it.
	waitFor(t, "the refused connection to close", func() bool { return c.OpenConns() == 0 })
}

func TestTransactionsThroughClient(t *testing.T) {
	for _, tc := range []struct {
		flavour Flavour
		scheme  string
		commit  bool
	}{{Presto, "presto", true}, {Trino, "trino", false}} {
		t.Run(string(tc.flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: tc.flavour})
			ctx := context.Background()
			// The Presto client alone sends no X-*-Transaction-Id outside a
			// transaction, so the servers refuse its START TRANSACTION (seen
			// on Trino 476 and PrestoDB 0.287, interop/realservers).
			if _, err := openDB(t, c, tc.scheme, "alice", "/hive/default").BeginTx(ctx, nil); err == nil || !strings.Contains(err.Error(), "INCOMPATIBLE_CLIENT") {
				t.Fatalf("BeginTx without a transaction header = %v, want INCOMPATIBLE_CLIENT", err)
			}
			// With NONE on every submission outside a transaction, as JDBC
			// and zkpresto's driver send it, transactions work.
			db := openDBVia(t, c, tc.scheme, "alice", "/hive/default", func(next http.RoundTripper) http.RoundTripper {
				return testutil.TransactionNone{Next: next}
			})
			db.SetMaxOpenConns(1) // the transaction state lives in the one connection
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatalf("BeginTx: %v", err)
			}
			started := lastRequest(t, c)
			if started.SQL != "START TRANSACTION" || started.TransactionID != "" {
				t.Fatalf("begin = %+v", started)
			}
			if n := c.Transactions(); n != 1 {
				t.Fatalf("Transactions() = %d after BEGIN, want 1", n)
			}
			var got describeRow
			if err := tx.QueryRowContext(ctx, "SELECT in_tx").Scan(&got.Coordinator, &got.User, &got.Catalog, &got.Schema, &got.Source, &got.Query); err != nil {
				t.Fatalf("query in transaction: %v", err)
			}
			id := lastRequest(t, c).TransactionID
			if id == "" || len(id) != 36 {
				t.Fatalf("statement in the transaction carried id %q", id)
			}
			if tc.commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatalf("end transaction: %v", err)
			}
			if r := lastRequest(t, c); r.TransactionID != id {
				t.Fatalf("COMMIT/ROLLBACK carried %q, want %q", r.TransactionID, id)
			}
			if n := c.Transactions(); n != 0 {
				t.Fatalf("Transactions() = %d after the end, want 0", n)
			}
			if _, err := db.ExecContext(ctx, "SELECT after"); err != nil {
				t.Fatalf("statement after the transaction: %v", err)
			}
			if r := lastRequest(t, c); r.TransactionID != "" {
				t.Fatalf("statement after the transaction carried %q", r.TransactionID)
			}
		})
	}
}

func TestTransactionErrors(t *testing.T) {
	c := start(t, Options{})
	for _, tc := range []struct {
		header  http.Header
		stmt    string
		errName string
	}{
		{hdr("X-Presto-Transaction-Id", "c0ffee00-0000-4000-8000-000000000000"), "SELECT 1", "UNKNOWN_TRANSACTION"},
		{hdr("X-Presto-Transaction-Id", "c0ffee00-0000-4000-8000-000000000000"), "COMMIT", "UNKNOWN_TRANSACTION"},
		{nil, "COMMIT", "NOT_IN_TRANSACTION"},
		{hdr("X-Presto-Transaction-Id", "NONE"), "ROLLBACK", "NOT_IN_TRANSACTION"},
	} {
		final, _, _ := runRaw(t, c, tc.header, tc.stmt)
		if final.Error == nil || final.Error.ErrorName != tc.errName || final.Stats.State != "FAILED" {
			t.Errorf("%s with %v = %+v, want %s", tc.stmt, tc.header, final, tc.errName)
		}
	}
	// A transaction started by hand: nested starts fail, the coordinator forgets it on Stop.
	_, h, _ := runRaw(t, c, hdr("X-Presto-Transaction-Id", "NONE"), "START TRANSACTION READ ONLY")
	id := h.Get("X-Presto-Started-Transaction-Id")
	if id == "" {
		t.Fatal("START TRANSACTION sent no id")
	}
	final, _, _ := runRaw(t, c, hdr("X-Presto-Transaction-Id", id), "START TRANSACTION")
	if final.Error == nil || final.Error.ErrorName != "NOT_SUPPORTED" {
		t.Fatalf("nested START TRANSACTION = %+v", final.Error)
	}
	if _, err := fmt.Sscanf(id, "%8x-", new(uint32)); err != nil {
		t.Fatalf("transaction id %q is not a UUID", id)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	final, _, _ = runRaw(t, c, hdr("X-Presto-Transaction-Id", id), "SELECT 1")
	if final.Error == nil || final.Error.ErrorName != "UNKNOWN_TRANSACTION" {
		t.Fatalf("statement of a transaction lost in a restart = %+v", final.Error)
	}
}

// HEAD /v1/statement checks credentials without starting a query: Trino
// answers 200, Presto has no such resource and answers 405.
func TestStatementHead(t *testing.T) {
	for flavour, want := range map[Flavour]int{Trino: http.StatusOK, Presto: http.StatusMethodNotAllowed} {
		c := start(t, Options{Flavour: flavour})
		resp, _ := exchange(t, http.MethodHead, c.URL()+"/v1/statement", nil, "")
		if resp.StatusCode != want || c.Statements() != 0 {
			t.Fatalf("%s: HEAD /v1/statement answered %s and started %d statements, want %d and none",
				flavour, resp.Status, c.Statements(), want)
		}
	}
}

// Session and Prepared-Statement lines: pairs in order across lines, blanks around them
// trimmed, values URL-decoded (a value that does not decode is kept), names as written,
// pairs without a name skipped; a caller that stops early stops the walk.
func TestHeaderPairs(t *testing.T) {
	lines := []string{"a=x%2Cy, b%2E=2 ,=lost,", "c, d=100%", "e=1"}
	var got []string
	for name, value := range headerPairs(lines) {
		got = append(got, name+"|"+value)
		if name == "d" {
			break
		}
	}
	if want := []string{"a|x,y", "b%2E|2", "c|", "d|100%"}; !slices.Equal(got, want) {
		t.Fatalf("pairs %q, want %q", got, want)
	}
}
