package registrar_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitFor = 20 * time.Second

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, waitFor, 20*time.Millisecond, what, cond)
}

// harness is a ZooKeeper, a coordinator, an observer session and a running
// registrar.
type harness struct {
	t        *testing.T
	zk       *zkserver.Server
	observer *zk.Conn
	coord    *coordinator.Coordinator
	reg      *registrar.Registrar
	cancel   context.CancelFunc
	done     chan error
}

func startCoordinator(t *testing.T) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.Start(coordinator.Options{Name: "c1", Version: "0.289"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newHarness(t *testing.T, mutate func(*registrar.Config)) *harness {
	t.Helper()
	h := &harness{t: t, zk: zkserver.StartT(t)}
	h.coord = startCoordinator(t)
	h.observer = fleet.DialT(t, h.zk.Addr())
	cfg := registrar.Config{
		Servers:        []string{h.zk.Addr()},
		Namespace:      "presto",
		AdvertiseURI:   h.coord.URL(),
		Weight:         3,
		Zone:           "eu-1",
		Interval:       50 * time.Millisecond,
		SessionTimeout: 2 * time.Second,
		Logger:         testLogger(t),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	h.start(cfg)
	return h
}

func (h *harness) start(cfg registrar.Config) {
	h.t.Helper()
	reg, err := registrar.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.reg = reg
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- reg.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		<-h.done
	})
}

// children returns the registrations under /presto as parsed nodes.
func (h *harness) children() map[string]discovery.Node {
	h.t.Helper()
	byName, err := fleet.Registrations(h.observer, "/presto")
	if err != nil {
		h.t.Fatalf("reading the registrar's znodes as the driver does: %v", err)
	}
	out := map[string]discovery.Node{}
	for name, n := range byName {
		out["/presto/"+name] = n
	}
	return out
}

func (h *harness) waitRegistered() string {
	h.t.Helper()
	var path string
	eventually(h.t, "one registration", func() bool {
		kids := h.children()
		if len(kids) != 1 {
			return false
		}
		for p := range kids {
			path = p
		}
		return h.reg.Status().Path == path
	})
	return path
}

// waitStopped waits for Run to return nil after a cancel, then syncs the
// observer so that what it reads next is what Run left behind.
func (h *harness) waitStopped() {
	h.t.Helper()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Fatalf("Run returned %v", err)
		}
	case <-time.After(waitFor):
		h.t.Fatal("Run did not return after cancel")
	}
	h.done <- nil // for the cleanup
	if _, err := h.observer.Sync("/presto"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) waitDeregistered() {
	h.t.Helper()
	eventually(h.t, "no registration", func() bool { return len(h.children()) == 0 && !h.reg.Status().Registered })
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestRegistersInTheDriversFormat(t *testing.T) {
	h := newHarness(t, nil)
	path := h.waitRegistered()
	if !strings.HasPrefix(path, "/presto/serverUri="+h.coord.Addr()+";version=0.289;sequence=") {
		t.Errorf("znode %s is not named like Hive's and Kyuubi's", path)
	}
	n := h.children()[path]
	want := discovery.Node{Addr: h.coord.Addr(), Scheme: "http", Weight: 3, Zone: "eu-1", Version: "0.289", Format: discovery.FormatZkpresto}
	if n.Addr != want.Addr || n.Scheme != want.Scheme || n.Weight != want.Weight || n.Zone != want.Zone ||
		n.Version != want.Version || n.Format != want.Format {
		t.Errorf("registered %+v, want %+v", n, want)
	}
	_, stat, err := h.observer.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner == 0 {
		t.Error("the registration is not ephemeral")
	}
	st := h.reg.Status()
	if !st.Registered || !st.Healthy || !st.Connected || st.Registrations != 1 || st.LastCheck.IsZero() {
		t.Errorf("status %+v", st)
	}
}

func TestFollowsCoordinatorHealth(t *testing.T) {
	h := newHarness(t, func(c *registrar.Config) { c.UnlistNotReady = true })
	first := h.waitRegistered()

	h.coord.SetStarting(true)
	h.waitDeregistered()
	if st := h.reg.Status(); st.Healthy || !strings.Contains(st.LastError, "starting") {
		t.Errorf("while starting: status %+v", st)
	}

	h.coord.SetStarting(false)
	second := h.waitRegistered()
	if second == first {
		t.Errorf("expected a new sequential znode, got %s again", second)
	}

	if err := h.coord.Stop(); err != nil {
		t.Fatal(err)
	}
	h.waitDeregistered()
	st := h.reg.Status()
	if st.HealthCheckFailures < 2 || !strings.Contains(st.LastError, "/v1/info") {
		t.Errorf("after stop: status %+v", st)
	}

	if err := h.coord.Restart(); err != nil {
		t.Fatal(err)
	}
	h.waitRegistered()
	if st := h.reg.Status(); st.Registrations != 3 || st.SessionReRegistrations != 0 {
		t.Errorf("after restart: status %+v", st)
	}
}

func TestRegistersAgainAfterExternalDelete(t *testing.T) {
	h := newHarness(t, func(c *registrar.Config) { c.Interval = time.Hour }) // only the watch can notice
	first := h.waitRegistered()
	if err := h.observer.Delete(first, -1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new registration", func() bool {
		p := h.reg.Status().Path
		return p != "" && p != first && len(h.children()) == 1
	})
}

func TestRegistersAgainAfterSessionExpiry(t *testing.T) {
	zks := zkserver.StartT(t)
	coord := startCoordinator(t)
	proxy := startProxy(t, zks.Addr())
	h := &harness{t: t, zk: zks, coord: coord, observer: fleet.DialT(t, zks.Addr())}
	h.start(registrar.Config{
		Servers:        []string{proxy.addr()},
		AdvertiseURI:   coord.URL(),
		Interval:       50 * time.Millisecond,
		SessionTimeout: time.Second, // ZooKeeper's minimum with the harness's tickTime
		Logger:         testLogger(t),
	})
	first := h.waitRegistered()

	// Cut the registrar off until ZooKeeper has expired its session (and
	// with it the znode), then let it reconnect.
	proxy.block()
	eventually(t, "ZooKeeper to expire the registrar's session", func() bool { return len(h.children()) == 0 })
	proxy.unblock()

	second := h.waitRegistered()
	if second == first {
		t.Errorf("expected a new znode, got %s again", second)
	}
	if st := h.reg.Status(); st.SessionReRegistrations != 1 || st.Registrations != 2 {
		t.Errorf("status %+v", st)
	}
}

func TestDrainsOnCancel(t *testing.T) {
	h := newHarness(t, nil)
	path := h.waitRegistered()
	h.cancel()
	h.waitStopped()
	if ok, _, err := h.observer.Exists(path); err != nil || ok {
		t.Fatalf("after Run returned, %s exists=%v (err %v)", path, ok, err)
	}
	if h.reg.Status().Registered {
		t.Error("status still says registered")
	}
}

func TestDigestAuth(t *testing.T) {
	zks := zkserver.StartT(t)
	coord := startCoordinator(t)
	admin := fleet.DialT(t, zks.Addr())
	if err := admin.AddAuth("digest", []byte("presto:s3cret")); err != nil {
		t.Fatal(err)
	}
	// Only presto:s3cret may create under /secure; anyone may read.
	acl := append(zk.DigestACL(zk.PermAll, "presto", "s3cret"), zk.WorldACL(zk.PermRead)...)
	if _, err := admin.Create("/secure", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	cfg := registrar.Config{
		Servers:      []string{zks.Addr()},
		Namespace:    "secure",
		AdvertiseURI: coord.URL(),
		Interval:     50 * time.Millisecond,
		Logger:       testLogger(t),
	}

	t.Run("without credentials", func(t *testing.T) {
		reg, err := registrar.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		err = reg.Run(ctx)
		if !errors.Is(err, zk.ErrNoAuth) || !strings.Contains(err.Error(), "/secure") {
			t.Fatalf("Run returned %v, want a not-authenticated error naming the namespace", err)
		}
	})

	t.Run("with credentials", func(t *testing.T) {
		cfg := cfg
		cfg.Auth = &registrar.Auth{Scheme: "digest", Credentials: []byte("presto:s3cret")}
		h := &harness{t: t, zk: zks, coord: coord, observer: fleet.DialT(t, zks.Addr())}
		h.start(cfg)
		var path string
		eventually(t, "registration", func() bool { path = h.reg.Status().Path; return path != "" })
		acl, _, err := h.observer.GetACL(path)
		if err != nil {
			t.Fatal(err)
		}
		var worldRead, digestAll bool
		for _, a := range acl {
			worldRead = worldRead || (a.Scheme == "world" && a.Perms == zk.PermRead)
			digestAll = digestAll || (a.Scheme == "digest" && strings.HasPrefix(a.ID, "presto:") && a.Perms == zk.PermAll)
		}
		if !worldRead || !digestAll {
			t.Errorf("ACL %+v, want world:read and digest presto:all", acl)
		}
		// Someone without the credentials cannot remove the registration.
		if err := h.observer.Delete(path, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous delete: %v, want ErrNoAuth", err)
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	good := registrar.Config{Servers: []string{"127.0.0.1:2181"}, AdvertiseURI: "http://127.0.0.1:8080"}
	for _, tc := range []struct {
		name   string
		mutate func(*registrar.Config)
		want   string
	}{
		{"no servers", func(c *registrar.Config) { c.Servers = nil }, "no ZooKeeper servers"},
		{"bad server", func(c *registrar.Config) { c.Servers = []string{"zk1:x"} }, `ZooKeeper server "zk1:x"`},
		{"bare IPv6 server", func(c *registrar.Config) { c.Servers = []string{"::1"} }, "brackets"},
		{"no advertise", func(c *registrar.Config) { c.AdvertiseURI = "" }, "advertised URI"},
		{"advertise path", func(c *registrar.Config) { c.AdvertiseURI = "http://h:1/x" }, "without path"},
		{"advertise scheme", func(c *registrar.Config) { c.AdvertiseURI = "ftp://h:1" }, "http or https"},
		{"advertise port", func(c *registrar.Config) { c.AdvertiseURI = "http://h" }, "host:port"},
		{"advertise without scheme", func(c *registrar.Config) { c.AdvertiseURI = "10.0.0.5:8080" }, "write http://10.0.0.5:8080"},
		{"coordinator", func(c *registrar.Config) { c.CoordinatorURL = "h:1" }, "coordinator URL"},
		{"weight", func(c *registrar.Config) { c.Weight = -1 }, "weight -1"},
		{"zone", func(c *registrar.Config) { c.Zone = "a;b" }, "zone"},
		{"version", func(c *registrar.Config) { c.Version = "1/2" }, "version"},
		{"auth", func(c *registrar.Config) { c.Auth = &registrar.Auth{Scheme: "digest"} }, "auth"},
		{"namespace", func(c *registrar.Config) { c.Namespace = "a//b" }, `namespace "a//b": empty path segment`},
		{"relative namespace", func(c *registrar.Config) { c.Namespace = "a/./b" }, "relative path segment"},
		{"namespace character", func(c *registrar.Config) { c.Namespace = "a\x01" }, "not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mutate(&cfg)
			_, err := registrar.New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := registrar.New(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	// Servers are read as the driver reads them: the port defaults to 2181.
	for _, servers := range [][]string{{"zk1"}, {"[::1]"}, {"[::1]:2182", "zk2:2181"}} {
		cfg := good
		cfg.Servers = servers
		if _, err := registrar.New(cfg); err != nil {
			t.Errorf("servers %q: %v", servers, err)
		}
	}
}

// TestLogsMaskTheCredentials runs a registrar against a closed port with
// debug logging. go-zookeeper logs each failed connect as "... connection
// refused"; with that as the digest password, an unmasked go-zookeeper line
// would show it.
func TestLogsMaskTheCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	const password = "connection refused"
	logs := &testutil.Buffer{}
	reg, err := registrar.New(registrar.Config{
		Servers:      []string{dead},
		AdvertiseURI: startCoordinator(t).URL(), // healthy, so only ZooKeeper fails
		Interval:     50 * time.Millisecond,
		Auth:         &registrar.Auth{Scheme: "digest", Credentials: []byte("presto:" + password)},
		Logger:       logs.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx) }()
	eventually(t, "go-zookeeper's failed connect in the log", func() bool {
		return strings.Contains(logs.String(), "zookeeper: failed to connect to "+dead)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out := logs.String(); strings.Contains(out, password) {
		t.Fatalf("the logs hold the password:\n%s", out)
	}
}

// proxy forwards TCP connections to a ZooKeeper server; block cuts every
// connection and refuses new ones until unblock, which is how the session
// expiry test keeps the registrar away from ZooKeeper. loseAnswerTo lets a
// create reach the server but not its answer reach the client.
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu         sync.Mutex
	blocked    bool
	conns      map[net.Conn]struct{}
	wg         sync.WaitGroup
	losePrefix string        // the create whose answer to lose; "" for none
	lost       chan struct{} // closed once that create went to the server
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.block()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.blocked {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		mute := new(atomic.Bool) // this connection's answers are being lost
		go p.forwardRequests(up, c, mute)
		go p.forwardAnswers(c, up, mute)
	}
}

// loseAnswerTo arms the proxy once: the next create of a path starting with
// prefix reaches ZooKeeper, but from then on nothing ZooKeeper sends on
// that connection reaches the client, until block cuts it. The returned
// channel is closed when the create has been written to the server.
func (p *proxy) loseAnswerTo(prefix string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.losePrefix, p.lost = prefix, make(chan struct{})
	return p.lost
}

// ZooKeeper's create opcodes: create, create2, createContainer, createTTL.
var createOps = map[int32]bool{1: true, 15: true, 19: true, 21: true}

// forwardRequests copies client to server one ZooKeeper message at a time,
// so that it can tell the create to lose the answer to. Each message is
// framed by a 4-byte length; the first on a connection is the session
// handshake, every later one starts with xid and opcode, and a create's
// body with its path.
func (p *proxy) forwardRequests(server, client net.Conn, mute *atomic.Bool) {
	defer p.wg.Done()
	defer server.Close()
	defer client.Close()
	in := bufio.NewReader(client)
	for first := true; ; first = false {
		var size [4]byte
		if _, err := io.ReadFull(in, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 4<<20 {
			return // not ZooKeeper
		}
		msg := make([]byte, 4+n)
		copy(msg, size[:])
		if _, err := io.ReadFull(in, msg[4:]); err != nil {
			return
		}
		var lost chan struct{}
		if !first {
			if lost = p.takeLoss(msg[4:]); lost != nil {
				// Before the server can have answered.
				mute.Store(true)
			}
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
		if lost != nil {
			close(lost)
		}
	}
}

// takeLoss returns the armed channel, disarming it, when msg is the create
// whose answer is to be lost.
func (p *proxy) takeLoss(msg []byte) chan struct{} {
	if len(msg) < 12 || !createOps[int32(binary.BigEndian.Uint32(msg[4:8]))] {
		return nil
	}
	n := int(int32(binary.BigEndian.Uint32(msg[8:12])))
	if n < 0 || 12+n > len(msg) {
		return nil
	}
	path := string(msg[12 : 12+n])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.losePrefix == "" || !strings.HasPrefix(path, p.losePrefix) {
		return nil
	}
	p.losePrefix = ""
	return p.lost
}

// forwardAnswers copies server to client, dropping everything once mute is
// set: the client keeps its connection but hears nothing more on it.
func (p *proxy) forwardAnswers(client, server net.Conn, mute *atomic.Bool) {
	defer p.wg.Done()
	defer server.Close()
	defer client.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 && !mute.Load() {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) unblock() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

// The registrar registers exactly the coordinators whose /v1/info verdict is
// up, and records why the others are not.
func TestRegistersOnlyWhatProbeInfoCallsUp(t *testing.T) {
	zks := zkserver.StartT(t)
	observer := fleet.DialT(t, zks.Addr())
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
	}{
		{"up", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":false}`)
		}},
		{"starting", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":true}`)
		}},
		{"503", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }},
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }},
		{"html", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html><body>proxy</body></html>") }},
		// The registrar used to call this one up: it read a missing
		// "starting" as false.
		{"no starting, no version", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"coordinator":true}`) }},
		{"no starting, a version", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"nodeVersion":{"version":"0.150"}}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/info" {
					// Where the redirect points: up, if the check went there.
					fmt.Fprint(w, `{"nodeVersion":{"version":"0.289"},"starting":false}`)
					return
				}
				tc.answer(w, r)
			}))
			defer srv.Close()
			transport := http.DefaultTransport.(*http.Transport).Clone()
			defer transport.CloseIdleConnections()
			client := &http.Client{Transport: transport} // one that would follow redirects
			want := wire.ProbeInfo(context.Background(), client, srv.URL)

			namespace := "agree" + strings.NewReplacer(" ", "", ",", "").Replace(tc.name)
			h := &harness{t: t, zk: zks, observer: observer}
			h.start(registrar.Config{
				Servers:      []string{zks.Addr()},
				Namespace:    namespace,
				AdvertiseURI: srv.URL,
				Interval:     50 * time.Millisecond,
				HTTPClient:   client,
				// Listed exactly when Up: not ready is unlisted, not marked.
				UnlistNotReady: true,
				Logger:         testLogger(t),
			})
			if want.Verdict == wire.Up {
				eventually(t, "a registration", func() bool { return h.reg.Status().Registered })
				if st := h.reg.Status(); !st.Healthy || st.LastError != "" {
					t.Errorf("verdict up, status %+v", st)
				}
				if !strings.Contains(h.reg.Status().Path, ";version="+want.Version+";") {
					t.Errorf("registered %s, want version %s from /v1/info", h.reg.Status().Path, want.Version)
				}
			} else {
				// Two failed checks reach the default failure threshold.
				eventually(t, "two failed checks", func() bool { return h.reg.Status().HealthCheckFailures >= 2 })
				st := h.reg.Status()
				if st.Registered || st.Healthy {
					t.Errorf("verdict %v, status %+v", want.Verdict, st)
				}
				if st.LastError != want.Err.Error() {
					t.Errorf("reason %q, want %q", st.LastError, want.Err)
				}
				kids, _, err := observer.Children("/" + namespace)
				if err != nil && !errors.Is(err, zk.ErrNoNode) {
					t.Fatal(err)
				}
				if len(kids) != 0 {
					t.Errorf("verdict %v, registered %v", want.Verdict, kids)
				}
			}
			h.cancel()
			if err := <-h.done; err != nil {
				t.Errorf("Run: %v", err)
			}
			h.done <- nil // for the cleanup
		})
	}
}
