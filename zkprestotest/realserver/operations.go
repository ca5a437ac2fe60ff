package realserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Launched is a server whose process runs and which may not be ready yet:
// what an operator's registrar sees in the first seconds of a coordinator.
type Launched struct {
	server *Server
	opts   Options

	once sync.Once
	err  error
}

// Launch starts a server's process and returns at once, before the server
// is ready, for tests of what happens while a coordinator starts (a
// registrar beside it from its first second, as under systemd or in a
// pod). Ready waits for it as Start does. Unlike Start, it does not draw
// another port when the one it drew is taken: Ready then fails.
func Launch(opts Options) (*Launched, error) {
	opts = opts.withDefaults()
	in, err := findInstall(opts.Cache, opts.Flavour)
	if err != nil {
		return nil, err
	}
	s, err := launch(opts, in)
	if err != nil {
		return nil, err
	}
	return &Launched{server: s, opts: opts}, nil
}

// Server is the launched server, ready or not.
func (l *Launched) Server() *Server { return l.server }

// Ready waits until the server has run a statement, as Start does, and
// returns the same result to every caller. A server not ready within
// Options.StartTimeout is killed, and the error carries its log's tail.
func (l *Launched) Ready() error {
	l.once.Do(func() { l.err = l.server.awaitReady(l.opts) })
	return l.err
}

// Registration is one registrar run beside one server, as `zkpresto
// register` runs beside a coordinator.
type Registration struct {
	reg    *registrar.Registrar
	name   string // the server's
	cancel context.CancelFunc
	done   chan error
}

// Register runs a registrar for s under namespace (without slashes) in zk,
// as StartCluster does for its servers, and returns at once: whether s is
// ready is the registrar's to find out, by its health checks. With load
// set, it publishes s's load (load.Source is set to s's flavour's). The
// caller must Close it.
func Register(zk *zkserver.Server, namespace string, s *Server, load *registrar.LoadPublishing) (*Registration, error) {
	cfg := registrar.Config{
		Servers:      []string{zk.Addr()},
		Namespace:    namespace,
		AdvertiseURI: s.URL(),
		Interval:     time.Second,
	}
	if load != nil {
		l := *load
		l.Source = loadSource(s.Flavour())
		cfg.Load = &l
	}
	r, err := registrar.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("realserver: registrar for %s: %w", s.Name(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Registration{reg: r, name: s.Name(), cancel: cancel, done: make(chan error, 1)}
	go func() { g.done <- r.Run(ctx) }()
	return g, nil
}

// Registrar is the registration's registrar, for its Status.
func (g *Registration) Registrar() *registrar.Registrar { return g.reg }

// WaitRegistered waits until the registrar holds its znode, at most
// timeout; the error carries the registrar's last error.
func (g *Registration) WaitRegistered(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !g.reg.Status().Registered {
		if time.Now().After(deadline) {
			return fmt.Errorf("realserver: %s not registered within %s: %s", g.name, timeout, g.reg.Status().LastError)
		}
		select {
		case err := <-g.done:
			g.done <- err
			return fmt.Errorf("realserver: the registrar of %s stopped: %w", g.name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Close stops the registrar as SIGTERM stops `zkpresto register`: it
// deletes its znode, closes its session and returns once it has. Calling
// it again returns the same result.
func (g *Registration) Close() error {
	g.cancel()
	err := <-g.done
	g.done <- err
	return err
}

// State reads the server's node state, GET /v1/info/state: "ACTIVE", or
// "SHUTTING_DOWN" once a graceful shutdown was asked for (prestodb
// ServerInfoResource.getServerState; trino NodeStateManager).
func (s *Server) State(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/v1/info/state", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("realserver: %s: state: %w", s.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("realserver: %s: state: HTTP %d: %.200s", s.name, resp.StatusCode, body)
	}
	var state string
	if err := json.Unmarshal(body, &state); err != nil {
		return "", fmt.Errorf("realserver: %s: state %.200q: %w", s.name, body, err)
	}
	return state, nil
}
