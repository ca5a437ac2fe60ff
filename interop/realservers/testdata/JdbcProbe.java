import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

// JdbcProbe runs statements through a JDBC URL as a BI tool would, one per
// argument after the URL, and prints each row as "<statement index>\t<col>\t...",
// each failure as "<index>\tERROR\t<message>\t<error code>\t<SQL state>".
// The argument BEGIN turns autocommit off (the driver then starts a
// transaction), COMMIT and ROLLBACK end it. Other arguments of the form
// "VERB:..." do what DBeaver, Metabase and Tableau do:
//   META:catalogs, META:schemas:CAT, META:tables:CAT:SCHEMA,
//   META:columns:CAT:SCHEMA:TABLE (name and type), META:typeinfo
//   PREPARED:SQL|ARG|ARG...    a PreparedStatement, whole-number arguments as longs
//   MAXROWS:N:SQL              Statement.setMaxRows(N)
//   CANCEL:SQL                 Statement.cancel() from another thread once
//                              the first row arrived; prints "CANCELLED" and
//                              the failure the reading thread saw, then
//                              waits for the server to end the query
// Its output is read by jdbc_test.go.
public class JdbcProbe {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", "alice");
        try (Connection conn = DriverManager.getConnection(args[0], props)) {
            for (int i = 1; i < args.length; i++) {
                String sql = args[i];
                try {
                    if (sql.equals("BEGIN")) {
                        conn.setAutoCommit(false);
                    } else if (sql.equals("COMMIT")) {
                        conn.commit();
                        conn.setAutoCommit(true);
                    } else if (sql.equals("ROLLBACK")) {
                        conn.rollback();
                        conn.setAutoCommit(true);
                    } else if (sql.startsWith("META:")) {
                        meta(conn, i, sql.substring(5).split(":"));
                    } else if (sql.startsWith("PREPARED:")) {
                        prepared(conn, i, sql.substring(9).split("\\|"));
                    } else if (sql.startsWith("MAXROWS:")) {
                        String[] p = sql.substring(8).split(":", 2);
                        try (Statement st = conn.createStatement()) {
                            st.setMaxRows(Integer.parseInt(p[0]));
                            print(i, st.executeQuery(p[1]));
                        }
                    } else if (sql.startsWith("CANCEL:")) {
                        cancel(conn, args[0], i, sql.substring(7));
                    } else {
                        try (Statement st = conn.createStatement()) {
                            print(i, st.executeQuery(sql));
                        }
                    }
                } catch (SQLException e) {
                    System.out.println(i + "\tERROR\t" + e.getMessage().replace('\n', ' ') + "\t" + e.getErrorCode() + "\t" + e.getSQLState());
                }
            }
        }
        System.err.println("closed");
        // The drivers' HTTP clients keep threads that would hold the JVM.
        System.exit(0);
    }

    private static void meta(Connection conn, int i, String[] p) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        switch (p[0]) {
            case "catalogs" -> print(i, md.getCatalogs(), "TABLE_CAT");
            case "schemas" -> print(i, md.getSchemas(p[1], null), "TABLE_SCHEM");
            case "tables" -> print(i, md.getTables(p[1], p[2], null, null), "TABLE_NAME");
            case "columns" -> print(i, md.getColumns(p[1], p[2], p[3], null), "COLUMN_NAME", "TYPE_NAME");
            case "typeinfo" -> print(i, md.getTypeInfo(), "TYPE_NAME");
            default -> throw new IllegalArgumentException("META:" + p[0]);
        }
    }

    private static void prepared(Connection conn, int i, String[] p) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(p[0])) {
            for (int a = 1; a < p.length; a++) {
                if (p[a].matches("-?[0-9]+")) {
                    ps.setLong(a, Long.parseLong(p[a]));
                } else {
                    ps.setString(a, p[a]);
                }
            }
            print(i, ps.executeQuery());
        }
    }

    private static void cancel(Connection conn, String url, int i, String sql) throws Exception {
        String queryId;
        try (Statement st = conn.createStatement()) {
            ResultSet rs = st.executeQuery(sql);
            // PrestoResultSet and TrinoResultSet both have it.
            queryId = (String) rs.getClass().getMethod("getQueryId").invoke(rs);
            Thread canceller = new Thread(() -> {
                try {
                    st.cancel();
                } catch (SQLException e) {
                    System.out.println(i + "\tCANCEL FAILED\t" + e.getMessage());
                }
            });
            try {
                rs.next();
                canceller.start();
                canceller.join();
                while (rs.next()) {
                    // a cancelled statement ends its rows with a failure
                }
                System.out.println(i + "\tNOT CANCELLED");
            } catch (SQLException e) {
                System.out.println(i + "\tCANCELLED\t" + e.getMessage().replace('\n', ' '));
            }
        }
        awaitEnd(url, queryId);
    }

    // awaitEnd waits, up to 30 s, until GET /v1/query/{id} at the JDBC URL's
    // address says the query ended, or that no one knows it. PrestoDB's
    // driver sends a cancel's DELETE on a thread of its own, after cancel()
    // returned (StatementClientV1.httpDelete enqueues it; Trino's sends it
    // first): a probe that exited at once could take it down unsent and
    // leave the query running, which a BI tool, still open, never does.
    // Whether the query ended is for the test to judge, on the servers.
    private static void awaitEnd(String url, String queryId) throws Exception {
        String authority = URI.create(url.substring("jdbc:".length())).getAuthority();
        HttpRequest info = HttpRequest.newBuilder(URI.create("http://" + authority + "/v1/query/" + queryId))
                .header("X-Presto-User", "alice")
                .header("X-Trino-User", "alice")
                .timeout(Duration.ofSeconds(10))
                .build();
        // The query's own state comes first in a QueryInfo: its session has none.
        Pattern state = Pattern.compile("\"state\"\\s*:\\s*\"([A-Z_]+)\"");
        HttpClient http = HttpClient.newHttpClient();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            HttpResponse<String> resp = http.send(info, HttpResponse.BodyHandlers.ofString());
            if (resp.statusCode() == 404 || resp.statusCode() == 410) {
                return;
            }
            Matcher m = state.matcher(resp.body());
            if (resp.statusCode() == 200 && m.find() && (m.group(1).equals("FINISHED") || m.group(1).equals("FAILED"))) {
                return;
            }
            Thread.sleep(100);
        }
        System.err.println("query " + queryId + " had not ended 30 s after its cancel");
    }

    private static void print(int i, ResultSet rs, String... columns) throws SQLException {
        try (rs) {
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                StringBuilder line = new StringBuilder().append(i);
                if (columns.length == 0) {
                    for (int c = 1; c <= n; c++) {
                        line.append('\t').append(rs.getString(c));
                    }
                } else {
                    for (String c : columns) {
                        line.append('\t').append(rs.getString(c));
                    }
                }
                System.out.println(line);
            }
        }
    }
}
