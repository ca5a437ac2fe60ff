package driver_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// TestDriverLogsDiscoveryChangesAndEjections checks that the driver's
// logger hears, once each and naming the ensemble and the path, of the
// coordinators found, one joining, one ejected and one leaving.
func TestDriverLogsDiscoveryChangesAndEjections(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	c1, c2 := f.Coordinators[0], f.Coordinators[1]
	if _, err := f.Register(c1, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	cfg, err := zkdriver.ParseDSN(f.DSN(";zooKeeperStrategy=poll?user=alice"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	connector, err := zkdriver.NewConnector(cfg, zkdriver.WithLogger(logs.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	where := []string{"ensemble=" + f.Ensemble(), "path=/" + f.Namespace}
	wait := func(parts ...string) {
		t.Helper()
		parts = append(parts, where...)
		waitFor(t, strings.Join(parts, " "), func() bool { return countLines(logs.String(), parts...) > 0 })
	}
	if _, err := db.ExecContext(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	wait(`msg="coordinators found"`, "nodes=1", c1.Addr())

	if _, err := f.Register(c2, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	wait(`msg="coordinator joined"`, "node="+c2.Addr())

	// c2 stops answering but stays registered: statements fail over from
	// it until it is ejected.
	c2.Close()
	waitFor(t, "the ejection", func() bool {
		if _, err := db.ExecContext(context.Background(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		return countLines(logs.String(), `msg="coordinator ejected"`) > 0
	})
	wait("level=WARN", `msg="coordinator ejected"`, "addr="+c2.Addr())

	if err := f.Deregister(c2); err != nil {
		t.Fatal(err)
	}
	wait(`msg="coordinator left"`, "node="+c2.Addr())
	for _, msg := range []string{`msg="coordinator joined"`, `msg="coordinator ejected"`, `msg="coordinator left"`} {
		if n := countLines(logs.String(), msg); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", msg, n, logs.String())
		}
	}
}

// countLines counts the lines of s that hold every one of parts.
func countLines(s string, parts ...string) int {
	n := 0
	for line := range strings.Lines(s) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}
