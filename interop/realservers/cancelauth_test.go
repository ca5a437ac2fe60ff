package realservers

import (
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// The driver's cancel of rows closed early carries the statement's
// password, which PrestoDB 0.287 checks on every request on https
// (AuthenticationFilter, a servlet filter on all of them), the DELETE
// included: the query ends at once, not after its client timeout
// (query.client.timeout, 5 minutes) for want of a poll. Without the
// password the DELETE is refused and the query runs on.
func TestPrestoCancelCarriesThePassword(t *testing.T) {
	sf := startSecureFleet(t, coordinator.Presto)
	db, err := sql.Open("zkpresto", sf.cluster.DSN(";ssl_ca="+sf.certs.CAFile+"?user="+passwordUser+"&password="+url.QueryEscape(sf.password)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	server := sf.server
	mark := fmt.Sprintf("presto-cancel-%d", time.Now().UnixNano())
	rows, err := db.QueryContext(ctx(t), "SELECT orderkey FROM tpch.sf1.lineitem /* "+mark+" */")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	rows.Close()
	var state string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		res, err := server.Query(ctx(t), "SELECT state FROM system.runtime.queries WHERE query LIKE '%"+mark+" */'")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) == 1 {
			if state = fmt.Sprint(res.Rows[0][0]); state != "RUNNING" && state != "QUEUED" {
				break
			}
		}
	}
	if state != "FAILED" {
		t.Fatalf("the query closed early is %q a minute later, want FAILED (cancelled)", state)
	}
}
