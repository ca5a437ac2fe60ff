package registrar_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
)

// figures is a coordinator's load endpoints in front of a simulated
// coordinator's /v1/info, with counts the test sets.
type figures struct {
	running, queued atomic.Int64
	failing         atomic.Bool
	reads           atomic.Int64
	moving          atomic.Bool // each read adds 5 to running
}

func (f *figures) serve(t *testing.T, infoURL, user, password string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/info":
			resp, err := http.Get(infoURL + "/v1/info")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
			return
		case "/v1/cluster", "/v1/jmx/mbean/trino.execution:name=QueryManager":
		default:
			http.NotFound(w, r)
			return
		}
		f.reads.Add(1)
		if u, p, ok := r.BasicAuth(); user != "" && (!ok || u != user || p != password || (r.Header.Get("X-Presto-User") != user && r.Header.Get("X-Trino-User") != user)) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if f.failing.Load() {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if f.moving.Load() {
			f.running.Add(5)
		}
		running, queued := f.running.Load(), f.queued.Load()
		if r.URL.Path == "/v1/cluster" {
			fmt.Fprintf(w, `{"runningQueries":%d,"blockedQueries":0,"queuedQueries":%d,"activeWorkers":1}`, running, queued)
			return
		}
		fmt.Fprintf(w, `{"objectName":"trino.execution:name=QueryManager","attributes":[{"name":"QueuedQueries","type":"long","value":%d},{"name":"RunningQueries","type":"long","value":%d}]}`, queued, running)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The registrar publishes the coordinator's running and queued queries in
// its own znode, in place, with the operator's credentials; the driver's
// parser reads them back; a read that fails takes the figure out, so that
// clients fall back to their own counts, and it comes back with the reads.
func TestRegistrarPublishesLoad(t *testing.T) {
	for _, source := range []registrar.LoadSource{registrar.LoadFromPresto, registrar.LoadFromTrino} {
		t.Run(string(source), func(t *testing.T) {
			f := &figures{}
			f.running.Store(3)
			f.queued.Store(1)
			var srv *httptest.Server
			h := newHarness(t, func(c *registrar.Config) {
				srv = f.serve(t, c.AdvertiseURI, "monitor", "s3cret")
				c.CoordinatorURL = srv.URL
				c.Load = &registrar.LoadPublishing{Source: source, Interval: 10 * time.Millisecond, MinGap: 20 * time.Millisecond, Slots: 8, User: "monitor", Password: "s3cret"}
			})
			path := h.waitRegistered()
			eventually(t, "3 running, 1 queued, 8 slots published", func() bool {
				l := h.children()[path].Load
				return l.Running == 3 && l.Queued == 1 && l.Slots == 8 && l.Known()
			})
			f.running.Store(10)
			eventually(t, "10 running published", func() bool { return h.children()[path].Load.Running == 10 })
			f.failing.Store(true)
			eventually(t, "the figure taken out", func() bool {
				n, ok := h.children()[path]
				return ok && !n.Load.Known()
			})
			f.failing.Store(false)
			eventually(t, "the figure back", func() bool { return h.children()[path].Load.Known() })
			// The status follows the write it reports on.
			eventually(t, "the status to count the four writes", func() bool {
				st := h.reg.Status()
				return st.LoadWrites >= 4 && st.Load.Known()
			})
			st := h.reg.Status()
			if st.Path != path || st.Registrations != 1 {
				t.Errorf("status %+v: want the figures written in place in one registration", st)
			}
		})
	}
}

// Wrong credentials: the coordinator refuses the reads and nothing is
// published, but the coordinator stays registered.
func TestRegistrarLoadWithoutCredentials(t *testing.T) {
	f := &figures{}
	var srv *httptest.Server
	h := newHarness(t, func(c *registrar.Config) {
		srv = f.serve(t, c.AdvertiseURI, "monitor", "s3cret")
		c.CoordinatorURL = srv.URL
		c.Load = &registrar.LoadPublishing{Source: registrar.LoadFromPresto, Interval: 10 * time.Millisecond, User: "monitor", Password: "wrong"}
	})
	path := h.waitRegistered()
	eventually(t, "several refused reads", func() bool { return f.reads.Load() >= 5 })
	if n := h.children()[path]; n.Load.Known() || h.reg.Status().LoadWrites != 0 {
		t.Errorf("published %+v after refused reads", n.Load)
	}
}

// However fast the figures move, the znode's data is written at most once
// per MinGap: its data version counts every write.
func TestRegistrarLoadWritesWithinBudget(t *testing.T) {
	f := &figures{}
	f.moving.Store(true)
	const minGap = 100 * time.Millisecond
	var srv *httptest.Server
	began := time.Now()
	h := newHarness(t, func(c *registrar.Config) {
		srv = f.serve(t, c.AdvertiseURI, "", "")
		c.CoordinatorURL = srv.URL
		c.Load = &registrar.LoadPublishing{Source: registrar.LoadFromPresto, Interval: time.Millisecond, MinGap: minGap}
	})
	path := h.waitRegistered()
	eventually(t, "five load writes", func() bool { return h.reg.Status().LoadWrites >= 5 })
	_, stat, err := h.observer.Get(path)
	elapsed := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if limit := int32(elapsed/minGap) + 1; stat.Version > limit {
		t.Errorf("%d writes in %s, more than one per %s allows (%d)", stat.Version, elapsed, minGap, limit)
	}
}

// Bad publishing settings are refused by New, naming what is wrong.
func TestRegistrarRefusesBadLoadSettings(t *testing.T) {
	for _, tc := range []struct {
		load registrar.LoadPublishing
		want string
	}{
		{registrar.LoadPublishing{}, `load source ""`},
		{registrar.LoadPublishing{Source: "openmetrics"}, `load source "openmetrics"`},
		{registrar.LoadPublishing{Source: registrar.LoadFromPresto, MinGap: time.Second, Refresh: time.Millisecond}, "shorter than the minimum gap"},
		{registrar.LoadPublishing{Source: registrar.LoadFromPresto, Interval: -1}, "negative"},
		{registrar.LoadPublishing{Source: registrar.LoadFromPresto, Password: "x"}, "password without a user"},
	} {
		_, err := registrar.New(registrar.Config{Servers: []string{"127.0.0.1:2181"}, AdvertiseURI: "http://127.0.0.1:8080", Load: &tc.load})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.load, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "x\"") {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
}
