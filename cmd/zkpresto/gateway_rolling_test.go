package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// roundRobinFront is a load balancer as gateway replicas run behind: each
// request goes to the next replica whose health check passes (checked
// every 50 ms, as a readiness probe), or, when a replica refuses the
// connection, to the one after it (nothing was sent).
type roundRobinFront struct {
	mu       sync.Mutex
	replicas []string // host:port
	healthy  map[string]bool
	next     int
	tr       *http.Transport
	served   map[string]*atomic.Int64
}

func startFront(t *testing.T, replicas ...string) (*roundRobinFront, string) {
	t.Helper()
	f := &roundRobinFront{healthy: map[string]bool{}, tr: &http.Transport{}, served: map[string]*atomic.Int64{}}
	for _, r := range replicas {
		f.add(r)
	}
	stop := make(chan struct{})
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			f.check()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "replica"
			pr.Out.Host = pr.In.Host // the replicas' URIs name the front
		},
		Transport:     f,
		FlushInterval: -1,
	})
	t.Cleanup(func() {
		srv.Close()
		close(stop)
		<-checked
		f.tr.CloseIdleConnections()
	})
	return f, srv.Listener.Addr().String()
}

func (f *roundRobinFront) add(replica string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replicas = append(f.replicas, replica)
	f.served[replica] = &atomic.Int64{}
}

// check asks each replica's /_zk/health.
func (f *roundRobinFront) check() {
	f.mu.Lock()
	replicas := append([]string(nil), f.replicas...)
	f.mu.Unlock()
	for _, r := range replicas {
		ok := false
		if resp, err := (&http.Client{Transport: f.tr, Timeout: time.Second}).Get("http://" + r + "/_zk/health"); err == nil {
			ok = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		f.mu.Lock()
		f.healthy[r] = ok
		f.mu.Unlock()
	}
}

// candidates are the healthy replicas from the next in turn on, or all of
// them when none is healthy.
func (f *roundRobinFront) candidates() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for i := range f.replicas {
		if r := f.replicas[(f.next+i)%len(f.replicas)]; f.healthy[r] {
			out = append(out, r)
		}
	}
	f.next++
	if len(out) == 0 {
		out = append(out, f.replicas...)
	}
	return out
}

// RoundTrip sends req to a replica, the next one when one refuses it.
func (f *roundRobinFront) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	for _, r := range f.candidates() {
		out := req.Clone(req.Context())
		out.URL.Host = r
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp, err := f.tr.RoundTrip(out)
		var op *net.OpError
		if err != nil && errors.As(err, &op) && op.Op == "dial" {
			continue // refused: nothing was sent
		}
		if err == nil {
			f.mu.Lock()
			f.served[r].Add(1)
			f.mu.Unlock()
		}
		return resp, err
	}
	return nil, errors.New("front: no replica took the connection")
}

// drainTook reads how long a drain took from the gateway's log line
// saying it drained with nothing cut.
var drainTook = regexp.MustCompile(`msg="drained: nothing in flight was cut" took=([0-9.]+[a-zµ]+)`)

// A rolling restart of three replicas behind a round-robin front, under
// a stream of multi-page queries: each drain ends within a second or so
// of its last request (its quiet time), not at --drain-timeout, cuts
// nothing, and no query fails or runs twice.
func TestGatewayRollingRestartBehindAFront(t *testing.T) {
	const clients = 8
	c, err := coordinator.Start(coordinator.Options{BatchRows: 1, PageDelay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	secret := writeGatewaySecret(t, t.TempDir())
	startReplica := func() (*running, string) {
		gw := start(t, "gateway", "--listen", "127.0.0.1:0", "--secret-file", secret,
			"--drain-timeout", "1m", "--drain-quiet", "1s", "--dsn", "presto://"+c.Addr()+"/;zooKeeperStrategy=poll")
		return gw, announcedAddr(t, gw, "http")
	}
	var replicas []*running
	var addrs []string
	for range 3 {
		gw, addr := startReplica()
		replicas, addrs = append(replicas, gw), append(addrs, addr)
	}
	front, frontAddr := startFront(t, addrs...)
	db, err := sql.Open("presto", "presto://alice@"+frontAddr+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(clients)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := startQueryStream(ctx, clients, db)
	st.more(t, 20)
	for i := range 3 {
		old := replicas[i]
		before := front.served[addrs[i]].Load()
		old.cancel() // SIGTERM
		select {
		case err := <-old.done:
			old.done <- err
			if err != nil {
				t.Fatalf("replica %d exited with %v", i, err)
			}
		case <-time.After(waitFor):
			t.Fatalf("replica %d did not end its drain within %s (--drain-timeout 1m)", i, waitFor)
		}
		log := old.errOut.String()
		m := drainTook.FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("replica %d did not say it drained with nothing cut:\n%s", i, log)
		}
		took, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		// The quiet second, the health check's 50 ms and some slack; far
		// from the minute of --drain-timeout.
		if took > 10*time.Second {
			t.Errorf("replica %d's drain took %s; want about its quiet time (1s)", i, took)
		}
		if front.served[addrs[i]].Load() == before {
			t.Errorf("replica %d served nothing before its restart; the test shows no drain", i)
		}
		gw, addr := startReplica()
		replicas[i], addrs[i] = gw, addr
		front.add(addr)
		st.more(t, 20)
	}
	for _, err := range st.stop() {
		t.Errorf("a query failed during the rolling restart: %v", err)
	}
	if got, want := c.Statements(), st.ran.Load(); got != want {
		t.Errorf("the coordinator received %d statements for %d queries run: a statement was lost or sent twice", got, want)
	}
}
