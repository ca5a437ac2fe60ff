package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// sessionFleet starts two coordinators of flavour and returns a DSN that
// sends statements to them in turn, so that each statement after a session
// change runs on the coordinator that did not answer it.
func sessionFleet(t *testing.T, flavour coordinator.Flavour) ([]*coordinator.Coordinator, string) {
	t.Helper()
	cs, err := coordinator.StartFleet(2, coordinator.Options{Flavour: flavour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	scheme := "presto"
	if flavour == coordinator.Trino {
		scheme = "trino"
	}
	return cs, scheme + "://" + cs[0].Addr() + "," + cs[1].Addr() + "/hive/default;zooKeeperStrategy=ROUND_ROBIN?user=alice&query_max_run_time=2h"
}

// lastSubmission is the latest statement either coordinator received.
func lastSubmission(t *testing.T, cs []*coordinator.Coordinator) coordinator.Request {
	t.Helper()
	var last coordinator.Request
	for _, c := range cs {
		for _, r := range c.Requests() {
			if r.Time.After(last.Time) {
				last = r
			}
		}
	}
	return last
}

// execOn runs stmt on conn and returns the coordinator that ran it.
func execOn(t *testing.T, conn *sql.Conn, stmt string) string {
	t.Helper()
	if _, err := conn.ExecContext(context.Background(), stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return nodeOf(t, conn)
}

func nodeOf(t *testing.T, conn *sql.Conn) string {
	t.Helper()
	var addr string
	if err := conn.Raw(func(dc any) error {
		addr = dc.(*zkdriver.Conn).Node().Addr
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return addr
}

func sessionOf(t *testing.T, conn *sql.Conn) zkdriver.Session {
	t.Helper()
	var s zkdriver.Session
	if err := conn.Raw(func(dc any) error {
		s = dc.(*zkdriver.Conn).Session()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSessionChangesFollowTheConnectionToEveryCoordinator(t *testing.T) {
	for _, flavour := range []coordinator.Flavour{coordinator.Presto, coordinator.Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			cs, dsn := sessionFleet(t, flavour)
			db, err := sql.Open("zkpresto", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()

			// Every change is answered by one coordinator and must reach
			// the next statement, which the strategy sends to the other.
			steps := []struct {
				stmt  string
				check func(coordinator.Request) bool
			}{
				{"USE tpch.tiny", func(r coordinator.Request) bool { return r.Catalog == "tpch" && r.Schema == "tiny" }},
				{"USE sf1", func(r coordinator.Request) bool { return r.Catalog == "tpch" && r.Schema == "sf1" }},
				{"SET SESSION join_distribution_type = 'BROADCAST, or not'", func(r coordinator.Request) bool {
					return r.SessionProperties["join_distribution_type"] == "BROADCAST, or not" && r.SessionProperties["query_max_run_time"] == "2h"
				}},
				{"SET SESSION hive.bucket_execution_enabled = false", func(r coordinator.Request) bool {
					return r.SessionProperties["hive.bucket_execution_enabled"] == "false"
				}},
				{"RESET SESSION join_distribution_type", func(r coordinator.Request) bool {
					_, set := r.SessionProperties["join_distribution_type"]
					return !set && r.SessionProperties["hive.bucket_execution_enabled"] == "false"
				}},
				{"SET PATH hive.functions", func(r coordinator.Request) bool { return r.Path == "hive.functions" }},
				{"SET ROLE admin IN hive", func(r coordinator.Request) bool {
					return r.Role == "hive="+url.QueryEscape("ROLE{admin}")
				}},
				{"PREPARE q1 FROM SELECT * FROM rows(?)", func(r coordinator.Request) bool {
					return slices.Equal(r.PreparedStatements, []string{"q1"})
				}},
				{"PREPARE q2 FROM SELECT 'a, b'", func(r coordinator.Request) bool {
					return slices.Equal(r.PreparedStatements, []string{"q1", "q2"})
				}},
				{"DEALLOCATE PREPARE q1", func(r coordinator.Request) bool {
					return slices.Equal(r.PreparedStatements, []string{"q2"})
				}},
			}
			for _, step := range steps {
				changedOn := execOn(t, conn, step.stmt)
				probeOn := execOn(t, conn, "SELECT 1")
				if probeOn == changedOn {
					t.Fatalf("after %q both statements ran on %s: the test proves nothing", step.stmt, probeOn)
				}
				if r := lastSubmission(t, cs); !step.check(r) {
					t.Fatalf("after %q the next statement reached %s as %+v", step.stmt, probeOn, r)
				}
			}
			// A statement prepared on one coordinator runs on the other.
			execOn(t, conn, "PREPARE q3 FROM SELECT n FROM rows(?)")
			var n int
			if err := conn.QueryRowContext(ctx, "EXECUTE q3 USING 1").Scan(&n); err != nil || n != 1 {
				t.Fatalf("EXECUTE q3 on the other coordinator: %d, %v", n, err)
			}
			got := sessionOf(t, conn)
			want := zkdriver.Session{
				Catalog: "tpch", Schema: "sf1", Path: "hive.functions",
				Properties:         map[string]string{"query_max_run_time": "2h", "hive.bucket_execution_enabled": "false"},
				Roles:              map[string]string{"hive": "ROLE{admin}"},
				PreparedStatements: map[string]string{"q2": "SELECT 'a, b'", "q3": "SELECT n FROM rows(?)"},
			}
			if got.Catalog != want.Catalog || got.Schema != want.Schema || got.Path != want.Path ||
				!maps.Equal(got.Properties, want.Properties) || !maps.Equal(got.Roles, want.Roles) ||
				!maps.Equal(got.PreparedStatements, want.PreparedStatements) {
				t.Fatalf("Session() = %+v, want %+v", got, want)
			}
			for _, r := range lastSubmissionAll(cs) {
				if (flavour == coordinator.Trino) != r.Trino {
					t.Fatalf("a %s coordinator got the session in the other spelling: %+v", flavour, r)
				}
			}
		})
	}
}

func lastSubmissionAll(cs []*coordinator.Coordinator) []coordinator.Request {
	var all []coordinator.Request
	for _, c := range cs {
		all = append(all, c.Requests()...)
	}
	return all
}

func TestSetSessionAuthorizationChangesTheUserUntilReset(t *testing.T) {
	cs, dsn := sessionFleet(t, coordinator.Trino)
	db, err := sql.Open("zkpresto", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	execOn(t, conn, "SET ROLE admin")
	execOn(t, conn, "SET SESSION AUTHORIZATION 'bob'")
	execOn(t, conn, "SELECT 1")
	if r := lastSubmission(t, cs); r.User != "bob" || r.OriginalUser != "alice" || r.Role != "" {
		t.Fatalf("as bob the statement reached the coordinator as user %q, original user %q, role %q", r.User, r.OriginalUser, r.Role)
	}
	if s := sessionOf(t, conn); s.AuthorizationUser != "bob" {
		t.Fatalf("Session().AuthorizationUser = %q", s.AuthorizationUser)
	}
	execOn(t, conn, "RESET SESSION AUTHORIZATION")
	execOn(t, conn, "SELECT 1")
	if r := lastSubmission(t, cs); r.User != "alice" || r.OriginalUser != "" || r.Role != "hive="+url.QueryEscape("ROLE{admin}") {
		t.Fatalf("after the reset the statement reached the coordinator as user %q, original user %q, role %q", r.User, r.OriginalUser, r.Role)
	}
}

func TestPooledConnectionGoesBackToTheDSNSession(t *testing.T) {
	cs, dsn := sessionFleet(t, coordinator.Presto)
	db, err := sql.Open("zkpresto", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // every statement reuses the one connection
	ctx := context.Background()
	for _, stmt := range []string{"USE tpch.tiny", "SET SESSION query_max_run_time = '1m'", "SET PATH x", "PREPARE leak FROM SELECT 1", "SET ROLE admin IN hive"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		r := lastSubmission(t, cs)
		if r.Catalog != "hive" || r.Schema != "default" || r.SessionProperties["query_max_run_time"] != "2h" ||
			len(r.SessionProperties) != 1 || r.Path != "" || r.Role != "" || len(r.PreparedStatements) != 0 {
			t.Fatalf("after %q on a pooled connection, the next caller's statement reached the coordinator as %+v", stmt, r)
		}
	}
	if st := db.Stats(); st.OpenConnections != 1 {
		t.Fatalf("the pool opened %d connections, want the one reused", st.OpenConnections)
	}
}

func TestSessionsOfConcurrentConnectionsStayApart(t *testing.T) {
	cs, dsn := sessionFleet(t, coordinator.Presto)
	db, err := sql.Open("zkpresto", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			schema := fmt.Sprintf("s%d", i)
			for range 5 {
				if _, err := conn.ExecContext(ctx, "USE tpch."+schema); err != nil {
					errs <- err
					return
				}
				var coord, user, catalog, got, source, query string
				if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&coord, &user, &catalog, &got, &source, &query); err != nil {
					errs <- err
					return
				}
				if catalog != "tpch" || got != schema {
					errs <- fmt.Errorf("connection %d ran in %s.%s, want tpch.%s", i, catalog, got, schema)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_ = cs
}

// ExampleConn_Session keeps a session on one connection: USE changes the
// schema of the connection's later statements, and Session reports it.
func ExampleConn_Session() {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	db, err := sql.Open("zkpresto", "presto://"+c.Addr()+"/hive/default?user=alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx) // one connection: one session
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "USE tpch.tiny"); err != nil {
		fmt.Println(err)
		return
	}
	_ = conn.Raw(func(dc any) error {
		s := dc.(*zkdriver.Conn).Session()
		fmt.Println(strings.Join([]string{s.Catalog, s.Schema}, "."))
		return nil
	})
	// Output: tpch.tiny
}
