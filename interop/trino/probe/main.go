// Command probe runs one statement with trino-go-client v1.5.0 and prints
// its rows, one a line, the columns tab-separated. The DSN is read from
// the environment variable TRINO_DSN, not the command line, because it
// carries a password; the statement is the only argument. A failure is
// printed on stderr and exits 1.
//
// interop/realservers runs it (with GOTOOLCHAIN=go1.27.3) through two
// gateway replicas to a real Trino with a password over TLS, so that the
// client users have is tested there without starting a Trino of its own.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/trinodb/trino-go-client/trino" // the "trino" driver
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return errors.New("usage: TRINO_DSN=... probe STATEMENT")
	}
	dsn := os.Getenv("TRINO_DSN")
	if dsn == "" {
		return errors.New("TRINO_DSN is empty")
	}
	db, err := sql.Open("trino", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, os.Args[1])
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		fields := make([]string, len(vals))
		for i, v := range vals {
			fields[i] = v.String
		}
		fmt.Println(strings.Join(fields, "\t"))
	}
	return rows.Err()
}
