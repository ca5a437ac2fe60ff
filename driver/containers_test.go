package driver_test

import (
	"reflect"
	"testing"
)

// ARRAY, MAP and ROW values come back as the same JSON text from both
// servers. The pages are as Trino 476 and PrestoDB 0.287 wrote them
// (interop/realservers, TestRealValuesAsTypesMdSays): Trino as JSON
// (core/trino-main/.../server/protocol/JsonEncodingUtils.java), PrestoDB as
// pretty-printed JSON text inside a string, a nested container as a string
// again, a map's keys in hash order, a key that is a row or an array as its
// JSON text where Trino writes Java's text of it
// (presto-main/.../server/protocol/QueryResourceUtil.java, parseToJson).
func TestContainersSameFromBothServers(t *testing.T) {
	for _, tc := range []struct {
		trinoType, prestoType string
		trino, presto         string // the values as written
		want                  string // the Go value, a string
		dbName                string
	}{
		{"array(integer)", "array(integer)", `[1,2,null]`, `"[ 1, 2, null ]"`, `[1,2,null]`, "ARRAY(INTEGER)"},
		{"array(bigint)", "array(bigint)", `[9007199254740993]`, `"[ 9007199254740993 ]"`, `[9007199254740993]`, "ARRAY(BIGINT)"},
		{"map(varchar(1), integer)", "map(varchar(1),integer)", `{"b":null,"a":1,"c":2}`, `"{\n  \"a\" : 1,\n  \"b\" : null,\n  \"c\" : 2\n}"`,
			`{"a":1,"b":null,"c":2}`, "MAP(VARCHAR(1), INTEGER)"},
		{"map(integer, varchar(1))", "map(integer,varchar(1))", `{"10":"x","2":"y","1":"z"}`, `"{\n  \"1\" : \"z\",\n  \"2\" : \"y\",\n  \"10\" : \"x\"\n}"`,
			`{"1":"z","10":"x","2":"y"}`, "MAP(INTEGER, VARCHAR(1))"},
		{"row(x bigint, y double)", "row(x bigint,y double)", `[1,2.5]`, `"[ 1, 2.5 ]"`, `[1,2.5]`, "ROW(X BIGINT, Y DOUBLE)"},
		{"array(array(integer))", "array(array(integer))", `[[1,2],[3]]`, `"[ \"[ 1, 2 ]\", \"[ 3 ]\" ]"`, `[[1,2],[3]]`, "ARRAY(ARRAY(INTEGER))"},
		{"map(integer, array(double))", "map(integer,array(double))", `{"1":[1.5,"NaN"]}`, `"{\n  \"1\" : \"[ 1.5, \\\"NaN\\\" ]\"\n}"`,
			`{"1":[1.5,"NaN"]}`, "MAP(INTEGER, ARRAY(DOUBLE))"},
		{"row(a array(integer), m map(varchar, row(z integer)))", "row(a array(integer),m map(varchar,row(z integer)))",
			`[[1],{"k":[1]}]`, `"[ \"[ 1 ]\", \"{\\n  \\\"k\\\" : \\\"[ 1 ]\\\"\\n}\" ]"`, `[[1],{"k":[1]}]`,
			"ROW(A ARRAY(INTEGER), M MAP(VARCHAR, ROW(Z INTEGER)))"},
		{`row("x y" bigint, "b,c" varchar)`, `row("x y" bigint,"b,c" varchar)`, `[1,"a"]`, `"[ 1, \"a\" ]"`, `[1,"a"]`, `ROW("X Y" BIGINT, "B,C" VARCHAR)`},
		{"array(varchar(3))", "array(varchar(3))", `["a\"b",null]`, `"[ \"a\\\"b\", null ]"`, `["a\"b",null]`, "ARRAY(VARCHAR(3))"},
		{"array(json)", "array(json)", `["{\"a\":1}"]`, `"[ \"{\\\"a\\\":1}\" ]"`, `["{\"a\":1}"]`, "ARRAY(JSON)"},
		{"array(row(unknown))", "array(row(unknown))", `[[null]]`, `"[ \"[ null ]\" ]"`, `[[null]]`, "ARRAY(ROW(UNKNOWN))"},
		{"array(integer)", "array(integer)", `[]`, `"[ ]"`, `[]`, "ARRAY(INTEGER)"},
		{"map(row(integer, varchar(1)), integer)", "map(row(integer,varchar(1)),integer)", `{"[1, a]":1}`, `"{\n  \"[ 1, \\\"a\\\" ]\" : 1\n}"`,
			`{"[1, a]":1}`, "MAP(ROW(INTEGER, VARCHAR(1)), INTEGER)"},
		{"array(map(varchar(1), array(row(integer, varchar(1)))))", "array(map(varchar(1),array(row(integer,varchar(1)))))",
			`[{"k":[[1,"x"]]}]`, `"[ \"{\\n  \\\"k\\\" : \\\"[ \\\\\\\"[ 1, \\\\\\\\\\\\\\\"x\\\\\\\\\\\\\\\" ]\\\\\\\" ]\\\"\\n}\" ]"`,
			`[{"k":[[1,"x"]]}]`, "ARRAY(MAP(VARCHAR(1), ARRAY(ROW(INTEGER, VARCHAR(1)))))"},
	} {
		for _, server := range []struct{ scheme, typ, raw string }{{"trino", tc.trinoType, tc.trino}, {"presto", tc.prestoType, tc.presto}} {
			t.Run(server.scheme+"/"+server.typ, func(t *testing.T) {
				s := newPageServer(t, false)
				s.set("SELECT v", []string{server.typ}, "["+server.raw+"]", "[null]")
				rows, err := s.db(t, server.scheme).Query("SELECT v")
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
				var got []any
				for rows.Next() {
					var v any
					if err := rows.Scan(&v); err != nil {
						t.Fatal(err)
					}
					got = append(got, v)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				if want := []any{tc.want, nil}; !reflect.DeepEqual(got, want) {
					t.Fatalf("got %#v, want %#v", got, want)
				}
			})
		}
	}
}
