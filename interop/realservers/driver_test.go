package realservers

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/zkpresto/zkpresto/driver"
)

func open(t *testing.T, f *flavourFleet, extra string) *sql.DB {
	t.Helper()
	db, err := sql.Open("zkpresto", f.cluster.DSN(extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// servedBy is the node id of the coordinator that ran a statement: each
// server is a cluster of one, so system.runtime.nodes lists only itself.
const servedBy = "SELECT node_id FROM system.runtime.nodes"

// servingNodes runs servedBy n times on q (a *sql.DB or a *sql.Tx) and
// counts the statements each node ran; what names the statements in a
// failure.
func servingNodes(t *testing.T, c context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, n int, what string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for i := 0; i < n; i++ {
		var node string
		if err := q.QueryRowContext(c, servedBy).Scan(&node); err != nil {
			t.Fatalf("%s, statement %d: %v", what, i, err)
		}
		seen[node]++
	}
	return seen
}

// Each strategy reaches both real coordinators, and every statement runs.
func TestDriverStrategiesAcrossTwoCoordinators(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		for _, strategy := range []string{"random", "poll", "weighted", "p2c", "least_active", "shared_p2c"} {
			t.Run(strategy, func(t *testing.T) {
				db := open(t, f, ";zooKeeperStrategy="+strategy+"?user=alice")
				seen := servingNodes(t, ctx(t), db, 16, strategy)
				if len(seen) != 2 {
					t.Fatalf("16 statements with %s ran on %v; want both coordinators", strategy, seen)
				}
			})
		}
	})
}

// A result of 100,000 rows arrives whole and in order across its pages.
func TestDriverMultiPageResult(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, "?user=alice")
		rows, err := db.QueryContext(ctx(t), "SELECT custkey FROM tpch.sf1.customer WHERE custkey <= 100000 ORDER BY custkey")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var want int64 = 1
		for rows.Next() {
			var k int64
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			if k != want {
				t.Fatalf("row %d is custkey %d", want, k)
			}
			want++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want-1 != 100000 {
			t.Fatalf("got %d rows, want 100000", want-1)
		}
	})
}
