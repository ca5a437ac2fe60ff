// Package importer is a program that imports the zkpresto driver the way a
// user's program does, from a module of its own: the repository's go.mod
// replaces go-zookeeper for its own builds, but a replace reaches no
// importer, so whatever the driver fixes in presto-go-client's behaviour
// must work here, with the client's release as it is.
package importer

import (
	"database/sql"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	_ "github.com/zkpresto/zkpresto/driver"
)

// The build uses presto-go-client's release, not a patched copy.
func TestPrestoClientIsTheRelease(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Replace}}", "github.com/prestodb/presto-go-client/v2").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "v2.1.1 <nil>" {
		t.Fatalf("presto-go-client is %q, want the release v2.1.1 unreplaced", got)
	}
}

// A coordinator answering with one page, written as Presto writes it.
func coordinator(t *testing.T, page string) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/info":
			io.WriteString(w, `{"starting":false}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/statement":
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, page)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// The values presto-go-client v2.1.1 gets wrong reach the importer exact.
func TestValuesAreExact(t *testing.T) {
	addr := coordinator(t, `{"id":"q1","infoUri":"http://x/q1","columns":[`+
		`{"name":"big","type":"bigint","typeSignature":{"rawType":"bigint","arguments":[]}},`+
		`{"name":"nan","type":"double","typeSignature":{"rawType":"double","arguments":[]}},`+
		`{"name":"j","type":"json","typeSignature":{"rawType":"json","arguments":[]}},`+
		`{"name":"t","type":"time with time zone","typeSignature":{"rawType":"time with time zone","arguments":[]}},`+
		`{"name":"a","type":"array(bigint)","typeSignature":{"rawType":"array","arguments":[]}}],`+
		`"data":[[9223372036854775807,"NaN","{\"k\":1}","07:08:09.123 Europe/Paris",[9007199254740993]],[null,null,null,null,null]],`+
		`"stats":{"state":"FINISHED"}}`)
	db, err := sql.Open("zkpresto", "presto://"+addr+"/hive/default?user=alice")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	var big int64
	var nan float64
	var j, a string
	var tm time.Time
	if err := rows.Scan(&big, &nan, &j, &tm, &a); err != nil {
		t.Fatal(err)
	}
	if big != math.MaxInt64 || !math.IsNaN(nan) || j != `{"k":1}` || tm.Format("15:04:05.000 MST") != "07:08:09.123 CET" || a != "[9007199254740993]" {
		t.Fatalf("got %d %v %q %q %q", big, nan, j, tm, a)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	var nb sql.NullInt64
	var nf sql.NullFloat64
	var ns1, ns3 sql.NullString
	var ns2 sql.NullTime
	if err := rows.Scan(&nb, &nf, &ns1, &ns2, &ns3); err != nil || nb.Valid || nf.Valid || ns1.Valid {
		t.Fatalf("NULLs: %v", err)
	}
}
