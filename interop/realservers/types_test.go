package realservers

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// Trino's timestamp(p) and time(p) arrive with all their digits, up to
// nanoseconds: the driver announces PARAMETRIC_DATETIME, without which
// Trino rounds them to milliseconds.
func TestTrinoFractionalSecondsWhole(t *testing.T) {
	db := open(t, fleet(t, coordinator.Trino), "?user=alice")
	var ts6, ts9, tm6, tz6 time.Time
	err := db.QueryRowContext(ctx(t), `SELECT
		CAST(TIMESTAMP '2020-01-02 03:04:05.123456' AS timestamp(6)),
		CAST(TIMESTAMP '2020-01-02 03:04:05.123456789' AS timestamp(9)),
		CAST(TIME '01:02:03.123456' AS time(6)),
		CAST(TIMESTAMP '2020-01-02 03:04:05.123456 UTC' AS timestamp(6) with time zone)`).Scan(&ts6, &ts9, &tm6, &tz6)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  time.Time
		want int
	}{{"timestamp(6)", ts6, 123456000}, {"timestamp(9)", ts9, 123456789}, {"time(6)", tm6, 123456000}, {"timestamp(6) with time zone", tz6, 123456000}} {
		if c.got.Nanosecond() != c.want {
			t.Errorf("%s: %v has %d ns, want %d", c.name, c.got, c.got.Nanosecond(), c.want)
		}
	}
}

// realType is what docs/types.md promises for a column: its Go value and
// its metadata.
type realType struct {
	expr string // the value, an SQL expression
	from string // its FROM clause, if any
	want any    // the Go value Scan into *any gives
	// dbName is DatabaseTypeName; length and prec, scale are Length and
	// DecimalSize, -1 where the column has none.
	dbName             string
	length, prec, scal int64
	scan               reflect.Type
}

var (
	nullInt64   = reflect.TypeFor[sql.NullInt64]()
	nullInt32   = reflect.TypeFor[sql.NullInt32]()
	nullFloat64 = reflect.TypeFor[sql.NullFloat64]()
	nullBool    = reflect.TypeFor[sql.NullBool]()
	nullString  = reflect.TypeFor[sql.NullString]()
	nullTime    = reflect.TypeFor[sql.NullTime]()
	byteSlice   = reflect.TypeFor[[]byte]()
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal("the zone database is needed:", err)
	}
	return l
}

// realTypes are the values of every type of docs/types.md as each server
// writes them: Trino's core/trino-main/.../server/protocol/JsonEncodingUtils.java
// (each type's getObjectValue, through Jackson), PrestoDB's
// presto-main/.../server/protocol/QueryResourceUtil.java (the same, and
// ARRAY, MAP and ROW as JSON text: parseToJson). Where the flavours name
// a type differently (Trino's time(0), timestamp(3); PrestoDB's time,
// timestamp, always milliseconds: SqlTimestamp's JSON_FORMAT) the case
// says so; the Go values are the same.
func realTypes(t *testing.T, flavour coordinator.Flavour) []realType {
	trino := flavour == coordinator.Trino
	// A time type's precision: Trino names it, PrestoDB's is milliseconds.
	prec := func(p int64) int64 {
		if trino {
			return p
		}
		return 3
	}
	paris, kolkata := zone(t, "Europe/Paris"), zone(t, "Asia/Kolkata")
	plus0530 := time.FixedZone("+05:30", 5*3600+1800)
	utc := time.UTC
	cases := []realType{
		{"true", "", true, "BOOLEAN", -1, -1, -1, nullBool},
		{"TINYINT '-128'", "", int64(-128), "TINYINT", -1, -1, -1, nullInt32},
		{"SMALLINT '32767'", "", int64(32767), "SMALLINT", -1, -1, -1, nullInt32},
		{"INTEGER '-2147483648'", "", int64(math.MinInt32), "INTEGER", -1, -1, -1, nullInt32},
		// Above 2^53, where a float64 would round it.
		{"BIGINT '9007199254740993'", "", int64(9007199254740993), "BIGINT", -1, -1, -1, nullInt64},
		{"BIGINT '9223372036854775807'", "", int64(math.MaxInt64), "BIGINT", -1, -1, -1, nullInt64},
		{"BIGINT '-9223372036854775808'", "", int64(math.MinInt64), "BIGINT", -1, -1, -1, nullInt64},
		{"REAL '1.5'", "", 1.5, "REAL", -1, -1, -1, nullFloat64},
		{"CAST(nan() AS real)", "", math.NaN(), "REAL", -1, -1, -1, nullFloat64},
		{"CAST(-infinity() AS real)", "", math.Inf(-1), "REAL", -1, -1, -1, nullFloat64},
		{"DOUBLE '1.7976931348623157E308'", "", math.MaxFloat64, "DOUBLE", -1, -1, -1, nullFloat64},
		{"nan()", "", math.NaN(), "DOUBLE", -1, -1, -1, nullFloat64},
		{"infinity()", "", math.Inf(1), "DOUBLE", -1, -1, -1, nullFloat64},
		{"DECIMAL '12.34'", "", "12.34", "DECIMAL", -1, 4, 2, nullString},
		{"DECIMAL '-99999999999999999999999999999999999.999'", "", "-99999999999999999999999999999999999.999", "DECIMAL", -1, 38, 3, nullString},
		{"CAST('x' AS varchar)", "", "x", "VARCHAR", math.MaxInt32, -1, -1, nullString},
		{"'héllo\"'", "", `héllo"`, "VARCHAR", 6, -1, -1, nullString},
		{"CAST('ab' AS char(5))", "", "ab   ", "CHAR", 5, -1, -1, nullString},
		{"X'00ff'", "", []byte{0, 0xff}, "VARBINARY", -1, -1, -1, byteSlice},
		{"CAST('' AS varbinary)", "", []byte{}, "VARBINARY", -1, -1, -1, byteSlice},
		{"JSON '{\"b\":[1,2],\"a\":12345678901234567890}'", "", `{"a":12345678901234567890,"b":[1,2]}`, "JSON", -1, -1, -1, nullString},
		{"UUID '12151fd2-7586-11e9-8f9e-2a86e4085a59'", "", "12151fd2-7586-11e9-8f9e-2a86e4085a59", "UUID", -1, -1, -1, nullString},
		{"IPADDRESS '10.0.0.1'", "", "10.0.0.1", "IPADDRESS", -1, -1, -1, nullString},
		{"IPADDRESS '2001:db8::1'", "", "2001:db8::1", "IPADDRESS", -1, -1, -1, nullString},
		{"INTERVAL '1 02:03:04.567' DAY TO SECOND", "", "1 02:03:04.567", "INTERVAL DAY TO SECOND", -1, -1, -1, nullString},
		{"INTERVAL '-3' MONTH", "", "-0-3", "INTERVAL YEAR TO MONTH", -1, -1, -1, nullString},
		{"DATE '2024-02-29'", "", time.Date(2024, 2, 29, 0, 0, 0, 0, utc), "DATE", -1, -1, -1, nullTime},
		// Outside years 1 to 9999, written with a sign: "-0001-01-01",
		// "+10000-01-01".
		{"DATE '-0001-01-01'", "", time.Date(-1, 1, 1, 0, 0, 0, 0, utc), "DATE", -1, -1, -1, nullTime},
		{"DATE '+10000-01-01'", "", time.Date(10000, 1, 1, 0, 0, 0, 0, utc), "DATE", -1, -1, -1, nullTime},
		{"date_add('day', -1, DATE '0001-01-01')", "", time.Date(0, 12, 31, 0, 0, 0, 0, utc), "DATE", -1, -1, -1, nullTime},
		{"TIMESTAMP '2024-05-06 07:08:09.123'", "", time.Date(2024, 5, 6, 7, 8, 9, 123e6, utc), "TIMESTAMP", -1, 3, 0, nullTime},
		{"date_add('year', 1, TIMESTAMP '9999-06-01 01:02:03.456')", "", time.Date(10000, 6, 1, 1, 2, 3, 456e6, utc), "TIMESTAMP", -1, 3, 0, nullTime},
		{"date_add('year', -2, TIMESTAMP '0001-06-01 01:02:03.456')", "", time.Date(-1, 6, 1, 1, 2, 3, 456e6, utc), "TIMESTAMP", -1, 3, 0, nullTime},
		{"TIMESTAMP '2024-05-06 07:08:09.123 Europe/Paris'", "", time.Date(2024, 5, 6, 7, 8, 9, 123e6, paris), "TIMESTAMP WITH TIME ZONE", -1, 3, 0, nullTime},
		{"TIMESTAMP '2024-05-06 07:08:09.123 -08:00'", "", time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.FixedZone("-08:00", -8*3600)), "TIMESTAMP WITH TIME ZONE", -1, 3, 0, nullTime},
		// The instant the server means, in a year where the zone's offset
		// is its local mean time (+05:53:28): Java's zone rules and Go's
		// agree.
		{"from_unixtime(-70000000000, 'Asia/Kolkata')", "", time.Unix(-70000000000, 0).In(kolkata), "TIMESTAMP WITH TIME ZONE", -1, 3, 0, nullTime},
		{"TIMESTAMP '+10000-01-01 00:00:00.123 +05:30'", "", time.Date(10000, 1, 1, 0, 0, 0, 123e6, plus0530), "TIMESTAMP WITH TIME ZONE", -1, 3, 0, nullTime},
		{"TIMESTAMP '-0001-01-01 00:00:00.000 UTC'", "", time.Date(-1, 1, 1, 0, 0, 0, 0, utc), "TIMESTAMP WITH TIME ZONE", -1, 3, 0, nullTime},
		{"TIME '01:02:03.123'", "", time.Date(0, 1, 1, 1, 2, 3, 123e6, utc), "TIME", -1, 3, 0, nullTime},
		{"TIME '01:02:03.123 +05:30'", "", time.Date(0, 1, 1, 1, 2, 3, 123e6, plus0530), "TIME WITH TIME ZONE", -1, 3, 0, nullTime},
		// tpch columns.
		{"orderkey", "FROM tpch.tiny.orders WHERE orderkey = 1", int64(1), "BIGINT", -1, -1, -1, nullInt64},
		{"totalprice", "FROM tpch.tiny.orders WHERE orderkey = 1", 172799.49, "DOUBLE", -1, -1, -1, nullFloat64},
		{"orderdate", "FROM tpch.tiny.orders WHERE orderkey = 1", time.Date(1996, 1, 2, 0, 0, 0, 0, utc), "DATE", -1, -1, -1, nullTime},
		{"orderstatus", "FROM tpch.tiny.orders WHERE orderkey = 1", "O", "VARCHAR", 1, -1, -1, nullString},
		{"shippriority", "FROM tpch.tiny.orders WHERE orderkey = 1", int64(0), "INTEGER", -1, -1, -1, nullInt32},
		{"comment", "FROM tpch.tiny.orders WHERE orderkey = 1", "nstructions sleep furiously among ", "VARCHAR", 79, -1, -1, nullString},
		// ARRAY, MAP and ROW: the same JSON text from both servers.
		{"ARRAY[1, 2, NULL]", "", `[1,2,null]`, "ARRAY(INTEGER)", -1, -1, -1, nullString},
		{"ARRAY[BIGINT '9007199254740993']", "", `[9007199254740993]`, "ARRAY(BIGINT)", -1, -1, -1, nullString},
		{"ARRAY[nan(), infinity()]", "", `["NaN","Infinity"]`, "ARRAY(DOUBLE)", -1, -1, -1, nullString},
		{"ARRAY['a\"b', NULL]", "", `["a\"b",null]`, "ARRAY(VARCHAR(3))", -1, -1, -1, nullString},
		{"ARRAY[DECIMAL '1.50']", "", `["1.50"]`, "ARRAY(DECIMAL(3, 2))", -1, -1, -1, nullString},
		{"ARRAY[X'cafe']", "", `["yv4="]`, "ARRAY(VARBINARY)", -1, -1, -1, nullString},
		{"ARRAY[JSON '{\"a\":1}']", "", `["{\"a\":1}"]`, "ARRAY(JSON)", -1, -1, -1, nullString},
		{"ARRAY[ARRAY[1, 2], ARRAY[3]]", "", `[[1,2],[3]]`, "ARRAY(ARRAY(INTEGER))", -1, -1, -1, nullString},
		{"MAP(ARRAY['b', 'a', 'c'], ARRAY[NULL, 1, 2])", "", `{"a":1,"b":null,"c":2}`, "MAP(VARCHAR(1), INTEGER)", -1, -1, -1, nullString},
		{"MAP(ARRAY[10, 2, 1], ARRAY['x', 'y', 'z'])", "", `{"1":"z","10":"x","2":"y"}`, "MAP(INTEGER, VARCHAR(1))", -1, -1, -1, nullString},
		{"MAP(ARRAY[1], ARRAY[ARRAY[1.5e0, nan()]])", "", `{"1":[1.5,"NaN"]}`, "MAP(INTEGER, ARRAY(DOUBLE))", -1, -1, -1, nullString},
		{"MAP(ARRAY[ROW(1, 'a')], ARRAY[1])", "", `{"[1, a]":1}`, "MAP(ROW(INTEGER, VARCHAR(1)), INTEGER)", -1, -1, -1, nullString},
		{"CAST(ROW(1, 2.5e0) AS ROW(x bigint, y double))", "", `[1,2.5]`, "ROW(X BIGINT, Y DOUBLE)", -1, -1, -1, nullString},
		{"CAST(ROW(ARRAY[1], MAP(ARRAY['k'], ARRAY[ROW(1)])) AS ROW(a array(integer), m map(varchar, row(z integer))))", "",
			`[[1],{"k":[1]}]`, "ROW(A ARRAY(INTEGER), M MAP(VARCHAR, ROW(Z INTEGER)))", -1, -1, -1, nullString},
		{"ARRAY[MAP(ARRAY['k'], ARRAY[ARRAY[ROW(1, 'x')]])]", "", `[{"k":[[1,"x"]]}]`, "ARRAY(MAP(VARCHAR(1), ARRAY(ROW(INTEGER, VARCHAR(1)))))", -1, -1, -1, nullString},
		{"ARRAY[ROW(NULL)]", "", `[[null]]`, "ARRAY(ROW(UNKNOWN))", -1, -1, -1, nullString},
	}
	if trino {
		cases = append(cases,
			realType{"TIME '01:02:03'", "", time.Date(0, 1, 1, 1, 2, 3, 0, utc), "TIME", -1, 0, 0, nullTime},
			realType{"TIME '01:02:03.123456789'", "", time.Date(0, 1, 1, 1, 2, 3, 123456789, utc), "TIME", -1, 9, 0, nullTime},
			realType{"CAST(TIME '01:02:03.123456 +05:30' AS time(6) with time zone)", "", time.Date(0, 1, 1, 1, 2, 3, 123456e3, plus0530), "TIME WITH TIME ZONE", -1, 6, 0, nullTime},
			realType{"TIMESTAMP '2024-05-06 07:08:09.123456'", "", time.Date(2024, 5, 6, 7, 8, 9, 123456e3, utc), "TIMESTAMP", -1, 6, 0, nullTime},
			// Cut to nanoseconds.
			realType{"CAST(TIMESTAMP '2024-05-06 07:08:09.123456789012 UTC' AS timestamp(12) with time zone)", "", time.Date(2024, 5, 6, 7, 8, 9, 123456789, utc), "TIMESTAMP WITH TIME ZONE", -1, 12, 0, nullTime},
			realType{"TIMESTAMP '+10000-01-01 00:00:00.123456 +05:30'", "", time.Date(10000, 1, 1, 0, 0, 0, 123456e3, plus0530), "TIMESTAMP WITH TIME ZONE", -1, 6, 0, nullTime},
		)
	} else {
		cases = append(cases,
			realType{"IPPREFIX '10.0.0.0/8'", "", "10.0.0.0/8", "IPPREFIX", -1, -1, -1, nullString},
			// In a named zone, on 1970-01-01, the day PrestoDB takes the
			// zone's offset on (SqlTimeWithTimeZone).
			realType{"TIME '01:02:03.123 Europe/Paris'", "", time.Date(1970, 1, 1, 1, 2, 3, 123e6, paris), "TIME WITH TIME ZONE", -1, 3, 0, nullTime},
		)
	}
	for i := range cases {
		if cases[i].prec >= 0 && cases[i].scan == nullTime {
			cases[i].prec = prec(cases[i].prec)
		}
	}
	return cases
}

// Every type of docs/types.md, read from each real server through the
// driver: the Go value docs/types.md names, the same from both servers,
// its metadata, and NULL into the column's ScanType.
func TestRealValuesAsTypesMdSays(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, "?user=alice")
		for _, tc := range realTypes(t, f.flavour) {
			t.Run(tc.expr, func(t *testing.T) {
				// The value, then NULL of the same type.
				q := fmt.Sprintf("SELECT v FROM (SELECT 1 AS k, %s AS v %s UNION ALL SELECT 2, NULL) t ORDER BY k", tc.expr, tc.from)
				rows, err := db.QueryContext(ctx(t), q)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				cts, err := rows.ColumnTypes()
				if err != nil {
					t.Fatal(err)
				}
				ct := cts[0]
				if got := ct.DatabaseTypeName(); got != tc.dbName {
					t.Errorf("DatabaseTypeName %q, want %q", got, tc.dbName)
				}
				if n, ok := ct.Length(); n != max(tc.length, 0) || ok != (tc.length >= 0) {
					t.Errorf("Length %d, %v; want %d", n, ok, tc.length)
				}
				if p, s, ok := ct.DecimalSize(); p != max(tc.prec, 0) || s != max(tc.scal, 0) || ok != (tc.prec >= 0) {
					t.Errorf("DecimalSize %d, %d, %v; want %d, %d", p, s, ok, tc.prec, tc.scal)
				}
				if n, ok := ct.Nullable(); !n || !ok {
					t.Errorf("Nullable %v, %v; want true, true", n, ok)
				}
				if got := ct.ScanType(); got != tc.scan {
					t.Errorf("ScanType %v, want %v", got, tc.scan)
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
					t.Fatal("no NULL row:", rows.Err())
				}
				null := reflect.New(ct.ScanType())
				if err := rows.Scan(null.Interface()); err != nil {
					t.Fatalf("NULL into %v: %v", ct.ScanType(), err)
				}
				if !null.Elem().IsZero() {
					t.Errorf("NULL scanned as %#v", null.Elem().Interface())
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

// current_timestamp is the server's clock in the session's zone, read
// whole: Trino's current_timestamp(9) to the nanosecond (PrestoDB refuses
// a precision: "non-default precision not yet supported").
func TestRealCurrentTimestamp(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, "?user=alice")
		expr, prec := "current_timestamp", int64(3)
		if f.flavour == coordinator.Trino {
			expr, prec = "current_timestamp(9)", 9
		}
		before := time.Now().Truncate(time.Millisecond)
		rows, err := db.QueryContext(ctx(t), "SELECT "+expr)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cts, err := rows.ColumnTypes()
		if err != nil {
			t.Fatal(err)
		}
		if p, _, ok := cts[0].DecimalSize(); p != prec || !ok {
			t.Errorf("%s: DecimalSize %d, %v; want %d", expr, p, ok, prec)
		}
		var now time.Time
		if !rows.Next() {
			t.Fatal("no row:", rows.Err())
		}
		if err := rows.Scan(&now); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		if now.Before(before) || now.After(after) {
			t.Errorf("%s = %v, not between %v and %v", expr, now, before, after)
		}
	})
}

// Arguments reach both servers as the values they are: a nil []byte as
// NULL (an empty one as an empty VARBINARY), times before year 1 and after
// 9999, bigints above 2^53, NaN, JSON.
func TestRealArgumentsRoundTrip(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		db := open(t, f, "?user=alice")
		var nilIsNull, emptyIsNull bool
		var emptyLen int64
		if err := db.QueryRowContext(ctx(t), "SELECT ? IS NULL, ? IS NULL, length(?)", []byte(nil), []byte{}, []byte{}).Scan(&nilIsNull, &emptyIsNull, &emptyLen); err != nil {
			t.Fatal(err)
		}
		if !nilIsNull || emptyIsNull || emptyLen != 0 {
			t.Errorf("[]byte(nil) IS NULL %v, []byte{} IS NULL %v, length %d; want true, false, 0", nilIsNull, emptyIsNull, emptyLen)
		}
		for _, arg := range []any{
			time.Date(-1, 1, 2, 3, 4, 5, 6e6, time.UTC),
			time.Date(10000, 1, 2, 3, 4, 5, 6e6, time.FixedZone("", 5*3600+1800)),
			time.Date(2024, 5, 6, 7, 8, 9, 123e6, zone(t, "Europe/Paris")),
			int64(9007199254740993),
			math.NaN(),
			[]byte{0xca, 0xfe},
			"it's",
			json.RawMessage(`{"a":[1,2]}`),
		} {
			var got any
			if err := db.QueryRowContext(ctx(t), "SELECT ?", arg).Scan(&got); err != nil {
				t.Errorf("%#v: %v", arg, err)
				continue
			}
			want := arg
			switch a := arg.(type) {
			case time.Time:
				if a.Location().String() == "" {
					want = a.In(time.FixedZone("+05:30", 5*3600+1800)) // sent as its offset
				}
			case json.RawMessage:
				want = string(a)
			}
			if !testutil.SameValue(got, want) {
				t.Errorf("SELECT ? with %#v: got %#v", arg, got)
			}
		}
	})
}
