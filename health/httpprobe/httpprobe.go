// Package httpprobe is the active health check over HTTP: a health.Probe
// that asks a Presto or Trino coordinator for GET /v1/info and passes it
// only when it answers 200 with "starting": false, by the same rules the
// registrar and `zkpresto nodes --probe` apply.
//
// Packages health and routing import no net/http: a Router checks
// coordinators actively only through the probe its caller passes in
// (routing.Config's Probe, with HealthCheckInterval). dsn.Open passes this
// one; a program that builds its own Router, or runs its own
// health.Checker, passes httpprobe.New with the http.Client it wants (its
// TLS settings, its proxy, its time limits).
package httpprobe

import (
	"context"
	"net/http"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/internal/wire"
)

// New returns a probe that sends GET /v1/info to a node's URL through
// client (a plain http.Client when nil). A node that answers 200 with a
// JSON object saying "starting": false passes. One that fails to answer,
// answers another status or a redirect (redirects are not followed,
// whatever the client's CheckRedirect says), sends something that is not
// Presto's /v1/info, or reports "starting": true fails, the last with an
// error that wraps health.ErrStarting. At most 64 KiB of an answer are
// read. The client is not modified, and its idle connections are its
// owner's to close: keep-alive connections let each round of checks reuse
// them.
func New(client *http.Client) health.Probe {
	if client == nil {
		client = &http.Client{}
	}
	return func(ctx context.Context, node discovery.Node) error {
		info := wire.ProbeInfo(ctx, client, node.URL())
		switch info.Verdict {
		case wire.Up:
			return nil
		case wire.Starting:
			return startingError{info.Err}
		}
		return info.Err
	}
}

// startingError is the error of a node that said it is starting: its
// message and causes are ProbeInfo's, and it also matches
// health.ErrStarting, which wire cannot name.
type startingError struct{ err error }

func (e startingError) Error() string { return e.err.Error() }

func (e startingError) Unwrap() error { return e.err }

func (e startingError) Is(target error) bool { return target == health.ErrStarting }
