package gateway_test

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
)

// countingTransport counts the requests it sends.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// waitNoConns waits until c has no open connection, else fails.
func waitNoConns(t *testing.T, c *coordinator.Coordinator, after string) {
	t.Helper()
	testutil.Eventually(t, 3*time.Second, 10*time.Millisecond, "no connection open to "+c.Name()+" "+after,
		func() bool { return c.OpenConns() == 0 })
}

// A query pages across a reload that drops its DSN group: its last pages
// go through the dropped group's pool, which Gateway.Close then closes.
func TestDroppedGroupConnectionsClosed(t *testing.T) {
	cs := startCoordinators(t, 2)
	file := writeConfig(t, "", `{"groups": [{"name": "d", "members": ["presto://`+cs[0].Addr()+`/"]}]}`)
	gw, srv := configGateway(t, file, nil)
	pages := 0
	n := runStatement(t, srv.URL, "SELECT * FROM rows(8)", nil, func() {
		if pages++; pages == 1 {
			gs, err := gateway.LoadConfig(writeConfig(t, file, `{"groups": [{"name": "p", "members": ["`+cs[1].URL()+`"]}]}`), gateway.BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			gw.SetGroups(gs)
		}
	})
	if n != 8 {
		t.Fatalf("%d rows, want 8", n)
	}
	srv.Close()
	gw.Close()
	waitNoConns(t, cs[0], "after Gateway.Close")
}

// Groups built by hand that the Groups does not own: closing it still
// closes the connections of the pool it made over a group's Client.
func TestHandBuiltGroupConnectionsClosed(t *testing.T) {
	cs := startCoordinators(t, 1)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	r := staticRouter(t, cs[0].Addr())
	gs, err := gateway.NewGroups([]*gateway.Group{{Name: "g", Router: r, Weight: 1, Client: &http.Client{Transport: tr}}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Groups: gs, Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveGateway(t, gw)
	runStatement(t, srv.URL, "SELECT * FROM rows(4)", nil, nil)
	srv.Close()
	gw.Close()
	waitNoConns(t, cs[0], "after Gateway.Close")
}

// A Group reused in a second NewGroups after its Client was replaced (new
// TLS settings, say): the second Groups sends through the new Client.
func TestReusedGroupNewClient(t *testing.T) {
	cs := startCoordinators(t, 1)
	first := &countingTransport{next: http.DefaultTransport}
	second := &countingTransport{next: http.DefaultTransport}
	gr := &gateway.Group{Name: "g", Router: staticRouter(t, cs[0].Addr()), Weight: 1, Client: &http.Client{Transport: first}}
	gs1, err := gateway.NewGroups([]*gateway.Group{gr}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Groups: gs1, Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := serveGateway(t, gw)
	runStatement(t, srv.URL, "SELECT 1", nil, nil)
	gr.Client = &http.Client{Transport: second}
	gs2, err := gateway.NewGroups([]*gateway.Group{gr}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	gw.SetGroups(gs2)
	before := first.n.Load()
	runStatement(t, srv.URL, "SELECT 1", nil, nil)
	if second.n.Load() == 0 || first.n.Load() != before {
		t.Errorf("after the new Client: %d requests through it, %d more through the old one", second.n.Load(), first.n.Load()-before)
	}
}

// The same groups in two Groups made at once, each behind a gateway: no
// race (run with -race), and each serves.
func TestNewGroupsConcurrent(t *testing.T) {
	cs := startCoordinators(t, 1)
	groups := []*gateway.Group{{Name: "g", Router: staticRouter(t, cs[0].Addr()), Weight: 1, Client: &http.Client{}}}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gs, err := gateway.NewGroups(groups, nil, false)
			if err != nil {
				t.Error(err)
				return
			}
			gw, err := gateway.New(gateway.Config{Groups: gs, Keys: testKeys})
			if err != nil {
				t.Error(err)
				return
			}
			defer gw.Close()
			srv := serveGateway(t, gw)
			defer srv.Close()
			if n, err := statementRows(srv.URL, "SELECT 1", nil, nil); n != 1 || err != nil {
				t.Errorf("%d rows, %v", n, err)
			}
		}()
	}
	wg.Wait()
}

// Reloads that swap DSN groups while statements page through two
// replicas: every statement returns all its rows (and, under -race, no
// race).
func TestConcurrentReloadDSN(t *testing.T) {
	cs := startCoordinators(t, 2)
	cfgA := `{"groups": [{"name": "d", "members": ["presto://` + cs[0].Addr() + `/;zooKeeperStrategy=poll"]}]}`
	cfgB := `{"groups": [{"name": "d", "members": ["presto://` + cs[1].Addr() + `,` + cs[0].Addr() + `/"]}, {"name": "p", "members": ["` + cs[1].URL() + `"]}]}`
	file := writeConfig(t, "", cfgA)
	gw, srv := configGateway(t, file, nil)
	_, other := configGateway(t, file, nil)
	done := make(chan struct{})
	var reloads sync.WaitGroup
	reloads.Add(1)
	go func() {
		defer reloads.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			text := cfgA
			if i%2 == 1 {
				text = cfgB
			}
			c, err := gateway.ParseRouterConfig("config", []byte(text), nil)
			if err != nil {
				t.Error(err)
				return
			}
			gs, err := gateway.BuildGroups(c, gateway.BuildOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			gw.SetGroups(gs)
		}
	}()
	var runners sync.WaitGroup
	for w := range 4 {
		runners.Add(1)
		go func() {
			defer runners.Done()
			base := srv.URL
			if w%2 == 1 {
				base = other.URL
			}
			for range 15 {
				if n, err := statementRows(base, "SELECT * FROM rows(6)", nil, nil); n != 6 || err != nil {
					t.Errorf("%d rows, %v; want 6", n, err)
					return
				}
			}
		}()
	}
	runners.Wait()
	close(done)
	reloads.Wait()
}

// A group whose ZooKeeper accepts connections and never answers holds up
// no follow-up of another group's queries: they read only the groups whose
// discovery is open, and never try the dead one's.
func TestDeadZooKeeperHoldsUpNoOtherGroup(t *testing.T) {
	dead := deadpeer.NeverReads(t)
	plain := startCoordinators(t, 1)
	member := "trino://" + dead.Addr() + "/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=x;zooKeeperConnectTimeout=2s"
	file := writeConfig(t, "", `{"groups": [{"name": "dead", "members": [`+strconv.Quote(member)+`], "weight": 0}, {"name": "plain", "members": ["`+plain[0].URL()+`"]}]}`)
	_, srv := configGateway(t, file, nil)
	pages := 0
	// Pages with a nextUri: the POST's answer (queued: the gateway's own
	// first GET found rows, which it leaves to the client's, see
	// dispatchFirst), PrestoDB's first page of rows, from the queued
	// resource, and the second.
	if n := runStatement(t, srv.URL, "SELECT * FROM rows(6)", nil, func() { pages++ }); n != 6 || pages != 3 {
		t.Fatalf("%d rows in %d pages, want 6 in 3", n, pages)
	}
	if n := dead.Accepted(); n != 0 {
		t.Errorf("the query of the healthy group dialled the dead group's ZooKeeper %d times", n)
	}
}
