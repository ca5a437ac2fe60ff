package driver_test

import (
	"database/sql"
	"strings"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// A bad DSN's error names the program once at sql.Open, the driver's
// edge, and only the package at driver.ParseDSN, a library call.
func TestDSNErrorNamesTheProgramOnceAtSQLOpen(t *testing.T) {
	const bad = "presto://zk1:99999;serviceDiscoveryMode=zooKeeper"
	const want = `dsn: bad port "99999" in host "zk1:99999"`
	if _, err := zkdriver.ParseDSN(bad); err == nil || err.Error() != want {
		t.Errorf("ParseDSN = %v, want %q", err, want)
	}
	db, err := sql.Open(zkdriver.DriverName, bad)
	if err == nil {
		db.Close()
	}
	if err == nil || err.Error() != "zkpresto: "+want || strings.Count(err.Error(), "zkpresto") != 1 {
		t.Errorf("sql.Open = %v, want %q", err, "zkpresto: "+want)
	}
}
