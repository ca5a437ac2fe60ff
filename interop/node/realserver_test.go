package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/gatewayrig"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// realServers are one real server of each flavour (scripts/fetch-real-servers.sh),
// shared by this package's tests: each started by the first test that
// needs it, stopped by TestMain. Under CI a server that cannot start fails
// the tests; elsewhere a cache without it skips them.
var realServers = map[coordinator.Flavour]*realserver.Shared{
	coordinator.Trino:  {Options: realserver.Options{Flavour: coordinator.Trino}},
	coordinator.Presto: {Options: realserver.Options{Flavour: coordinator.Presto}},
}

// eachReal runs test for each client through two gateway replicas in
// front of the real server of the client's flavour.
func eachReal(t *testing.T, test func(t *testing.T, client string, server *realserver.Server, rig *gatewayrig.Rig)) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			requireNode(t, c.name, c.version)
			server := realServers[c.flavour].Server(t)
			rig := gatewayrig.Start(t, gatewayrig.Options{
				Addrs:       []string{server.Addr()},
				Coordinator: coordinator.Options{Flavour: c.flavour},
			})
			test(t, c.name, server, rig)
		})
	}
}

// 15,000 rows of tpch.tiny.orders, in the pages the real server cuts
// (trino `server/protocol/Query.java`, prestodb
// `presto-main/.../server/protocol/Query.java`, `getNextResult`): every row
// once and in order, as many as the server counts, the query FINISHED.
func TestRealServerManyRows(t *testing.T) {
	eachReal(t, func(t *testing.T, client string, server *realserver.Server, rig *gatewayrig.Rig) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := server.Query(ctx, "SELECT count(*) FROM tpch.tiny.orders")
		if err != nil {
			t.Fatal(err)
		}
		want := int(res.Rows[0][0].(float64))
		before := rig.Hits()
		r := run(t, client, rig.Front, "orders", "tpch", "tiny")
		if r.Error != nil || r.Thrown != nil || len(r.Rows) != want {
			t.Fatalf("%d rows, error %v %v; want %d", len(r.Rows), r.Error, r.Thrown, want)
		}
		previous := 0.0
		for i, row := range r.Rows {
			key, ok := row[0].(float64)
			if !ok || key <= previous {
				t.Fatalf("row %d is %v after %v: out of order", i, row, previous)
			}
			previous = key
		}
		if client == "presto-client" && r.Final != "FINISHED" {
			t.Fatalf("presto-client ended with state %q", r.Final)
		}
		// Both replicas served follow-ups: the client's requests went to
		// one and the other in turn.
		if after := rig.Hits(); after[0] == before[0] || after[1] == before[1] {
			t.Fatalf("requests per replica went from %v to %v: both should have served the query", before, after)
		}
	})
}

// realMissingTable is each server's failure of a query on a missing table,
// as its clients get it: Trino's TABLE_NOT_FOUND with its location (trino
// `SemanticExceptions`, `StandardErrorCode.TABLE_NOT_FOUND`), PrestoDB
// 0.287's SYNTAX_ERROR without (prestodb `SemanticException`, which every
// analysis error is, `StandardErrorCode.SYNTAX_ERROR`).
var realMissingTable = map[coordinator.Flavour]map[string]any{
	coordinator.Trino: {
		"message": "line 1:15: Table 'tpch.tiny.no_such_table' does not exist", "errorName": "TABLE_NOT_FOUND", "errorType": "USER_ERROR",
	},
	coordinator.Presto: {
		"message": "Table tpch.tiny.no_such_table does not exist", "errorName": "SYNTAX_ERROR", "errorType": "USER_ERROR",
	},
}

// A query the server fails reaches the client with the server's error,
// where the client shows one.
func TestRealServerFailure(t *testing.T) {
	eachReal(t, func(t *testing.T, client string, server *realserver.Server, rig *gatewayrig.Rig) {
		r := run(t, client, rig.Front, "missing", "tpch", "tiny")
		if r.Thrown != nil || r.Error == nil || len(r.Rows) != 0 {
			t.Fatalf("got %+v, want the query's error", r)
		}
		for key, want := range realMissingTable[server.Flavour()] {
			if r.Error[key] != want {
				t.Errorf("the client shows %s %v, want %v (the error: %v)", key, r.Error[key], want, r.Error)
			}
		}
	})
}
