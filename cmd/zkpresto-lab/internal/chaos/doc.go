// Package chaos runs the driver through crashes: N concurrent clients share
// one *sql.DB and run M statements each while coordinators crash and come
// back, lose their ZooKeeper registration, answer 503 while starting, and
// the ZooKeeper leader is killed. The fault schedule is deterministic for a
// seed (Plan).
//
// Every statement has a unique text, so the figures need no hook in the
// driver: the coordinators' records count how often each statement was
// accepted (more than once would be a duplicate, which the driver must never
// cause), and an HTTP transport under the driver's own
// (driver.WithHTTPClient) records every submission of every statement,
// which tells which statements failed over, to where, and why.
//
// Run needs ZooKeeper installed (see internal/zkserver).
package chaos
