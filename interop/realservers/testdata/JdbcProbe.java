import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;

// JdbcProbe runs statements through a JDBC URL as a BI tool would, one per
// argument after the URL, and prints each row as "<statement index>\t<col>\t...",
// each failure as "<index>\tERROR\t<message>". The argument BEGIN turns
// autocommit off (the driver then starts a transaction), COMMIT and ROLLBACK
// end it. Its output is read by jdbc_test.go.
public class JdbcProbe {
    public static void main(String[] args) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", "alice");
        try (Connection conn = DriverManager.getConnection(args[0], props)) {
            for (int i = 1; i < args.length; i++) {
                String sql = args[i];
                try {
                    switch (sql) {
                        case "BEGIN" -> conn.setAutoCommit(false);
                        case "COMMIT" -> { conn.commit(); conn.setAutoCommit(true); }
                        case "ROLLBACK" -> { conn.rollback(); conn.setAutoCommit(true); }
                        default -> run(conn, i, sql);
                    }
                } catch (SQLException e) {
                    System.out.println(i + "\tERROR\t" + e.getMessage().replace('\n', ' '));
                }
            }
        }
    }

    private static void run(Connection conn, int i, String sql) throws SQLException {
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                StringBuilder line = new StringBuilder().append(i);
                for (int c = 1; c <= n; c++) {
                    line.append('\t').append(rs.getString(c));
                }
                System.out.println(line);
            }
        }
    }
}
