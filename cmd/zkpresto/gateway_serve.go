package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
)

// serveGateway serves h on ln with net/http's server as the gateway
// configures it (gateway.NewServer) until ctx ends, then drains: it keeps
// listening, gw answers new statements 503 with Connection: close, and
// the follow-ups of the queries in flight are served until those finish
// or drainTimeout passes; then the server stops, cutting what still runs.
func serveGateway(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, h http.Handler, gw *gateway.Gateway, logger *slog.Logger, drainTimeout time.Duration) error {
	srv := gateway.NewServer(h, logger, gateway.ServerLimits{})
	serve := func() error { return srv.Serve(ln) }
	if tlsConfig != nil {
		srv.TLSConfig = tlsConfig
		serve = func() error { return srv.ServeTLS(ln, "", "") }
	}
	served := make(chan error, 1)
	go func() { served <- serve() }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("draining: new statements are refused; running queries may go on", "for", drainTimeout)
	gw.Drain()
	drain, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := gw.WaitQueries(drain); err != nil {
		logger.Warn("queries still running at the end of the drain are cut")
	}
	// Requests under way (a page being relayed) end before the server
	// stops, within what is left of the drain.
	if err := srv.Shutdown(drain); err != nil {
		logger.Warn("requests still running at the end of the drain were cut", "err", err)
		srv.Close()
	}
	<-served
	return nil
}
