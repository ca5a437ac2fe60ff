// Package gatewayrig starts simulated coordinators behind two gateway
// replicas behind a round-robin front on loopback ports, so that a client
// nobody here wrote (trino-go-client, the npm clients) can be pointed at a
// gateway deployment as users run it: each request lands on the other
// replica than the one before, so every follow-up crosses replicas. Only
// tests import it.
package gatewayrig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Keys is the routing-token secret the replicas share: one key of 32
// bytes, hex, in the format of docs/gateway.md.
const Keys = "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"

// Options says what to start.
type Options struct {
	// Coordinators is how many simulated coordinators to start; zero
	// means two.
	Coordinators int
	// Coordinator configures each of them.
	Coordinator coordinator.Options
	// Flavour is the gateway's (see gateway.Config); empty means the
	// coordinators' flavour.
	Flavour gateway.Flavour
	// Unreachable lists, instead of coordinators, one address that
	// refuses every connection: a group whose coordinators are all gone.
	Unreachable bool
	// NoCoordinatorGrace is the replicas' (see gateway.Config).
	NoCoordinatorGrace time.Duration
	// Addrs, when set, are the coordinators (host:port) instead of
	// simulated ones: real servers, which the rig neither starts nor
	// stops; Coordinator.Flavour (or Flavour) still says their flavour.
	Addrs []string
	// TLS serves the front on https (a certificate of its own, which
	// Rig.Client trusts), and gives the replicas the front's URL as their
	// public URL.
	TLS bool
	// OAuth2 starts a stub identity provider (Rig.IdP) and puts the
	// simulated coordinators in its OAuth2 mode, honouring the forwarding
	// headers (with Trino's nonce cookie when TLS is set); for real
	// coordinators, configure them with Rig.IdP's URLs yourself.
	OAuth2 bool
	// CoordinatorCA, when set, is a PEM CA file: the replicas reach the
	// coordinators (Addrs) over https, trusting it, as real coordinators
	// with authentication need.
	CoordinatorCA string
}

// Rig is a running deployment. Everything in it stops when the test that
// started it ends.
type Rig struct {
	// Coordinators are the simulated coordinators, in start order.
	Coordinators []*coordinator.Coordinator
	// Replicas are the two gateway replicas' base URLs, http://127.0.0.1:port.
	Replicas [2]string
	// Front is the round-robin front's base URL, where clients connect.
	Front string
	// Unreachable is the address listed instead of coordinators
	// (host:port) when Options.Unreachable is set.
	Unreachable string
	// Client reaches the front (trusting its certificate with
	// Options.TLS); its connections close when the test ends.
	Client *http.Client
	// IdP is the stub identity provider, with Options.OAuth2.
	IdP *IdP
	// FrontCAFile is, with Options.TLS, a PEM file of the front's
	// certificate, for clients that are not Go (JDBC's
	// SSLTrustStorePath, Python's verify).
	FrontCAFile string

	hits     [2]atomic.Int64
	gateways [2]*gateway.Gateway
}

// Start starts the deployment opts describes, and stops it when tb ends.
func Start(tb testing.TB, opts Options) *Rig {
	tb.Helper()
	if opts.Coordinators == 0 {
		opts.Coordinators = 2
	}
	if opts.Flavour == "" {
		opts.Flavour = gateway.Presto
		if opts.Coordinator.Flavour == coordinator.Trino {
			opts.Flavour = gateway.Trino
		}
	}
	rig := &Rig{}
	if opts.OAuth2 {
		rig.IdP = StartIdP(tb, "gatewayrig")
		opts.Coordinator.OAuth2 = rig.IdP.Coordinator(opts.TLS)
		opts.Coordinator.HonourForwarded = true
	}
	var fronts [2]*url.URL
	var next atomic.Int64
	front := httptest.NewUnstartedServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(fronts[next.Add(1)%2])
			pr.Out.Host = pr.In.Host // the replicas hand out URIs on the front's host
		},
		ErrorLog: log.New(io.Discard, "", 0), // a client's cancel is no error here
	})
	tb.Cleanup(front.Close)
	var public string // the front's URL, known before it starts
	if opts.TLS {
		public = "https://" + front.Listener.Addr().String()
	}
	nodes := make([]discovery.Node, 0, opts.Coordinators)
	if opts.Unreachable || len(opts.Addrs) > 0 {
		opts.Coordinators = 0
	}
	for _, addr := range opts.Addrs {
		nodes = append(nodes, discovery.Node{Addr: addr})
	}
	for range opts.Coordinators {
		c, err := coordinator.Start(opts.Coordinator)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		rig.Coordinators = append(rig.Coordinators, c)
		nodes = append(nodes, discovery.Node{Addr: c.Addr()})
	}
	if opts.Unreachable {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		rig.Unreachable = ln.Addr().String()
		nodes = []discovery.Node{{Addr: rig.Unreachable}}
		ln.Close() // nothing listens there any more: every dial is refused
	}
	disc := discovery.NewStatic("gatewayrig", nodes)
	var client *http.Client
	if opts.CoordinatorCA != "" {
		pemData, err := os.ReadFile(opts.CoordinatorCA)
		if err != nil {
			tb.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pemData) {
			tb.Fatalf("gatewayrig: no certificate in %s", opts.CoordinatorCA)
		}
		transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
		tb.Cleanup(transport.CloseIdleConnections)
		client = &http.Client{Transport: transport}
	}
	for i := range fronts {
		// Each replica has its own Router over the same discovery, as two
		// processes watching one ZooKeeper namespace would.
		r, err := routing.New(routing.Config{Discoverer: disc, Strategy: strategy.Named("poll")})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { r.Close() })
		g, err := gateway.New(gateway.Config{Router: r, Keys: Keys, Flavour: opts.Flavour, NoCoordinatorGrace: opts.NoCoordinatorGrace, PublicURL: public,
			TLS: client != nil, Client: client})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { g.Close() })
		rig.gateways[i] = g
		hits := &rig.hits[i]
		rig.Replicas[i] = serve(tb, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			hits.Add(1)
			g.ServeHTTP(w, req)
		}))
		fronts[i], _ = url.Parse(rig.Replicas[i])
	}
	// Started once the replicas are there for it to send to.
	if opts.TLS {
		front.StartTLS()
	} else {
		front.Start()
	}
	rig.Front = front.URL
	if opts.TLS {
		rig.FrontCAFile = filepath.Join(tb.TempDir(), "front-ca.pem")
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})
		if err := os.WriteFile(rig.FrontCAFile, certPEM, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	rig.Client = front.Client()
	tb.Cleanup(rig.Client.CloseIdleConnections)
	return rig
}

// serve serves h with the HTTP server zkpresto gateway runs until tb ends,
// and returns its base URL.
func serve(tb testing.TB, h http.Handler) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := gateway.NewServer(h, slog.New(slog.NewTextHandler(io.Discard, nil)), gateway.ServerLimits{})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// Drain makes both replicas drain, as SIGTERM does (gateway.Gateway.Drain):
// they keep serving, and answer new statements 503.
func (r *Rig) Drain() {
	for _, g := range r.gateways {
		g.Drain()
	}
}

// Hits returns how many requests each replica has served.
func (r *Rig) Hits() [2]int64 { return [2]int64{r.hits[0].Load(), r.hits[1].Load()} }

// Running returns how many queries run on the coordinators together.
func (r *Rig) Running() (n int64) {
	for _, c := range r.Coordinators {
		n += c.Running()
	}
	return n
}

// Statements returns how many statements the coordinators got together.
func (r *Rig) Statements() (n int64) {
	for _, c := range r.Coordinators {
		n += c.Statements()
	}
	return n
}

// Calls returns every statement and query request the coordinators
// recorded, in coordinator order.
func (r *Rig) Calls() []coordinator.Call {
	var calls []coordinator.Call
	for _, c := range r.Coordinators {
		calls = append(calls, c.Calls()...)
	}
	return calls
}
