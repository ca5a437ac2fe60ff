package realservers

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// java runs the Java program args with Trino's JDK (the newer of the two)
// within a minute, and returns its standard output.
func java(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := realserver.Java(coordinator.Trino)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func jar(t *testing.T, name string) string {
	t.Helper()
	path, err := realserver.ClientJar(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// The JDBC driver of each flavour, what BI tools run, through the gateway
// to the real servers: statements spread over both coordinators, a
// result of several pages is whole, a failure is the server's, and a
// transaction (autocommit off) stays on one coordinator to its COMMIT.
func TestJDBCThroughTheGateway(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		url := startGateway(t, f)
		driverJar, jdbcURL := jar(t, realserver.PrestoJDBC), "jdbc:presto://"+strings.TrimPrefix(url, "http://")+"/tpch/tiny"
		if f.flavour == coordinator.Trino {
			driverJar, jdbcURL = jar(t, realserver.TrinoJDBC), "jdbc:trino://"+strings.TrimPrefix(url, "http://")+"/tpch/tiny"
		}
		statements := []string{jdbcURL}
		for range 8 {
			statements = append(statements, servedBy) // 1..8
		}
		statements = append(statements,
			"SELECT orderkey FROM orders ORDER BY orderkey", // 9
			"SELECT * FROM no_such_table",                   // 10
			"BEGIN",                                         // 11
			servedBy, servedBy, servedBy,                    // 12..14
			"SELECT count(*) FROM nation", // 15
			"COMMIT",                      // 16
			servedBy,                      // 17
		)
		rows := probe(t, driverJar, statements)
		nodes := probedNodes(t, rows, 1, 8)
		if len(nodes) != 2 {
			t.Errorf("8 statements through the gateway ran on %v; want both coordinators", nodes)
		}
		res, err := f.servers[0].Query(ctx(t), "SELECT count(*) FROM tpch.tiny.orders")
		if err != nil {
			t.Fatal(err)
		}
		if want := int(res.Rows[0][0].(float64)); len(rows[9]) != want {
			t.Errorf("%d orders through JDBC and the gateway, the server says %d", len(rows[9]), want)
		}
		for j := 1; j < len(rows[9]); j++ {
			a, _ := strconv.Atoi(rows[9][j-1][0])
			b, _ := strconv.Atoi(rows[9][j][0])
			if b <= a {
				t.Fatalf("orderkey %d after %d: out of order", b, a)
			}
		}
		if len(rows[10]) != 1 || rows[10][0][0] != "ERROR" || !strings.Contains(rows[10][0][1], "does not exist") {
			t.Errorf("a missing table: %q", rows[10])
		}
		// The transaction as the same driver sees it straight on a server,
		// with node names left out: presto-jdbc 0.287 refuses its own
		// commit() after setAutoCommit(false) ("Connection is in
		// auto-commit mode") there too, and the gateway must not differ.
		direct := probe(t, driverJar, append([]string{strings.Replace(jdbcURL, strings.TrimPrefix(url, "http://"), f.servers[0].Addr(), 1)}, statements[1:]...))
		for i := 11; i <= 17; i++ {
			if got, want := anonymous(rows[i], nodes), anonymous(direct[i], map[string]bool{f.servers[0].Name(): true}); got != want {
				t.Errorf("statement %d (%s): through the gateway %s, straight on the server %s", i, statements[i], got, want)
			}
		}
		if f.flavour == coordinator.Trino && len(rows[16]) != 0 {
			t.Errorf("COMMIT through trino-jdbc: %q", rows[16])
		}
		in := probedNodes(t, rows, 12, 14)
		if len(in) != 1 {
			t.Errorf("one transaction's statements ran on %v", in)
		}
		if len(rows[15]) != 1 || rows[15][0][0] != "25" {
			t.Errorf("count of nation in the transaction: %q", rows[15])
		}
		if len(rows[17]) != 1 || rows[17][0][0] == "ERROR" {
			t.Errorf("the statement after the transaction: %q", rows[17])
		}
	})
}

// probe runs testdata/JdbcProbe.java with the driver jar on args (the URL,
// then the statements) and returns the rows it printed by statement index.
func probe(t *testing.T, driverJar string, args []string) map[int][][]string {
	t.Helper()
	out := java(t, append([]string{"-cp", driverJar, "testdata/JdbcProbe.java"}, args...)...)
	rows := map[int][][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		i, err := strconv.Atoi(fields[0])
		if err != nil {
			t.Fatalf("probe output %q", line)
		}
		rows[i] = append(rows[i], fields[1:])
	}
	return rows
}

// probedNodes returns the nodes that the probe's servedBy statements from
// to through (indexes, both included) named, failing t when one of them
// failed.
func probedNodes(t *testing.T, rows map[int][][]string, from, through int) map[string]bool {
	t.Helper()
	nodes := map[string]bool{}
	for i := from; i <= through; i++ {
		if len(rows[i]) != 1 || rows[i][0][0] == "ERROR" {
			t.Fatalf("statement %d: %q", i, rows[i])
		}
		nodes[rows[i][0][0]] = true
	}
	return nodes
}

// anonymous is rows as text with the node names in nodes replaced by NODE.
func anonymous(rows [][]string, nodes map[string]bool) string {
	var b strings.Builder
	for _, r := range rows {
		for _, v := range r {
			if nodes[v] {
				v = "NODE"
			}
			b.WriteString(v + "|")
		}
		b.WriteString(";")
	}
	return b.String()
}

// trino-cli, the real one, through the gateway: to Trino, and to PrestoDB
// with its X-Trino-* headers renamed by the gateway. A failing statement
// fails the CLI with the server's message.
func TestTrinoCLIThroughTheGateway(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		url := startGateway(t, f)
		cli := jar(t, realserver.TrinoCLI)
		base := []string{"-jar", cli, "--server", url, "--user", "alice", "--catalog", "tpch", "--schema", "tiny", "--output-format", "CSV_UNQUOTED"}
		out := java(t, append(base, "--execute", "SELECT count(*) FROM nation; SELECT name FROM region ORDER BY regionkey")...)
		if got, want := strings.TrimSpace(out), "25\nAFRICA\nAMERICA\nASIA\nEUROPE\nMIDDLE EAST"; got != want {
			t.Errorf("trino-cli printed %q, want %q", got, want)
		}
		bin, err := realserver.Java(coordinator.Trino)
		if err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		failed, err := exec.CommandContext(c, bin, append(base, "--execute", "SELECT * FROM no_such_table")...).CombinedOutput()
		if err == nil || !strings.Contains(string(failed), "does not exist") {
			t.Errorf("trino-cli on a missing table: %v, %s", err, failed)
		}
	})
}

// What DBeaver, Metabase and Tableau do through JDBC, through the gateway
// and, for comparison, straight on a server: the catalog browser's
// DatabaseMetaData calls, a PreparedStatement with parameters, setMaxRows,
// Statement.cancel of a streaming query (which must stop it on the
// server), and a failure's SQLException with the server's error code.
func TestJDBCWhatBIToolsDo(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		gw := strings.TrimPrefix(startGateway(t, f), "http://")
		driverJar, scheme := jar(t, realserver.PrestoJDBC), "jdbc:presto://"
		if f.flavour == coordinator.Trino {
			driverJar, scheme = jar(t, realserver.TrinoJDBC), "jdbc:trino://"
		}
		tag := fmt.Sprintf("zkcancel_%d", time.Now().UnixNano())
		statements := []string{
			"META:catalogs",                 // 1
			"META:schemas:tpch",             // 2
			"META:tables:tpch:tiny",         // 3
			"META:columns:tpch:tiny:nation", // 4
			"META:typeinfo",                 // 5
			"PREPARED:SELECT name FROM nation WHERE nationkey = ? AND name <> ?|3|x", // 6
			"MAXROWS:5:SELECT orderkey FROM orders ORDER BY orderkey",                // 7
			"SELECT * FROM no_such_table",                                            // 8
			"CANCEL:SELECT orderkey, '" + tag + "' FROM tpch.sf100.orders",           // 9
		}
		through := probe(t, driverJar, append([]string{scheme + gw + "/tpch/tiny"}, statements...))
		direct := probe(t, driverJar, append([]string{scheme + f.servers[0].Addr() + "/tpch/tiny"}, statements...))
		column := func(rows [][]string, i int) []string {
			var out []string
			for _, r := range rows {
				out = append(out, r[i])
			}
			return out
		}
		contains := func(i int, want ...string) {
			t.Helper()
			got := column(through[i], 0)
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("%s through the gateway: %q lacks %q", statements[i-1], got, w)
				}
			}
		}
		contains(1, "tpch", "memory", "blackhole", "system")
		contains(2, "tiny", "sf1", "information_schema")
		contains(3, "nation", "orders", "region")
		contains(4, "nationkey", "name", "regionkey", "comment")
		contains(5, "bigint", "varchar", "double", "boolean")
		// Query ids in messages differ; nothing else may.
		queryID := regexp.MustCompile(`\d{8}_\d{6}_\d{5}_[a-z0-9]{5}`)
		for i := 1; i <= 8; i++ {
			got := queryID.ReplaceAllString(anonymous(through[i], nil), "QUERY_ID")
			if want := queryID.ReplaceAllString(anonymous(direct[i], nil), "QUERY_ID"); got != want {
				t.Errorf("%s: through the gateway %.300s, straight on the server %.300s", statements[i-1], got, want)
			}
		}
		if got := anonymous(through[6], nil); got != "CANADA|;" {
			t.Errorf("the prepared statement through the gateway: %s, want CANADA", got)
		}
		if len(through[7]) != 5 || through[7][0][0] != "1" {
			t.Errorf("setMaxRows(5) through the gateway: %q", through[7])
		}
		if len(through[8]) != 1 || through[8][0][0] != "ERROR" || through[8][0][2] == "0" {
			t.Errorf("a missing table through the gateway: %q, want an SQLException with the server's error code", through[8])
		}
		if len(through[9]) != 1 || through[9][0][0] != "CANCELLED" {
			t.Errorf("Statement.cancel through the gateway: %q", through[9])
		}
		// Cancelled on the server too: neither coordinator runs it on.
		testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, "the cancelled query to end on the servers", func() bool {
			for _, s := range f.servers {
				res, err := s.Query(ctx(t), "SELECT count(*) FROM system.runtime.queries WHERE state IN ('QUEUED', 'PLANNING', 'STARTING', 'RUNNING', 'FINISHING') AND query LIKE '%"+tag+"%' AND query NOT LIKE '%system.runtime.queries%'")
				if err != nil || res.Rows[0][0] != float64(0) {
					return false
				}
			}
			return true
		})
	})
}
