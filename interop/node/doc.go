// Package node holds tests that run the npm clients presto-client and
// trino-client, with Node.js, against the gateway: scripts/install-npmclients.sh
// installs them from testdata/package-lock.json (make test-deps does), and
// testdata/clients.js runs one scenario with one client. See docs/interop.md.
package node
