package realservers

import (
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	_ "github.com/prestodb/presto-go-client/v2"  // the "presto" driver, a client of the gateway
	_ "github.com/trinodb/trino-go-client/trino" // the "trino" driver, another

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

const gatewayKeys = "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"

// startGateway serves a gateway for f's servers, found in ZooKeeper with
// the poll strategy, and returns its URL.
func startGateway(t *testing.T, f *flavourFleet) string {
	t.Helper()
	g, _ := newGateway(t, f)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv.URL
}

// newGateway is the gateway startGateway serves, with its router.
func newGateway(t *testing.T, f *flavourFleet) (*gateway.Gateway, *routing.Router) {
	t.Helper()
	r, err := routing.New(routing.Config{
		ZooKeeper: &discovery.ZooKeeperConfig{Servers: []string{zkServer.Addr()}, Path: "/" + f.cluster.Namespace()},
		Strategy:  strategy.Named("poll"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	flavour := gateway.Presto
	if f.flavour == coordinator.Trino {
		flavour = gateway.Trino
	}
	g, err := gateway.New(gateway.Config{Router: r, Keys: gatewayKeys, Flavour: flavour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, r
}

// openThrough opens a client that knows nothing of ZooKeeper on the
// gateway at url: the Presto Go client for PrestoDB, trino-go-client for
// Trino.
func openThrough(t *testing.T, f *flavourFleet, url string) *sql.DB {
	t.Helper()
	return openThroughAs(t, f, url, "")
}

// openThroughAs is openThrough with the client's source, "" for its own.
func openThroughAs(t *testing.T, f *flavourFleet, url, source string) *sql.DB {
	t.Helper()
	host := strings.TrimPrefix(url, "http://")
	name, dsn := "presto", "presto://alice@"+host+"/tpch/tiny"
	if f.flavour == coordinator.Trino {
		name, dsn = "trino", "http://alice@"+host+"?catalog=tpch&schema=tiny"
	}
	if source != "" {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + "source=" + source
	}
	db, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Through the gateway a plain client reaches both real coordinators, and
// a result of many pages, each page's nextUri a routing token of the
// gateway's, arrives whole and in order.
func TestGatewayInFrontOfRealServers(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		url := startGateway(t, f)
		db := openThrough(t, f, url)
		c := ctx(t)
		seen := servingNodes(t, c, db, 8, "through the gateway")
		if len(seen) != 2 {
			t.Fatalf("8 statements through the gateway ran on %v; want both coordinators", seen)
		}
		var n, sum int64
		rows, err := db.QueryContext(c, "SELECT orderkey FROM tpch.tiny.orders ORDER BY orderkey")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		prev := int64(-1)
		for rows.Next() {
			var k int64
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			if k <= prev {
				t.Fatalf("orderkey %d after %d: out of order", k, prev)
			}
			prev = k
			n++
			sum += k
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		// Asked of one server directly, apart from the gateway.
		res, err := f.servers[0].Query(c, "SELECT count(*), sum(orderkey) FROM tpch.tiny.orders")
		if err != nil {
			t.Fatal(err)
		}
		wantN, wantSum := int64(res.Rows[0][0].(float64)), int64(res.Rows[0][1].(float64))
		if n != wantN || sum != wantSum {
			t.Fatalf("through the gateway %d rows summing to %d; the server says %d and %d", n, sum, wantN, wantSum)
		}
		// A failure is the server's, name and all.
		_, err = db.ExecContext(c, "SELECT * FROM no_such_table")
		if err == nil || !strings.Contains(err.Error(), "TABLE_NOT_FOUND") && !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("a missing table through the gateway: %v", err)
		}
		// The gateway answers /v1/info for the clients that ask it.
		resp, err := http.Get(url + "/v1/info")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/v1/info through the gateway: %s", resp.Status)
		}
	})
}
