// Package realservers holds the tests that run against real coordinators:
// two Trino and two PrestoDB servers (zkprestotest/realserver), started once
// for the package by TestMain, registered in a real ZooKeeper by zkpresto's
// own registrar, as in production, with the driver, the gateway and the
// Java clients BI tools use (trino-jdbc, presto-jdbc, trino-cli) in front
// of them, and differential tests that hold the simulator to them.
// scripts/fetch-real-servers.sh fetches the servers and the clients (make
// test-deps runs it). See docs/development.md, "Real
// servers".
package realservers
