package gateway_test

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// gatewayServer is a handler served on a loopback port by the HTTP server
// zkpresto gateway runs (gateway.NewServer), so that the tests see what
// the gateway's clients see.
type gatewayServer struct {
	// URL is http://127.0.0.1:port.
	URL   string
	srv   *gateway.Server
	done  chan error
	close sync.Once
}

// serveGateway serves h until the test ends (or Close).
func serveGateway(t testing.TB, h http.Handler) *gatewayServer {
	t.Helper()
	return serveGatewayWith(t, h, gateway.ServerLimits{})
}

// serveGatewayWith serves h with timeouts t until the test ends.
func serveGatewayWith(t testing.TB, h http.Handler, timeouts gateway.ServerLimits) *gatewayServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveGatewayOn(t, h, timeouts, ln)
}

// serveGatewayOn serves h on ln until the test ends.
func serveGatewayOn(t testing.TB, h http.Handler, timeouts gateway.ServerLimits, ln net.Listener) *gatewayServer {
	s := &gatewayServer{
		URL:  "http://" + ln.Addr().String(),
		srv:  gateway.NewServer(h, nil, timeouts),
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	t.Cleanup(s.Close)
	return s
}

// Close cuts every connection and waits for the server to stop.
func (s *gatewayServer) Close() {
	s.close.Do(func() {
		s.srv.Close()
		<-s.done
	})
}

// staticGateway is a gateway over a poll Router of the coordinators at
// addrs; cfg gives the rest of its Config (Router and Keys are set here).
// Both close when the test ends.
func staticGateway(t testing.TB, cfg gateway.Config, addrs ...string) (*gateway.Gateway, *routing.Router) {
	t.Helper()
	r := staticRouter(t, addrs...)
	cfg.Router, cfg.Keys = r, testKeys
	cfg.StandardTransport = cfg.StandardTransport || standardTransport
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, r
}

// staticRouter is a round-robin Router over the coordinators at addrs,
// closed when the test ends.
func staticRouter(t testing.TB, addrs ...string) *routing.Router {
	t.Helper()
	nodes := make([]discovery.Node, len(addrs))
	for i, a := range addrs {
		nodes[i] = discovery.Node{Addr: a}
	}
	r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("static:"+strings.Join(addrs, ","), nodes), Strategy: strategy.Named("poll")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
