package driver_test

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// pageServer is a coordinator that answers every statement with one page
// whose columns and rows the test gives, written the way Presto and Trino
// write them, gzip-compressed when gzipped is set (as coordinators do
// when asked). The statement's text is the page's key.
type pageServer struct {
	*httptest.Server
	gzipped bool
	mu      sync.Mutex
	pages   map[string]string // statement → page
	headers map[string]http.Header
	sql     []string // statements received
	txn     []string // the transaction id each carried
}

func newPageServer(t *testing.T, gzipped bool) *pageServer {
	t.Helper()
	s := &pageServer{gzipped: gzipped, pages: map[string]string{}, headers: map[string]http.Header{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// set answers statement with one page of columns of the given types,
// named c0, c1..., and rows, each a JSON array as the coordinator writes it.
func (s *pageServer) set(statement string, types []string, rows ...string) {
	var cols []string
	for i, typ := range types {
		raw := strings.ToLower(typ)
		if j := strings.IndexByte(raw, '('); j >= 0 && !strings.Contains(raw, "with time zone") {
			raw = raw[:j]
		} else if j >= 0 {
			raw = raw[:j] + " with time zone"
		}
		cols = append(cols, fmt.Sprintf(`{"name":"c%d","type":%q,"typeSignature":{"rawType":%q,"arguments":[]}}`, i, typ, raw))
	}
	page := fmt.Sprintf(`{"id":"q1","infoUri":"http://x/q1","columns":[%s],"data":[%s],"stats":{"state":"FINISHED"}}`,
		strings.Join(cols, ","), strings.Join(rows, ","))
	s.mu.Lock()
	s.pages[statement] = page
	s.mu.Unlock()
}

func (s *pageServer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/info":
		io.WriteString(w, `{"starting":false}`)
		return
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/statement":
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.sql = append(s.sql, string(body))
	s.txn = append(s.txn, r.Header.Get("X-Presto-Transaction-Id")+r.Header.Get("X-Trino-Transaction-Id"))
	page, ok := s.pages[string(body)]
	for k, v := range s.headers[string(body)] {
		w.Header()[k] = v
	}
	s.mu.Unlock()
	if !ok {
		page = `{"id":"q2","infoUri":"http://x/q2","columns":[{"name":"ok","type":"boolean","typeSignature":{"rawType":"boolean","arguments":[]}}],"data":[[true]],"stats":{"state":"FINISHED"}}`
	}
	w.Header().Set("Content-Type", "application/json")
	if s.gzipped && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, page)
		zw.Close()
		return
	}
	io.WriteString(w, page)
}

// answer answers statement with page, whole, and the headers h.
func (s *pageServer) answer(statement, page string, h http.Header) {
	s.mu.Lock()
	s.pages[statement], s.headers[statement] = page, h
	s.mu.Unlock()
}

// transactions returns the transaction id each statement carried.
func (s *pageServer) transactions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.txn...)
}

// statements returns the statements received.
func (s *pageServer) statements() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sql...)
}

func (s *pageServer) db(t *testing.T, scheme string) *sql.DB {
	t.Helper()
	return openPerStatement(t, scheme+"://"+strings.TrimPrefix(s.URL, "http://")+"/hive/default?user=alice")
}

// typeCase is one row of docs/types.md: a value as the servers write it,
// the Go value the driver returns, and the scan target it must fill.
type typeCase struct {
	typ  string // the column's type as the coordinator names it
	raw  string // the value as it is written in the page
	want any    // the driver.Value
	// dbName is DatabaseTypeName; scan is the nullable ScanType.
	dbName string
	scan   reflect.Type
}

func paris(t *testing.T) *time.Location {
	t.Helper()
	l, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal("the zone database is needed:", err)
	}
	return l
}

// typeCases are written as the servers write them: Presto's
// presto-main/src/main/java/com/facebook/presto/server/protocol/QueryResourceUtil.java
// and Trino's core/trino-main/src/main/java/io/trino/server/protocol/JsonEncodingUtils.java
// (each type's getObjectValue, serialised by Jackson: numbers as numbers,
// NaN and ±Infinity as strings, decimals, dates, times, intervals, JSON,
// UUID, IPADDRESS as text, VARBINARY and sketches as base64, ARRAY and ROW as
// arrays, MAP as an object).
func typeCases(t *testing.T) []typeCase {
	nt := reflect.TypeFor[sql.NullTime]()
	ns := reflect.TypeFor[sql.NullString]()
	return []typeCase{
		{"bigint", `9007199254740993`, int64(9007199254740993), "BIGINT", reflect.TypeFor[sql.NullInt64]()},
		{"bigint", `9223372036854775807`, int64(math.MaxInt64), "BIGINT", reflect.TypeFor[sql.NullInt64]()},
		{"bigint", `-9223372036854775808`, int64(math.MinInt64), "BIGINT", reflect.TypeFor[sql.NullInt64]()},
		{"integer", `-2147483648`, int64(math.MinInt32), "INTEGER", reflect.TypeFor[sql.NullInt32]()},
		{"smallint", `-32768`, int64(-32768), "SMALLINT", reflect.TypeFor[sql.NullInt32]()},
		{"tinyint", `-128`, int64(-128), "TINYINT", reflect.TypeFor[sql.NullInt32]()},
		{"double", `1.5E300`, 1.5e300, "DOUBLE", reflect.TypeFor[sql.NullFloat64]()},
		{"double", `"Infinity"`, math.Inf(1), "DOUBLE", reflect.TypeFor[sql.NullFloat64]()},
		{"double", `"-Infinity"`, math.Inf(-1), "DOUBLE", reflect.TypeFor[sql.NullFloat64]()},
		{"real", `"Infinity"`, math.Inf(1), "REAL", reflect.TypeFor[sql.NullFloat64]()},
		{"real", `0.1`, 0.1, "REAL", reflect.TypeFor[sql.NullFloat64]()},
		{"boolean", `true`, true, "BOOLEAN", reflect.TypeFor[sql.NullBool]()},
		{"varchar", `"a \"quoted\" ü"`, `a "quoted" ü`, "VARCHAR", ns},
		{"varchar(3)", `"abc"`, "abc", "VARCHAR", ns},
		{"char(3)", `"ab "`, "ab ", "CHAR", ns},
		{"decimal(38,2)", `"123456789012345678901234567890123456.78"`, "123456789012345678901234567890123456.78", "DECIMAL", ns},
		{"json", `"{\"k\":1}"`, `{"k":1}`, "JSON", ns},
		{"uuid", `"12151fd2-7586-11e9-8f9e-2a86e4085a59"`, "12151fd2-7586-11e9-8f9e-2a86e4085a59", "UUID", ns},
		{"ipaddress", `"2001:db8::1"`, "2001:db8::1", "IPADDRESS", ns},
		{"ipprefix", `"10.0.0.0/8"`, "10.0.0.0/8", "IPPREFIX", ns},
		{"interval day to second", `"2 03:04:05.678"`, "2 03:04:05.678", "INTERVAL DAY TO SECOND", ns},
		{"interval year to month", `"1-2"`, "1-2", "INTERVAL YEAR TO MONTH", ns},
		{"varbinary", `"AAEC/w=="`, []byte{0, 1, 2, 255}, "VARBINARY", reflect.TypeFor[[]byte]()},
		{"HyperLogLog", `"AgwBAIADAAA="`, []byte{2, 12, 1, 0, 128, 3, 0, 0}, "HYPERLOGLOG", reflect.TypeFor[[]byte]()},
		{"date", `"2024-05-06"`, time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), "DATE", nt},
		{"timestamp", `"2024-05-06 07:08:09.123"`, time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.UTC), "TIMESTAMP", nt},
		{"timestamp(9)", `"2024-05-06 07:08:09.123456789"`, time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC), "TIMESTAMP", nt},
		{"timestamp(12)", `"2024-05-06 07:08:09.123456789012"`, time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC), "TIMESTAMP", nt},
		{"timestamp with time zone", `"2024-05-06 07:08:09.123 Europe/Paris"`, time.Date(2024, 5, 6, 7, 8, 9, 123e6, paris(t)), "TIMESTAMP WITH TIME ZONE", nt},
		{"timestamp(6) with time zone", `"2024-05-06 07:08:09.123456 +02:00"`, time.Date(2024, 5, 6, 7, 8, 9, 123456e3, time.FixedZone("+02:00", 7200)), "TIMESTAMP WITH TIME ZONE", nt},
		{"time", `"07:08:09.123"`, time.Date(0, 1, 1, 7, 8, 9, 123e6, time.UTC), "TIME", nt},
		{"time with time zone", `"07:08:09.123 Europe/Paris"`, time.Date(1970, 1, 1, 7, 8, 9, 123e6, paris(t)), "TIME WITH TIME ZONE", nt},
		{"time with time zone", `"07:08:09.123 +02:00"`, time.Date(0, 1, 1, 7, 8, 9, 123e6, time.FixedZone("+02:00", 7200)), "TIME WITH TIME ZONE", nt},
		{"time(3) with time zone", `"07:08:09.123+02:00"`, time.Date(0, 1, 1, 7, 8, 9, 123e6, time.FixedZone("+02:00", 7200)), "TIME WITH TIME ZONE", nt},
		{"array(bigint)", `[9007199254740993,null]`, `[9007199254740993,null]`, "ARRAY(BIGINT)", ns},
		{"map(varchar, bigint)", `{"a":9223372036854775807}`, `{"a":9223372036854775807}`, "MAP(VARCHAR, BIGINT)", ns},
		{"row(x bigint, y double)", `[9007199254740993,"NaN"]`, `[9007199254740993,"NaN"]`, "ROW(X BIGINT, Y DOUBLE)", ns},
		{"unknown", `null`, nil, "UNKNOWN", ns},
	}
}

// Every type comes back exact, in the Go value docs/types.md names, gzip
// or not, Presto or Trino; NULL scans into the nullable ScanType; and the
// values survive a scan into reflect.New(ScanType()).
func TestEveryTypeComesBackExact(t *testing.T) {
	for _, flavour := range []struct {
		name, scheme string
		gzipped      bool
	}{{"presto-gzip", "presto", true}, {"trino-plain", "trino", false}} {
		t.Run(flavour.name, func(t *testing.T) {
			s := newPageServer(t, flavour.gzipped)
			db := s.db(t, flavour.scheme)
			for i, tc := range typeCases(t) {
				statement := fmt.Sprintf("SELECT case%d", i)
				s.set(statement, []string{tc.typ}, "["+tc.raw+"]", "[null]")
				t.Run(tc.typ, func(t *testing.T) {
					rows, err := db.Query(statement)
					if err != nil {
						t.Fatal(err)
					}
					defer rows.Close()
					ct, err := rows.ColumnTypes()
					if err != nil {
						t.Fatal(err)
					}
					if got := ct[0].DatabaseTypeName(); got != tc.dbName {
						t.Errorf("DatabaseTypeName %q, want %q", got, tc.dbName)
					}
					if got := ct[0].ScanType(); got != tc.scan {
						t.Errorf("ScanType %v, want %v", got, tc.scan)
					}
					if n, ok := ct[0].Nullable(); !n || !ok {
						t.Errorf("Nullable %v %v", n, ok)
					}
					if !rows.Next() {
						t.Fatal("no row:", rows.Err())
					}
					var got any
					if err := rows.Scan(&got); err != nil {
						t.Fatal(err)
					}
					if !testutil.SameValue(got, tc.want) {
						t.Errorf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
					}
					if !rows.Next() {
						t.Fatal("no second row:", rows.Err())
					}
					dest := reflect.New(ct[0].ScanType())
					if err := rows.Scan(dest.Interface()); err != nil {
						t.Fatalf("NULL into %v: %v", ct[0].ScanType(), err)
					}
					if v := dest.Elem(); !v.IsZero() {
						t.Errorf("NULL scanned as %#v", v.Interface())
					}
					if rows.Next() {
						t.Fatal("a third row")
					}
					if err := rows.Err(); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// NaN is written as a string: it scans into float64 and sql.NullFloat64,
// for DOUBLE and REAL.
func TestDoubleNaNScans(t *testing.T) {
	s := newPageServer(t, true)
	db := s.db(t, "presto")
	s.set("SELECT nan()", []string{"double", "real"}, `["NaN","NaN"]`)
	var d float64
	var r sql.NullFloat64
	if err := db.QueryRow("SELECT nan()").Scan(&d, &r); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(d) || !r.Valid || !math.IsNaN(r.Float64) {
		t.Fatalf("got %v %v", d, r)
	}
}

// A JSON column's value is the JSON text, which unmarshals to the object.
func TestJSONColumnUnmarshals(t *testing.T) {
	s := newPageServer(t, false)
	db := s.db(t, "presto")
	s.set("SELECT j", []string{"json"}, `["{\"k\":[1,2],\"big\":9007199254740993}"]`)
	var raw []byte
	if err := db.QueryRow("SELECT j").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if v["big"] != json.Number("9007199254740993") {
		t.Fatalf("got %v", v)
	}
}

// Column metadata as trino-go-client reports it: lengths, precisions and
// scales from the type's parameters.
func TestColumnMetadata(t *testing.T) {
	s := newPageServer(t, false)
	db := s.db(t, "trino")
	s.set("SELECT meta", []string{"varchar(10)", "varchar", "char(3)", "decimal(12,4)", "timestamp(6)", "bigint", "array(varchar(3))"},
		`["a","b","c","1.0000","2024-05-06 07:08:09.123456",1,["x"]]`)
	rows, err := db.Query("SELECT meta")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ct, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	type meta struct {
		name            string
		length          int64
		lengthOK        bool
		prec, scale     int64
		decOK, nullable bool
	}
	got := make([]meta, len(ct))
	for i, c := range ct {
		got[i].name = c.DatabaseTypeName()
		got[i].length, got[i].lengthOK = c.Length()
		got[i].prec, got[i].scale, got[i].decOK = c.DecimalSize()
		got[i].nullable, _ = c.Nullable()
	}
	want := []meta{
		{"VARCHAR", 10, true, 0, 0, false, true},
		{"VARCHAR", math.MaxInt32, true, 0, 0, false, true},
		{"CHAR", 3, true, 0, 0, false, true},
		{"DECIMAL", 0, false, 12, 4, true, true},
		{"TIMESTAMP", 0, false, 6, 0, true, true},
		{"BIGINT", 0, false, 0, 0, false, true},
		{"ARRAY(VARCHAR(3))", 0, false, 0, 0, false, true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// A generic scanner (sqlx's MapScan, ORMs) scans each column into
// reflect.New(ScanType()): with NULLs in every column, nothing fails.
func TestGenericScanWithNulls(t *testing.T) {
	s := newPageServer(t, true)
	db := s.db(t, "presto")
	types := []string{"bigint", "integer", "double", "boolean", "varchar", "decimal(3,1)", "date", "timestamp", "timestamp with time zone", "varbinary", "array(bigint)", "json"}
	nulls := "[" + strings.TrimSuffix(strings.Repeat("null,", len(types)), ",") + "]"
	s.set("SELECT generic", types,
		`[1,2,3.5,true,"v","1.5","2024-05-06","2024-05-06 07:08:09.123","2024-05-06 07:08:09.123 UTC","AQ==",[1],"{}"]`, nulls)
	rows, err := db.Query("SELECT generic")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ct, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		dest := make([]any, len(ct))
		for i, c := range ct {
			dest[i] = reflect.New(c.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("row %d: %v", n+1, err)
		}
		for i, d := range dest {
			valid := !reflect.ValueOf(d).Elem().IsZero()
			if valid != (n == 0) {
				t.Errorf("row %d column %s: %#v", n+1, types[i], reflect.ValueOf(d).Elem().Interface())
			}
		}
		n++
	}
	if err := rows.Err(); err != nil || n != 2 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// A value that does not parse as its type ends the result with an error
// naming the column, its type and the value.
func TestUnreadableValueNamesTheColumn(t *testing.T) {
	s := newPageServer(t, false)
	db := s.db(t, "presto")
	s.set("SELECT bad", []string{"bigint"}, `[1.5]`)
	var n int64
	err := db.QueryRow("SELECT bad").Scan(&n)
	if err == nil || !strings.Contains(err.Error(), `column "c0" (bigint): value 1.5`) {
		t.Fatalf("got %v", err)
	}
}

// A json.RawMessage argument is sent as a JSON literal, not as VARBINARY;
// one that is not JSON is refused before anything is sent; a nil one is
// NULL.
func TestJSONArgument(t *testing.T) {
	s := newPageServer(t, false)
	db := s.db(t, "presto")
	if _, err := db.Exec("SELECT ?", json.RawMessage(`{"it's":[1,2]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("SELECT ?", json.RawMessage(nil)); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec("SELECT ?", json.RawMessage(`{`))
	if err == nil || !strings.Contains(err.Error(), "argument 1") {
		t.Fatalf("invalid JSON: %v", err)
	}
	got := s.statements()
	want := []string{`SELECT JSON '{"it''s":[1,2]}'`, "SELECT NULL"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}
