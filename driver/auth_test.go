package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// authSecret is a credential value no error, log or String may show.
const authSecret = "s3cr3t,=+CANARY"

// tlsCoordinator starts a coordinator of flavour on https and returns it
// with the DSN key that trusts it.
func tlsCoordinator(t *testing.T, flavour coordinator.Flavour) (*coordinator.Coordinator, string) {
	t.Helper()
	certs, err := testtls.Generate(t.TempDir(), "coordinators")
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.Start(coordinator.Options{Flavour: flavour, TLS: serverTLS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, "ssl_ca=" + url.QueryEscape(certs.CAFile)
}

// TestClientKeysHeaders checks the headers the coordinator sees for the
// DSN's roles, extraCredentials, clientInfo, traceToken and
// resourceEstimates, in each flavour's spelling, as trino-client's
// StatementClientV1 writes them: one header per entry, values URL-encoded,
// roles as ROLE{name}.
func TestClientKeysHeaders(t *testing.T) {
	for _, flavour := range []coordinator.Flavour{coordinator.Presto, coordinator.Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c, err := coordinator.Start(coordinator.Options{Flavour: flavour})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			scheme, prefix := "presto", "X-Presto-"
			if flavour == coordinator.Trino {
				scheme, prefix = "trino", "X-Trino-"
			}
			cred := strings.ReplaceAll(url.QueryEscape("s3:"+authSecret+";other:a b"), "+", "%20")
			db, err := sql.Open("zkpresto", scheme+"://"+c.Addr()+"/hive?user=alice"+
				"&roles=hive:admin;system:all&extraCredentials="+cred+"&clientInfo=dashboards"+
				"&traceToken=trace-42&resourceEstimates=EXECUTION_TIME:10m;PEAK_MEMORY:2GB")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("SELECT 1"); err != nil {
				t.Fatal(err)
			}
			reqs := c.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d submissions, want 1", len(reqs))
			}
			got := reqs[0].Identity
			want := map[string][]string{
				prefix + "Role":              {"hive=ROLE%7Badmin%7D,system=ALL"},
				prefix + "Extra-Credential":  {"other=a+b", "s3=" + url.QueryEscape(authSecret)},
				prefix + "Trace-Token":       {"trace-42"},
				prefix + "Resource-Estimate": {"EXECUTION_TIME=10m", "PEAK_MEMORY=2GB"},
			}
			if !reflect.DeepEqual(map[string][]string(got), want) {
				t.Fatalf("the coordinator got\n%v\nwant\n%v", got, want)
			}
			if reqs[0].ClientInfo != "dashboards" {
				t.Fatalf("client info %q, want dashboards", reqs[0].ClientInfo)
			}
			// The statement's pages carry none of the per-statement headers.
			for _, call := range c.Calls() {
				if call.Method == "GET" && call.Identity != nil {
					t.Fatalf("GET %s carried %v", call.Path, call.Identity)
				}
			}
		})
	}
}

// TestClientKeysRolesFollowSetRole checks that SET ROLE replaces a DSN
// role for the connection's later statements, and that a reset
// connection goes back to the DSN's.
func TestClientKeysRolesFollowSetRole(t *testing.T) {
	cs, dsn := sessionFleet(t, coordinator.Trino)
	db, err := sql.Open("zkpresto", dsn+"&roles=hive:admin")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	execOn(t, conn, "SET ROLE analyst IN hive")
	execOn(t, conn, "SELECT 1")
	if got := lastSubmission(t, cs).Identity.Get("X-Trino-Role"); got != "hive=ROLE%7Banalyst%7D" {
		t.Fatalf("after SET ROLE the role header is %q", got)
	}
	conn.Close()
	conn, err = db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	execOn(t, conn, "SELECT 1")
	if got := lastSubmission(t, cs).Identity.Get("X-Trino-Role"); got != "hive=ROLE%7Badmin%7D" {
		t.Fatalf("after a reset the role header is %q", got)
	}
}

// TestAccessToken checks that the DSN's accessToken is sent as
// Authorization: Bearer on every request of a statement, over https.
func TestAccessToken(t *testing.T) {
	c, tlsKey := tlsCoordinator(t, coordinator.Trino)
	db, err := sql.Open("zkpresto", "trino://"+c.Addr()+"?user=alice&"+tlsKey+"&accessToken="+url.QueryEscape(authSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	calls := c.Calls()
	if len(calls) < 2 {
		t.Fatalf("%d requests, want a submission and its pages", len(calls))
	}
	for _, call := range calls {
		if got := call.Identity.Get("Authorization"); got != "Bearer "+authSecret {
			t.Fatalf("%s %s: Authorization %q", call.Method, call.Path, got)
		}
	}
}

// TestAccessTokenSource checks that the token source is asked for every
// request, that its failure fails the statement without sending it or
// charging the coordinator, and that it is refused without TLS or with
// another credential.
func TestAccessTokenSource(t *testing.T) {
	c, tlsKey := tlsCoordinator(t, coordinator.Presto)
	cfg, err := zkdriver.ParseDSN("presto://" + c.Addr() + "?user=alice&" + tlsKey)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	var fail atomic.Bool
	errIdP := errors.New("identity provider unreachable")
	source := func(ctx context.Context) (string, error) {
		n := calls.Add(1)
		if fail.Load() {
			return "", errIdP
		}
		return "token-" + string(rune('0'+n%10)), nil
	}
	connector, err := zkdriver.NewConnector(cfg, zkdriver.WithAccessTokenSource(source))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	got := c.Calls()
	if int64(len(got)) != calls.Load() {
		t.Fatalf("%d requests, %d tokens asked for: want one per request", len(got), calls.Load())
	}
	for i, call := range got {
		if want := "Bearer token-" + string(rune('0'+(i+1)%10)); call.Identity.Get("Authorization") != want {
			t.Fatalf("request %d: Authorization %q, want %q", i, call.Identity.Get("Authorization"), want)
		}
	}

	fail.Store(true)
	before := len(c.Calls())
	_, err = db.Exec("SELECT 1")
	var tokenErr *zkdriver.AccessTokenError
	if !errors.As(err, &tokenErr) || !errors.Is(err, errIdP) {
		t.Fatalf("a failing source: %v, want an *AccessTokenError wrapping its error", err)
	}
	if n := len(c.Calls()); n != before {
		t.Fatalf("a failing source: %d requests sent", n-before)
	}
	if st := connector.Stats(); st.Nodes[0].Failures != 0 {
		t.Fatalf("the coordinator was charged %d failures for the source's", st.Nodes[0].Failures)
	}

	for _, tc := range []struct{ dsn, want string }{
		{"presto://" + c.Addr() + "?user=alice", "https only"},
		{"presto://" + c.Addr() + "?user=alice&password=pw&" + tlsKey, "a password and WithAccessTokenSource"},
		{"presto://" + c.Addr() + "?user=alice&accessToken=t&" + tlsKey, "accessToken and WithAccessTokenSource"},
	} {
		cfg, err := zkdriver.ParseDSN(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zkdriver.NewConnector(cfg, zkdriver.WithAccessTokenSource(source)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewConnector(%s) = %v, want %q", tc.dsn, err, tc.want)
		}
	}
}
