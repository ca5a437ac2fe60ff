package gateway

import (
	"fmt"
	"testing"
)

func TestReadStatement(t *testing.T) {
	prepared := "q1=INSERT+INTO+hive.s.t+SELECT+1,q2=SELECT+*+FROM+x"
	for _, tc := range []struct{ sql, kind, tables string }{
		{"SELECT 1", "SELECT", "[]"},
		{"  -- note\n/* c */ (select * from t)", "SELECT", "[hive.web.t]"},
		{`SELECT * FROM "Sales".orders o JOIN tpch.tiny.nation n ON o.k = n.k`, "SELECT", "[hive.sales.orders tpch.tiny.nation]"},
		{"select * from a x, b as y, c where z in (select 1 from d)", "SELECT", "[hive.web.a hive.web.b hive.web.c hive.web.d]"},
		{"WITH w AS (SELECT * FROM base) SELECT * FROM w", "SELECT", "[hive.web.base]"},
		{"SELECT extract(year FROM ts), x IS DISTINCT FROM y FROM t", "SELECT", "[hive.web.t]"},
		{"SELECT * FROM TABLE(sequence(1, 3)) CROSS JOIN UNNEST(a) u", "SELECT", "[]"},
		{"INSERT INTO s.t (a, b) SELECT a, b FROM u", "INSERT", "[hive.s.t hive.web.u]"},
		{"CREATE TABLE IF NOT EXISTS c.s.t (a int)", "DATA_DEFINITION", "[c.s.t]"},
		{"CREATE TABLE t AS SELECT * FROM u", "INSERT", "[hive.web.t hive.web.u]"},
		{"DROP TABLE IF EXISTS t", "DATA_DEFINITION", "[hive.web.t]"},
		{"ALTER TABLE t EXECUTE optimize", "ALTER_TABLE_EXECUTE", "[hive.web.t]"},
		{"EXPLAIN ANALYZE SELECT * FROM t", "EXPLAIN", "[hive.web.t]"},
		{"SHOW TABLES FROM s", "DESCRIBE", "[]"},
		{"SHOW COLUMNS FROM t", "DESCRIBE", "[hive.web.t]"},
		{"DESCRIBE t", "DESCRIBE", "[hive.web.t]"},
		{"UPDATE t SET a = 1", "UPDATE", "[hive.web.t]"},
		{"DELETE FROM t WHERE a = 'FROM x'", "DELETE", "[hive.web.t]"},
		{"MERGE INTO t USING u ON t.k = u.k WHEN MATCHED THEN DELETE", "MERGE", "[hive.web.t hive.web.u]"},
		{"TRUNCATE TABLE t", "DELETE", "[hive.web.t]"},
		{"START TRANSACTION", "DATA_DEFINITION", "[]"},
		{"SET SESSION x = 1", "DATA_DEFINITION", "[]"},
		{"ANALYZE t", "ANALYZE", "[hive.web.t]"},
		{"EXECUTE q1", "INSERT", "[hive.s.t]"},
		{"EXECUTE Q2 USING 1", "SELECT", "[hive.web.x]"},
		{"EXECUTE unknown", "", "[]"},
		{"EXECUTE IMMEDIATE 'DELETE FROM t WHERE a = ''x'''", "DELETE", "[hive.web.t]"},
		{"WITH w AS (SELECT 1) INSERT INTO t SELECT * FROM w", "INSERT", "[hive.web.t]"},
		{"", "", "[]"},
		{"'unterminated", "", "[]"},
	} {
		f := readStatement(tc.sql, "Hive", "web", prepared)
		if f.Kind != tc.kind || fmt.Sprint(f.Tables) != tc.tables {
			t.Errorf("%q: kind %q, tables %v; want %q, %s", tc.sql, f.Kind, f.Tables, tc.kind, tc.tables)
		}
	}
}
