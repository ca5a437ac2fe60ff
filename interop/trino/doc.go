// Package trino holds tests that run trino-go-client v1.5.0 against the
// gateway and the coordinator simulator. It is a module of its own because
// that client requires Go 1.27, while the main module stays on Go 1.26 for
// its users; run it with GOTOOLCHAIN=go1.27.3 (make test does).
package trino
