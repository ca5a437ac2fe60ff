package driver_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// served is one row of the coordinator simulator's default result.
type served struct {
	Coordinator string `db:"coordinator"`
	User        string `db:"user"`
	Catalog     string `db:"catalog"`
	Schema      string `db:"schema"`
	Source      string `db:"source"`
	Query       string `db:"query"`
}

func queryServed(t *testing.T, db *sql.DB, sqlText string) served {
	t.Helper()
	var s served
	err := db.QueryRowContext(context.Background(), sqlText).
		Scan(&s.Coordinator, &s.User, &s.Catalog, &s.Schema, &s.Source, &s.Query)
	if err != nil {
		t.Fatalf("query %q: %v", sqlText, err)
	}
	return s
}

// openPerStatement opens a pool that keeps no idle connection, so every
// statement is a new connection and so a new pick.
func openPerStatement(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("zkpresto", dsn)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

// sortedByAddr returns the coordinators' names in the order discovery sorts
// nodes: by address.
func sortedByAddr(cs []*coordinator.Coordinator) []string {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b *coordinator.Coordinator) int { return strings.Compare(a.Addr(), b.Addr()) })
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name()
	}
	return names
}

var allFormats = []discovery.Format{discovery.FormatHive, discovery.FormatCurator, discovery.FormatHostPort, discovery.FormatZkpresto}

func TestPollVisitsCoordinatorsInTurnInEveryFormat(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	for _, format := range allFormats {
		t.Run(format.String(), func(t *testing.T) {
			f.Namespace = "poll-" + format.String()
			if err := fleet.CreatePath(f.Conn(), "/"+f.Namespace); err != nil {
				t.Fatal(err)
			}
			for _, c := range f.Coordinators {
				if _, err := f.Register(c, format, 1); err != nil {
					t.Fatal(err)
				}
			}
			db := openPerStatement(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
			want := sortedByAddr(f.Coordinators)
			var got []string
			for range 3 * len(want) {
				got = append(got, queryServed(t, db, "SELECT 1").Coordinator)
			}
			for i, name := range got {
				if name != want[i%len(want)] {
					t.Fatalf("poll visited %v, want %v repeated", got, want)
				}
			}
		})
	}
}

func TestWeightedFollowsRegisteredWeights(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	weights := []int{1, 3, 9}
	for i, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatZkpresto, weights[i]); err != nil {
			t.Fatal(err)
		}
	}
	seeded := func(o strategy.Options) strategy.Strategy {
		o.Seed = 20261130
		s, _ := strategy.New("weighted", o)
		return s
	}
	db, _ := openConnector(t, f.DSN("?user=alice"), zkdriver.WithStrategy(seeded))
	db.SetMaxIdleConns(0)

	const n = 1300
	counts := map[string]int{}
	for range n {
		counts[queryServed(t, db, "SELECT 1").Coordinator]++
	}
	chi2 := 0.0
	for i, c := range f.Coordinators {
		expected := float64(n) * float64(weights[i]) / 13
		d := float64(counts[c.Name()]) - expected
		chi2 += d * d / expected
	}
	// 13.816 is the chi-square quantile for 2 degrees of freedom at p = 0.001.
	if chi2 > 13.816 || math.IsNaN(chi2) {
		t.Fatalf("counts %v for weights 1:3:9: chi-square %.2f > 13.816", counts, chi2)
	}
	if counts[f.Coordinators[0].Name()] >= counts[f.Coordinators[2].Name()] {
		t.Fatalf("weight 1 node got %v, weight 9 node less", counts)
	}
}

func TestUserHashKeepsEachUserOnOneCoordinator(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	for _, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
	}
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	nodesSeen := map[string]bool{}
	for _, user := range users {
		db := openPerStatement(t, f.DSN(";zooKeeperStrategy=USER_HASH?user="+user))
		first := queryServed(t, db, "SELECT 1")
		if first.User != user {
			t.Fatalf("coordinator saw user %q, want %q", first.User, user)
		}
		for range 10 {
			if got := queryServed(t, db, "SELECT 1").Coordinator; got != first.Coordinator {
				t.Fatalf("user %s moved from %s to %s", user, first.Coordinator, got)
			}
		}
		nodesSeen[first.Coordinator] = true
	}
	for _, c := range f.Coordinators {
		for user, n := range c.Users() {
			for _, other := range f.Coordinators {
				if other != c && other.Users()[user] > 0 {
					t.Fatalf("user %s served by %s (%d) and %s", user, c.Name(), n, other.Name())
				}
			}
		}
	}
	if len(nodesSeen) < 2 {
		t.Fatalf("8 users all hashed to %v", nodesSeen)
	}
}

func TestMembershipChangesReachTheNextConnection(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	c1, c2, c3 := f.Coordinators[0], f.Coordinators[1], f.Coordinators[2]
	for _, c := range []*coordinator.Coordinator{c1, c2} {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
	}
	db, connector := openConnector(t, f.DSN(";zooKeeperStrategy=poll?user=alice"))
	db.SetMaxIdleConns(0)
	for range 4 {
		if got := queryServed(t, db, "SELECT 1").Coordinator; got == c3.Name() {
			t.Fatalf("unregistered %s served a statement", got)
		}
	}
	listed := func(c *coordinator.Coordinator) bool {
		snap, err := connector.Nodes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(snap.Addrs(), c.Addr())
	}

	if _, err := f.Register(c3, discovery.FormatCurator, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch to report the new coordinator", func() bool { return listed(c3) })
	seen := map[string]int{}
	for range 3 {
		seen[queryServed(t, db, "SELECT 1").Coordinator]++
	}
	if seen[c3.Name()] != 1 || seen[c1.Name()] != 1 || seen[c2.Name()] != 1 {
		t.Fatalf("after %s joined, three polls went to %v", c3.Name(), seen)
	}

	if err := f.Deregister(c1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch to report the removed coordinator", func() bool { return !listed(c1) })
	before := c1.Statements()
	for range 10 {
		if got := queryServed(t, db, "SELECT 1").Coordinator; got == c1.Name() {
			t.Fatalf("removed coordinator %s still served", got)
		}
	}
	if c1.Statements() != before {
		t.Fatalf("removed coordinator received %d more statements", c1.Statements()-before)
	}
}

// waitFor polls cond until it holds, failing the test after 15s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, time.Millisecond, what, cond)
}

func TestSessionReachesTheCoordinator(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	c := f.Coordinators[0]
	if _, err := f.Register(c, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	db := openPerStatement(t, f.DSN(";zooKeeperStrategy=random?user=alice&source=etl&client_tags=a,b&client_info=ci&timezone=UTC&query_max_run_time=2h"))
	got := queryServed(t, db, "SELECT 42")
	want := served{Coordinator: c.Name(), User: "alice", Catalog: "hive", Schema: "default", Source: "etl", Query: "SELECT 42"}
	if got != want {
		t.Fatalf("served %+v, want %+v", got, want)
	}
	reqs := c.Requests()
	last := reqs[len(reqs)-1]
	if last.SessionProperties["query_max_run_time"] != "2h" || !slices.Equal(last.ClientTags, []string{"a", "b"}) ||
		last.ClientInfo != "ci" || last.TimeZone != "UTC" {
		t.Fatalf("request reached the coordinator as %+v", last)
	}
}

// Without a timezone in the DSN every statement carries the client's own
// zone, as JDBC does: else each coordinator would use its JVM's, and what
// current_timestamp means would depend on the one the strategy picked.
func TestClientZoneIsTheDefault(t *testing.T) {
	t.Setenv("TZ", "Asia/Kathmandu")
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	c := f.Coordinators[0]
	if _, err := f.Register(c, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	for dsn, want := range map[string]string{
		"?user=alice":                          "Asia/Kathmandu",
		"?user=alice&timezone=America/Chicago": "America/Chicago",
	} {
		db := openPerStatement(t, f.DSN(dsn))
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatal(err)
		}
		reqs := c.Requests()
		if got := reqs[len(reqs)-1].TimeZone; got != want {
			t.Errorf("%s: the statement's zone is %q, want %q", dsn, got, want)
		}
	}
}

func TestSqlxSelectIntoStructs(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	for _, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sqlx.Open("zkpresto", f.DSN(";serverSelectStrategy=polling?user=bob"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var rows []served
	if err := db.Select(&rows, "SELECT * FROM anything"); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].User != "bob" || rows[0].Query != "SELECT * FROM anything" {
		t.Fatalf("Select gave %+v", rows)
	}
	var numbers []struct {
		N int64 `db:"n"`
	}
	if err := db.Select(&numbers, "SELECT n FROM rows(250)"); err != nil {
		t.Fatal(err)
	}
	if len(numbers) != 250 || numbers[0].N != 1 || numbers[249].N != 250 {
		t.Fatalf("rows(250) gave %d rows", len(numbers))
	}
}

func TestStaticHostsWithoutZooKeeper(t *testing.T) {
	cs, err := coordinator.StartFleet(3, coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	hosts := make([]string, len(cs))
	for i, c := range cs {
		hosts[i] = c.Addr()
	}
	db := openPerStatement(t, "presto://"+strings.Join(hosts, ",")+"/tpch/tiny;zooKeeperStrategy=ROUND_ROBIN?user=carol")
	want := sortedByAddr(cs)
	for i := range 6 {
		if got := queryServed(t, db, "SELECT 1").Coordinator; got != want[i%3] {
			t.Fatalf("statement %d went to %s, want %s", i, got, want[i%3])
		}
	}
}

func TestQueryErrorsAreReturned(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	if _, err := f.Register(f.Coordinators[0], discovery.FormatHostPort, 1); err != nil {
		t.Fatal(err)
	}
	db := openPerStatement(t, f.DSN("?user=alice"))
	_, err := db.Exec("SELECT fail('table hive.default.t does not exist')")
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("got %v, want the query error", err)
	}
}

func TestDiscoveryErrorsNameEnsembleAndPath(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{})
	const password = "s3cret-Pa55word"

	t.Run("missing namespace", func(t *testing.T) {
		db := openPerStatement(t, "presto://"+f.Ensemble()+";serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=nowhere/at/all?user=alice&password="+password)
		err := db.Ping()
		assertErr(t, err, password, f.Ensemble(), "/nowhere/at/all", "does not exist")
	})
	t.Run("empty namespace", func(t *testing.T) {
		if err := fleet.CreatePath(f.Conn(), "/empty"); err != nil {
			t.Fatal(err)
		}
		db := openPerStatement(t, "presto://"+f.Ensemble()+";serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=/empty/?user=alice&password="+password)
		err := db.Ping()
		assertErr(t, err, password, f.Ensemble(), "/empty", "no children")
	})
	t.Run("unreachable ensemble", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := l.Addr().String()
		l.Close()
		db := openPerStatement(t, "presto://"+dead+";serviceDiscoveryMode=zooKeeper;zooKeeperConnectTimeout=300ms?user=alice&password="+password)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = db.PingContext(ctx)
		assertErr(t, err, password, dead, "every server refused the connection")
		if ctx.Err() != nil {
			t.Fatalf("Ping ran into the test's deadline instead of the 300ms connect timeout")
		}
	})
}

func assertErr(t *testing.T, err error, password string, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", wants)
	}
	msg := err.Error()
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
	if strings.Contains(msg, password) {
		t.Errorf("error %q contains the password", msg)
	}
}

func TestMalformedDSNFailsInOpen(t *testing.T) {
	for _, dsn := range []string{
		"mysql://zk1:2181/hive",
		"presto://zk1:99999/hive;serviceDiscoveryMode=zooKeeper",
		"presto://zk1:2181/hive;serviceDiscoveryMode=consul",
		"presto://zk1:2181/hive;zooKeeperSessionTimeout=soon",
	} {
		db, err := sql.Open("zkpresto", dsn)
		if err == nil {
			db.Close()
			t.Errorf("sql.Open(%q) succeeded", dsn)
		}
	}
}

func ExampleNewConnector() {
	cfg, err := zkdriver.ParseDSN("presto://zk1:2181,zk2:2181/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperStrategy=weighted?user=alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	connector, err := zkdriver.NewConnector(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	db := sql.OpenDB(connector) // no I/O until the first statement
	defer db.Close()
	fmt.Println(cfg.Ensemble(), cfg.ZooKeeperPath(), cfg.Strategy)
	// Output: zk1:2181,zk2:2181 /presto weighted
}

func TestQueryArgumentsArePositionalAndNamedOnesRefused(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	db := openPerStatement(t, "presto://"+c.Addr()+"/hive/default?user=alice")
	ctx := context.Background()
	var s served
	err = db.QueryRowContext(ctx, "SELECT 'a?' AS x /* ? */, ? -- ?", "v").
		Scan(&s.Coordinator, &s.User, &s.Catalog, &s.Schema, &s.Source, &s.Query)
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT 'a?' AS x /* ? */, 'v' -- ?"; s.Query != want {
		t.Fatalf("coordinator got %q, want %q", s.Query, want)
	}
	err = db.QueryRowContext(ctx, "SELECT 1 WHERE a = ? AND b = ?", sql.Named("b", "x"), sql.Named("a", 1)).Scan(new(string))
	if err == nil || !strings.Contains(err.Error(), "named arguments") {
		t.Fatalf("named arguments: %v, want a refusal", err)
	}
	if _, err := db.ExecContext(ctx, "SELECT ?", 1, 2); err == nil || !strings.Contains(err.Error(), "placeholder") {
		t.Fatalf("two arguments for one placeholder: %v", err)
	}
}
