// Package driver is the zkpresto database/sql driver: it finds Presto (or
// Trino) coordinators through ZooKeeper or a fixed host list, picks one per
// statement with a load-balancing strategy (a transaction stays on the
// coordinator that started it), and delegates the work to the Presto Go
// client. The finding and picking is package routing's; this package adds
// database/sql and the Presto client.
//
// Importing the package registers the driver name "zkpresto":
//
//	import _ "github.com/zkpresto/zkpresto/driver"
//
//	db, err := sql.Open("zkpresto",
//		"presto://zk1:2181,zk2:2181/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto;zooKeeperStrategy=poll?user=alice")
//
// sql.Open does no network I/O; the first connection opens the ZooKeeper
// session, which every *sql.DB of the process naming the same ensemble and
// namespace then shares. Use NewConnector with sql.OpenDB to pass a logger,
// a strategy factory, an ejection policy or an HTTP client.
//
// The Presto session (catalog, schema, session properties, path, roles,
// prepared statements) lives in the connection: USE, SET SESSION and the
// other session statements change it for the connection's later
// statements, whatever coordinator runs them. database/sql hands each
// statement any connection of its pool, and a connection that goes back to
// the pool is reset to the DSN's session; statements that share a session
// run on one *sql.Conn (db.Conn), or in one transaction.
package driver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// DriverName is the name the package registers with database/sql.
const DriverName = "zkpresto"

func init() {
	sql.Register(DriverName, &Driver{})
}

// Driver is the database/sql driver. Its zero value is ready to use.
type Driver struct{}

var (
	_ driver.Driver        = (*Driver)(nil)
	_ driver.DriverContext = (*Driver)(nil)
)

// OpenConnector parses dsn and returns a Connector; it does no network I/O.
// database/sql calls it once per sql.Open: its errors are the program's
// edge, so each of its errors begins "zkpresto: " (a DSN's "zkpresto: dsn: ").
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: %w", err)
	}
	c, err := NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: %w", err)
	}
	return c, nil
}

// Open opens one connection without a pool. database/sql does not call it
// (it uses OpenConnector); it exists for callers of the driver.Driver
// interface. Closing the connection releases its discovery session.
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	connector := c.(*Connector)
	conn, err := connector.Connect(context.Background())
	if err != nil {
		connector.Close()
		return nil, err
	}
	conn.(*Conn).closeConnector = connector
	return conn, nil
}
