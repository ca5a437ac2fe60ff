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
// configures it (gateway.NewServer) until ctx ends, then drains (see
// gateway.Server.Drain): it keeps listening, gw answers new statements 503
// with Connection: close, and the server stops once nothing of its own is
// left, or when drainTimeout passes, cutting what is then in flight.
func serveGateway(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, h http.Handler, gw *gateway.Gateway, logger *slog.Logger, drainTimeout, drainQuiet time.Duration) error {
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
	logger.Info("draining: new statements are refused; requests are served until none is left", "timeout", drainTimeout, "quiet", drainQuiet)
	start := time.Now()
	drain, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if cut, err := srv.Drain(drain, gw, drainQuiet); err != nil {
		logger.Warn("the drain timed out: requests in flight were cut", "cut", cut, "took", time.Since(start).Round(time.Millisecond))
	} else {
		logger.Info("drained: nothing in flight was cut", "took", time.Since(start).Round(time.Millisecond))
	}
	<-served
	return nil
}
