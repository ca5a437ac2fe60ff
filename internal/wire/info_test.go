package wire_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/info" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

const presto = `{"nodeVersion":{"version":"0.289"},"environment":"prod","coordinator":true,"starting":%v,"uptime":"1.00m"}`

func TestProbeInfo(t *testing.T) {
	// Another server, to tell whether a redirect was followed.
	var elsewhere atomic.Int64
	other := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		fmt.Fprintf(w, presto, false)
	})
	// Holds a handler until the probe has given up, then lets it return.
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}

	for _, tc := range []struct {
		name        string
		handler     http.HandlerFunc
		timeout     time.Duration // default one second
		want        wire.Verdict
		version     string
		errContains []string // all must appear in Err; Err must be nil for Up
		errIs       error
	}{
		{name: "up", handler: answer(200, "application/json", fmt.Sprintf(presto, false)),
			want: wire.Up, version: "0.289"},
		{name: "up with whitespace around the object", handler: answer(200, "application/json", "\n "+fmt.Sprintf(presto, false)+"\n"),
			want: wire.Up, version: "0.289"},
		{name: "starting", handler: answer(200, "application/json", fmt.Sprintf(presto, true)),
			want: wire.Starting, version: "0.289", errContains: []string{"/v1/info", "starting"}, errIs: wire.ErrStarting},
		{name: "503", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		}, want: wire.Down, errContains: []string{"/v1/info", "503"}},
		{name: "404", handler: answer(404, "text/plain", "no such resource"),
			want: wire.Down, errContains: []string{"/v1/info", "404"}},
		{name: "204", handler: answer(204, "application/json", ""),
			want: wire.Down, errContains: []string{"204"}},
		{name: "302 to another host", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/v1/info?token=s3cret", http.StatusFound)
		}, want: wire.Down, errContains: []string{"302", "redirect", other.URL + "/v1/info"}},
		{name: "302 on the same host", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/info" {
				http.Redirect(w, r, "/login", http.StatusFound)
				return
			}
			fmt.Fprintf(w, presto, false)
		}, want: wire.Down, errContains: []string{"302", "/login"}},
		{name: "HTML page from a proxy", handler: answer(200, "text/html", "<html><body>Welcome to the proxy</body></html>"),
			want: wire.Down, errContains: []string{"/v1/info", "not a JSON object", "text/html"}},
		{name: "empty body", handler: answer(200, "application/json", ""),
			want: wire.Down, errContains: []string{"not a JSON object"}},
		{name: "JSON but not an object", handler: answer(200, "application/json", `"ACTIVE"`),
			want: wire.Down, errContains: []string{"not a JSON object"}},
		{name: "null", handler: answer(200, "application/json", `null`),
			want: wire.Down, errContains: []string{"not a JSON object"}},
		{name: "truncated JSON", handler: answer(200, "application/json", `{"nodeVersion":{"version":"0.289"},"starting":fal`),
			want: wire.Down, errContains: []string{"not a Presto /v1/info answer"}},
		{name: "trailing garbage", handler: answer(200, "application/json", fmt.Sprintf(presto, false)+"<html>"),
			want: wire.Down, errContains: []string{"not a Presto /v1/info answer"}},
		{name: "starting of the wrong type", handler: answer(200, "application/json", `{"nodeVersion":{"version":"0.289"},"starting":"false"}`),
			want: wire.Down, errContains: []string{"not a Presto /v1/info answer"}},
		{name: "huge body", handler: answer(200, "application/json",
			`{"starting":false,"pad":"`+strings.Repeat("x", 1<<20)+`"}`),
			want: wire.Down, errContains: []string{"larger than 64 KiB"}},
		{name: "just under the limit", handler: answer(200, "application/json",
			`{"starting":false,"pad":"`+strings.Repeat("x", wire.MaxInfoBytes-64)+`"}`),
			want: wire.Up},
		{name: "slow headers", handler: stall, timeout: 100 * time.Millisecond,
			want: wire.Down, errContains: []string{"/v1/info", "deadline"}, errIs: context.DeadlineExceeded},
		{name: "slow body", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"starting":`)
			w.(http.Flusher).Flush()
			stall(w, r)
		}, timeout: 100 * time.Millisecond,
			want: wire.Down, errContains: []string{"/v1/info", "deadline"}, errIs: context.DeadlineExceeded},
		{name: "missing starting with nodeVersion", handler: answer(200, "application/json", `{"nodeVersion":{"version":"0.150"},"coordinator":true}`),
			want: wire.Up, version: "0.150"},
		{name: "missing starting without nodeVersion", handler: answer(200, "application/json", `{"status":"ok"}`),
			want: wire.Down, errContains: []string{`"starting"`, "nodeVersion"}},
		{name: "empty object", handler: answer(200, "application/json", `{}`),
			want: wire.Down, errContains: []string{`"starting"`}},
		{name: "starting false without nodeVersion", handler: answer(200, "application/json", `{"coordinator":true,"starting":false}`),
			want: wire.Up},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.handler)
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			before := elsewhere.Load()
			start := time.Now()
			// The client follows redirects, as by default: ProbeInfo must not.
			info := wire.ProbeInfo(ctx, testutil.NewClient(t), srv.URL)
			if took := time.Since(start); took > timeout+2*time.Second {
				t.Errorf("the probe took %v with a %v deadline", took, timeout)
			}
			if info.Verdict != tc.want {
				t.Fatalf("verdict %v (err %v), want %v", info.Verdict, info.Err, tc.want)
			}
			if info.Version != tc.version {
				t.Errorf("version %q, want %q", info.Version, tc.version)
			}
			if elsewhere.Load() != before {
				t.Error("the probe followed a redirect to another host")
			}
			if tc.want == wire.Up {
				if info.Err != nil {
					t.Errorf("Up with an error: %v", info.Err)
				}
				return
			}
			if info.Err == nil {
				t.Fatal("no error explains the verdict")
			}
			msg := info.Err.Error()
			for _, s := range append(tc.errContains, srv.URL) {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not mention %q", msg, s)
				}
			}
			if strings.Contains(msg, "s3cret") {
				t.Errorf("error %q carries the redirect's query", msg)
			}
			if tc.errIs != nil && !errors.Is(info.Err, tc.errIs) {
				t.Errorf("error %q is not %v", msg, tc.errIs)
			}
		})
	}
}

func TestProbeInfoTransportErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	ctx := context.Background()

	info := wire.ProbeInfo(ctx, testutil.NewClient(t), closed)
	if info.Verdict != wire.Down || info.Err == nil || !strings.Contains(info.Err.Error(), closed+"/v1/info") {
		t.Errorf("closed port: %v %v", info.Verdict, info.Err)
	}

	// Credentials in the base URL are sent, never shown.
	var gotAuth atomic.Bool
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, pw, ok := r.BasicAuth()
		gotAuth.Store(ok && pw == "hunter2")
		http.Error(w, "no", http.StatusUnauthorized)
	})
	withPassword := strings.Replace(srv.URL, "http://", "http://admin:hunter2@", 1)
	info = wire.ProbeInfo(ctx, testutil.NewClient(t), withPassword+"/")
	if info.Verdict != wire.Down || info.Err == nil || !strings.Contains(info.Err.Error(), "401") {
		t.Fatalf("401: %v %v", info.Verdict, info.Err)
	}
	if strings.Contains(info.Err.Error(), "hunter2") || strings.Contains(info.Err.Error(), "admin") {
		t.Errorf("error %q carries the credentials", info.Err)
	}
	if !gotAuth.Load() {
		t.Error("the base URL's credentials were not sent")
	}

	for _, bad := range []string{"", "ftp://h:1", "h:1", "http://", "http://admin:hunter2@h:1\x7f"} {
		info := wire.ProbeInfo(ctx, nil, bad)
		if info.Verdict != wire.Down || info.Err == nil {
			t.Errorf("%q: %v %v", bad, info.Verdict, info.Err)
			continue
		}
		if strings.Contains(info.Err.Error(), "hunter2") {
			t.Errorf("%q: error %q carries the password", bad, info.Err)
		}
	}
}

func TestProbeInfoRequest(t *testing.T) {
	var accept, path, method atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept.Store(r.Header.Get("Accept"))
		path.Store(r.URL.Path)
		method.Store(r.Method)
		fmt.Fprintf(w, presto, false)
	})
	// A base URL with a path prefix (a coordinator behind a path-routing
	// proxy) and a trailing slash.
	info := wire.ProbeInfo(context.Background(), testutil.NewClient(t), srv.URL+"/presto/?x=1")
	if info.Verdict != wire.Up {
		t.Fatalf("verdict %v: %v", info.Verdict, info.Err)
	}
	if accept.Load() != "application/json" || path.Load() != "/presto/v1/info" || method.Load() != http.MethodGet {
		t.Errorf("request: %v %v Accept %q", method.Load(), path.Load(), accept.Load())
	}
	if info.Environment != "prod" || !info.Coordinator {
		t.Errorf("info %+v", info)
	}
}

func TestProbeInfoReusesConnections(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"up", answer(200, "application/json", fmt.Sprintf(presto, false))},
		{"503 with a body", answer(503, "text/html", "<html>"+strings.Repeat(" ", 4<<10)+"</html>")},
		{"302", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }},
		{"HTML page", answer(200, "text/html", "<html>"+strings.Repeat(" ", 4<<10)+"</html>")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(tc.handler)
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			client := testutil.NewClient(t)
			var first wire.Verdict
			for i := range 5 {
				info := wire.ProbeInfo(context.Background(), client, srv.URL)
				if i == 0 {
					first = info.Verdict
				} else if info.Verdict != first {
					t.Fatalf("probe %d: %v, then %v", i, first, info.Verdict)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("5 probes opened %d connections, want 1", n)
			}
		})
	}
}

func TestProbeInfoAgainstTheSimulator(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Name: "c1", Version: "0.289"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client := testutil.NewClient(t)
	ctx := context.Background()

	if info := wire.ProbeInfo(ctx, client, c.URL()); info.Verdict != wire.Up || info.Version != "0.289" || !info.Coordinator {
		t.Errorf("running: %+v", info)
	}
	c.SetStarting(true)
	if info := wire.ProbeInfo(ctx, client, c.URL()); info.Verdict != wire.Starting || info.Version != "0.289" {
		t.Errorf("starting: %+v", info)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if info := wire.ProbeInfo(ctx, client, c.URL()); info.Verdict != wire.Down || !strings.Contains(info.Err.Error(), c.Addr()) {
		t.Errorf("stopped: %+v", info)
	}
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[wire.Verdict]string{
		wire.Down: "down", wire.Starting: "starting", wire.Up: "up", wire.Verdict(7): "Verdict(7)",
	} {
		if got := v.String(); got != want {
			t.Errorf("%d: %q, want %q", int(v), got, want)
		}
	}
	var zero wire.Info
	if zero.Verdict != wire.Down {
		t.Error("the zero Info is not Down")
	}
}
