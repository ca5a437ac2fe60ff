package main

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/cli"
)

func init() { subcommands = append(subcommands, newQueryCommand) }

type queryOptions struct {
	dsn             string
	format          string
	showCoordinator bool
	timeout         time.Duration
}

func newQueryCommand() *cobra.Command {
	var o queryOptions
	cmd := &cobra.Command{
		Use:   "query [SQL]",
		Short: "Run one SQL statement through the driver and print the result",
		Long: `query runs one statement through the zkpresto driver, with discovery and the
strategy the DSN names, and prints the result on stdout: an aligned table
(the default), CSV with a header row, or JSON (an array with one object per
row, keys in column order).

The SQL is the arguments joined by spaces or, without arguments, standard
input. A trailing semicolon is dropped (Presto rejects it). NULL shows as
NULL in a table, as an empty field in CSV and as null in JSON.

--show-coordinator prints which coordinator served the statement on stderr.
A failed statement exits non-zero with Presto's message and the coordinator.`,
		Example: `  zkpresto query --dsn "$DSN" 'SELECT * FROM system.runtime.nodes'
  export ZKPRESTO_DSN='presto://zk1:2181/hive/default;serviceDiscoveryMode=zooKeeper?user=alice'
  zkpresto query --format csv 'SELECT 1 AS one' > one.csv
  echo 'SELECT current_user' | zkpresto query --format json --show-coordinator`,
		PreRunE: applyEnvHook,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, args []string) error {
			return runQuery(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.dsn, "dsn", "", "the zkpresto DSN (required)")
	f.StringVarP(&o.format, "format", "f", "table", "output format: table, csv or json")
	f.BoolVar(&o.showCoordinator, "show-coordinator", false, "print the coordinator that served the statement on stderr")
	f.DurationVar(&o.timeout, "timeout", 0, "cancel the statement after this long (default: no limit)")
	bindEnv(f, "dsn")
	return cmd
}

func runQuery(ctx context.Context, in io.Reader, out, errOut io.Writer, o queryOptions, args []string) error {
	if o.dsn == "" {
		return errNoDSN
	}
	write, ok := resultWriters[o.format]
	if !ok {
		return fmt.Errorf("--format %q: want table, csv or json", o.format)
	}
	query, err := readSQL(in, args)
	if err != nil {
		return err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	connector, err := cli.OpenConnector(o.dsn)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	// One connection, so that the coordinator asked afterwards is the one
	// that ran the statement.
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return queryError(err, servedBy(conn))
	}
	err = write(out, rows)
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	coordinator := servedBy(conn)
	if err != nil {
		return queryError(err, coordinator)
	}
	if o.showCoordinator && coordinator != "" {
		fmt.Fprintln(errOut, "coordinator:", coordinator)
	}
	return nil
}

func queryError(err error, coordinator string) error {
	if coordinator != "" && !strings.Contains(err.Error(), coordinator) {
		return fmt.Errorf("query failed on coordinator %s: %w", coordinator, err)
	}
	return fmt.Errorf("query failed: %w", err)
}

// servedBy returns the URL of the coordinator conn's last statement went
// to, or "" if the driver does not say. It is the one place that reaches
// into the driver's connection.
func servedBy(conn *sql.Conn) string {
	var url string
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*zkdriver.Conn); ok {
			if n := c.Node(); n != nil {
				url = n.URL()
			}
		}
		return nil
	})
	return url
}

// readSQL takes the statement from the arguments or, without any, stdin.
func readSQL(in io.Reader, args []string) (string, error) {
	query := strings.Join(args, " ")
	if len(args) == 0 {
		b, err := io.ReadAll(in)
		if err != nil {
			return "", fmt.Errorf("reading SQL from stdin: %w", err)
		}
		query = string(b)
	}
	query = strings.TrimSpace(query)
	for strings.HasSuffix(query, ";") {
		query = strings.TrimSpace(strings.TrimSuffix(query, ";"))
	}
	if query == "" {
		return "", errors.New("no SQL given: pass it as an argument or on stdin")
	}
	return query, nil
}

// resultWriters print a result set in each output format.
var resultWriters = map[string]func(io.Writer, *sql.Rows) error{
	"table": writeTable,
	"csv":   writeCSV,
	"json":  writeJSON,
}

// scanRows calls fn with the column names and then each row's values.
func scanRows(rows *sql.Rows, header func([]string) error, row func([]any) error) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if err := header(cols); err != nil {
		return err
	}
	values := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := row(values); err != nil {
			return err
		}
	}
	return rows.Err()
}

// cellText renders a value for the table and CSV formats; nullText stands
// for NULL.
func cellText(v any, nullText string) string {
	switch v := v.(type) {
	case nil:
		return nullText
	case string:
		return v
	case []byte:
		return string(v)
	case time.Time:
		return v.Format("2006-01-02 15:04:05.999999999 MST")
	case []any, map[string]any:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	default:
		return fmt.Sprint(v)
	}
}

func writeTable(w io.Writer, rows *sql.Rows) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Tabs and newlines inside values would break the alignment.
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	err := scanRows(rows,
		func(cols []string) error {
			_, err := fmt.Fprintln(tw, strings.Join(cols, "\t"))
			return err
		},
		func(values []any) error {
			cells := make([]string, len(values))
			for i, v := range values {
				cells[i] = clean.Replace(cellText(v, "NULL"))
			}
			_, err := fmt.Fprintln(tw, strings.Join(cells, "\t"))
			return err
		})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func writeCSV(w io.Writer, rows *sql.Rows) error {
	cw := csv.NewWriter(w)
	err := scanRows(rows,
		cw.Write,
		func(values []any) error {
			cells := make([]string, len(values))
			for i, v := range values {
				cells[i] = cellText(v, "")
			}
			return cw.Write(cells)
		})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	return err
}

// writeJSON streams an array of objects whose keys keep the column order.
func writeJSON(w io.Writer, rows *sql.Rows) error {
	var keys [][]byte
	n := 0
	err := scanRows(rows,
		func(cols []string) error {
			keys = make([][]byte, len(cols))
			for i, c := range cols {
				k, err := json.Marshal(c)
				if err != nil {
					return err
				}
				keys[i] = k
			}
			_, err := io.WriteString(w, "[")
			return err
		},
		func(values []any) error {
			var b strings.Builder
			if n > 0 {
				b.WriteString(",")
			}
			n++
			b.WriteString("\n  {")
			for i, v := range values {
				if i > 0 {
					b.WriteString(", ")
				}
				val, err := json.Marshal(jsonValue(v))
				if err != nil {
					return fmt.Errorf("column %s: %w", keys[i], err)
				}
				b.Write(keys[i])
				b.WriteString(": ")
				b.Write(val)
			}
			b.WriteString("}")
			_, err := io.WriteString(w, b.String())
			return err
		})
	if err != nil {
		return err
	}
	if n > 0 {
		_, err = io.WriteString(w, "\n]\n")
	} else {
		_, err = io.WriteString(w, "]\n")
	}
	return err
}

// jsonValue keeps bytes readable: as text rather than base64.
func jsonValue(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}
