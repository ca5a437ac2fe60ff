// Command quickstart is the README's driver quick start: it opens a
// database/sql pool on the DSN in $ZKPRESTO_DSN and runs one statement four
// times. Each statement is one pick, so with the poll strategy they take
// turns over the coordinators that ZooKeeper lists.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/zkpresto/zkpresto/driver"
)

func main() {
	if err := run(os.Getenv("ZKPRESTO_DSN")); err != nil {
		log.Fatal(err)
	}
}

func run(dsn string) error {
	cfg, err := driver.ParseDSN(dsn) // a bad DSN fails here, before any I/O
	if err != nil {
		return err
	}
	cfg.Strategy = "poll" // as zooKeeperStrategy=poll in the DSN would
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector) // sql.Open("zkpresto", dsn) when the DSN says it all
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i <= 4; i++ {
		// The simulator answers every statement with one row: the coordinator
		// that served it, then the user, catalog, schema, source and query.
		var coordinator, user, catalog, schema, source, query string
		err := db.QueryRowContext(ctx, "SELECT 'hello'").Scan(&coordinator, &user, &catalog, &schema, &source, &query)
		if err != nil {
			return err
		}
		fmt.Printf("statement %d: served by %s as %s in %s.%s\n", i, coordinator, user, catalog, schema)
	}
	return nil
}
