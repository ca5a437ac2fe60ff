package driver_test

import (
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A transaction whose id a coordinator answers on a later page of a query
// read through Rows (not the page Query returned with) retires the
// connection too: the pool's next statement carries no transaction id.
func TestTransactionStartedOnALaterPageRetiresTheConnection(t *testing.T) {
	var mu sync.Mutex
	var txns []string // the transaction id each submission carried
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/info":
			io.WriteString(w, `{"starting":false}`)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/statement":
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			txns = append(txns, r.Header.Get("X-Presto-Transaction-Id"))
			mu.Unlock()
			if string(body) == "EXECUTE begin" {
				io.WriteString(w, `{"id":"q1","infoUri":"http://x/q1","nextUri":"`+srv.URL+`/v1/statement/executing/q1/1",`+
					`"columns":[{"name":"result","type":"boolean","typeSignature":{"rawType":"boolean","arguments":[]}}],"stats":{"state":"RUNNING"}}`)
				return
			}
			io.WriteString(w, `{"id":"q2","infoUri":"http://x/q2","columns":[{"name":"ok","type":"boolean","typeSignature":{"rawType":"boolean","arguments":[]}}],"data":[[true]],"stats":{"state":"FINISHED"}}`)
		case r.URL.Path == "/v1/statement/executing/q1/1":
			w.Header().Set("X-Presto-Started-Transaction-Id", "c0ffee00-0000-4000-8000-000000000004")
			io.WriteString(w, `{"id":"q1","infoUri":"http://x/q1","columns":[{"name":"result","type":"boolean","typeSignature":{"rawType":"boolean","arguments":[]}}],"data":[[true]],"updateType":"START TRANSACTION","stats":{"state":"FINISHED"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	db, err := sql.Open("zkpresto", "presto://"+strings.TrimPrefix(srv.URL, "http://")+"/hive/default?user=alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	rows, err := db.Query("EXECUTE begin")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n != 1 {
		t.Fatalf("EXECUTE begin: %d rows, %v", n, err)
	}
	rows.Close()
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(txns) != 2 || txns[1] != "NONE" {
		t.Fatalf("transaction ids sent %q: the statement after carried one", txns)
	}
}
