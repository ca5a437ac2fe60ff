package zkconn

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestServers(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string // nil: an error containing wantErr
		err  string
	}{
		{in: []string{"zk1:2181", "zk2:2182"}, want: []string{"zk1:2181", "zk2:2182"}},
		{in: []string{"zk1"}, want: []string{"zk1:2181"}},
		{in: []string{"10.0.0.1"}, want: []string{"10.0.0.1:2181"}},
		{in: []string{"[::1]:2182"}, want: []string{"[::1]:2182"}},
		{in: []string{"[::1]"}, want: []string{"[::1]:2181"}},
		{in: []string{"[2001:db8::7]", "zk1"}, want: []string{"[2001:db8::7]:2181", "zk1:2181"}},
		{in: nil, err: "no ZooKeeper servers given"},
		{in: []string{}, err: "no ZooKeeper servers given"},
		{in: []string{""}, err: `ZooKeeper server "": want host:port: empty host`},
		{in: []string{":2181"}, err: `ZooKeeper server ":2181": want host:port: empty host`},
		{in: []string{"zk1:"}, err: `bad port ""`},
		{in: []string{"zk1:x"}, err: `ZooKeeper server "zk1:x": want host:port: bad port "x"`},
		{in: []string{"zk1:0"}, err: `bad port "0"`},
		{in: []string{"zk1:65536"}, err: `bad port "65536"`},
		{in: []string{"zk1:2181", "zk2:1:2"}, err: `ZooKeeper server "zk2:1:2": want host:port`},
		{in: []string{"::1"}, err: "in brackets"},
		{in: []string{"2001:db8::7"}, err: "in brackets"},
		{in: []string{"[::1"}, err: `"[::1"`},
		{in: []string{"[zk1]:2181"}, err: `bad IPv6 address "zk1"`},
		{in: []string{"[1.2.3.4]"}, err: "want host:port"},
	} {
		got, err := Servers(tc.in)
		if tc.want != nil {
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Servers(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Servers(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}

func TestServersDoesNotShareTheSlice(t *testing.T) {
	in := []string{"zk1:2181"}
	out, err := Servers(in)
	if err != nil {
		t.Fatal(err)
	}
	in[0] = "changed:1"
	if out[0] != "zk1:2181" {
		t.Fatalf("the result follows the input: %q", out)
	}
}

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "presto", want: "/presto"},
		{in: "/presto", want: "/presto"},
		{in: "/presto/", want: "/presto"},
		{in: "//presto//", want: "/presto"},
		{in: "a/b", want: "/a/b"},
		{in: "", want: "/"},
		{in: "/", want: "/"},
		{in: "a.b/..c/.d", want: "/a.b/..c/.d"},
		{in: "hive_ü", want: "/hive_ü"},
		{in: "a//b", err: "empty path segment"},
		{in: "/a/./b", err: `relative path segment "."`},
		{in: "a/..", err: `relative path segment ".."`},
		{in: "a\x00b", err: "U+0000"},
		{in: "a\nb", err: "U+000A"},
		{in: "a\u0085", err: "U+0085"},
		{in: "a\uf000", err: "U+F000"},
		{in: "a\ufff0", err: "U+FFF0"},
		{in: "a😀", err: "U+1F600"},
		{in: "a\xffb", err: "not valid UTF-8"},
	} {
		got, err := Path(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("Path(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Path(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}

func TestLoggerMasksSecrets(t *testing.T) {
	logs := &testutil.Buffer{}
	l := Logger(logs.Logger(), "", "pw", "alice:pw")
	l.Printf("auth %s then %s and %q", "alice:pw", "pw", []byte("xpwx"))
	out := logs.String()
	if strings.Contains(out, "pw") {
		t.Fatalf("a secret survived: %s", out)
	}
	// The whole credential is masked as one, not as "alice:" plus a mask.
	for _, want := range []string{"level=DEBUG", "zookeeper: auth " + Mask + " then " + Mask, `\"x` + Mask + `x\"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q does not contain %q", out, want)
		}
	}
	if strings.Contains(out, "alice") {
		t.Errorf("the longer secret was not masked whole: %s", out)
	}
}

func TestLoggerRespectsTheLevel(t *testing.T) {
	logs := &testutil.Buffer{}
	l := Logger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Printf("connected to %s", "zk1:2181")
	if logs.String() != "" {
		t.Fatalf("a debug line reached an info logger: %s", logs.String())
	}
}

func TestSecrets(t *testing.T) {
	for _, tc := range []struct {
		scheme, auth string
		want         []string
	}{
		{"digest", "alice:pw", []string{"alice:pw", "pw"}},
		{"digest", "alice:", []string{"alice:"}},
		{"digest", "", nil},
		{"x509", "opaque", []string{"opaque"}},
		{"", "", nil},
	} {
		if got := secrets(tc.scheme, []byte(tc.auth)); !slices.Equal(got, tc.want) {
			t.Errorf("secrets(%q, %q) = %q, want %q", tc.scheme, tc.auth, got, tc.want)
		}
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestDialClosedPortFails(t *testing.T) {
	dead := closedPort(t)
	var reported []error
	cfg := Config{ConnectTimeout: 200 * time.Millisecond, OnDialError: func(err error) { reported = append(reported, err) }}
	start := time.Now()
	conn, err := cfg.dial("tcp", dead, 10*time.Second)
	if err == nil {
		conn.Close()
		t.Fatal("dialled a closed port")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("failed after %s, want within the 200ms connect timeout", took)
	}
	if !strings.Contains(err.Error(), dead) {
		t.Errorf("error %q does not name %s", err, dead)
	}
	if len(reported) != 1 || reported[0] != err {
		t.Errorf("OnDialError got %v, want the one error", reported)
	}
}

// silentServer accepts connections and never says anything, as a server
// whose TLS port is stuck would.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func TestTLSDialIsBoundedByTheConnectTimeout(t *testing.T) {
	addr := silentServer(t)
	cfg := Config{ConnectTimeout: 200 * time.Millisecond, TLS: &tls.Config{MinVersion: tls.VersionTLS12}}
	start := time.Now()
	conn, err := cfg.dial("tcp", addr, 10*time.Second) // go-zookeeper's timeout is the longer one
	if err == nil {
		conn.Close()
		t.Fatal("a TLS handshake with a silent server succeeded")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the handshake gave up after %s, want about 200ms", took)
	}
	if !strings.Contains(err.Error(), "TLS to "+addr) {
		t.Errorf("error %q does not say TLS to which server", err)
	}
	if cfg.TLS.ServerName != "" {
		t.Errorf("dial changed the caller's tls.Config: ServerName %q", cfg.TLS.ServerName)
	}
}

func TestConnectRejectsBadServers(t *testing.T) {
	if conn, err := Connect(Config{Servers: []string{"zk1:x"}, SessionTimeout: time.Second}, nil); err == nil {
		conn.Close()
		t.Fatal("connected to a bad address")
	}
}

// A session to a closed port logs go-zookeeper's failed connects, masked.
func TestConnectClosedPortLogsMasked(t *testing.T) {
	dead := closedPort(t)
	logs := &testutil.Buffer{}
	const password = "connection refused" // in every failed-connect line
	dialErrs := make(chan error, 16)
	conn, err := Connect(Config{
		Servers:        []string{dead},
		SessionTimeout: 2 * time.Second,
		ConnectTimeout: 200 * time.Millisecond,
		AuthScheme:     "digest",
		Auth:           []byte("alice:" + password),
		Logger:         logs.Logger(),
		OnDialError: func(err error) {
			select {
			case dialErrs <- err:
			default:
			}
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	select {
	case err := <-dialErrs:
		if !strings.Contains(err.Error(), dead) {
			t.Errorf("dial error %q does not name %s", err, dead)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no failed dial reported")
	}
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, "go-zookeeper's failed connect in the log", func() bool {
		return strings.Contains(logs.String(), "zookeeper: failed to connect to "+dead)
	})
	conn.Close()
	if strings.Contains(logs.String(), password) {
		t.Fatalf("the logs hold the password:\n%s", logs.String())
	}
}

func TestConnectAndAddAuth(t *testing.T) {
	zks := zkserver.StartT(t)
	sessions := make(chan zk.State, 16)
	cfg := Config{
		Servers:        []string{zks.Addr()},
		SessionTimeout: 4 * time.Second,
		ConnectTimeout: 2 * time.Second,
		AuthScheme:     "digest",
		Auth:           []byte("alice:s3cret"),
	}
	conn, err := Connect(cfg, func(ev zk.Event) {
		if ev.Type == zk.EventSession {
			select {
			case sessions <- ev.State:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for st := range sessions {
		if st == zk.StateHasSession {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := AddAuth(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	// Only a session with alice's credentials can create under an
	// auth-only ACL.
	if _, err := conn.Create("/alice", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatalf("creating with the auth ACL: %v", err)
	}
	acl, _, err := conn.GetACL("/alice")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "alice:") {
		t.Fatalf("ACL %+v, %v; want digest alice", acl, err)
	}

	if err := AddAuth(ctx, conn, Config{}); err != nil {
		t.Errorf("AddAuth without a scheme: %v", err)
	}

	// A server that stops answering: AddAuth gives up with ctx and closes
	// the connection rather than leave the request hanging.
	if err := zks.Pause(); err != nil {
		t.Fatal(err)
	}
	defer zks.Resume()
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	err = AddAuth(short, conn, cfg)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 2s") {
		t.Fatalf("AddAuth = %v, want a deadline error", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %q holds the credentials", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("AddAuth returned after %s", took)
	}
	if _, _, err := conn.Exists("/alice"); !errors.Is(err, zk.ErrClosing) && !errors.Is(err, zk.ErrConnectionClosed) {
		t.Errorf("after AddAuth gave up, a request got %v, want the connection closed", err)
	}
}
