package realservers

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// workersWait is the required-workers-max-wait of the coordinators without
// workers below.
const workersWait = 3 * time.Second

// noWorkersAnswer is what a client sees of a statement on a coordinator
// without workers.
type noWorkersAnswer struct {
	PostAccepted bool // 200, no error, a queued nextUri
	QueuedUntil  bool // every answer before the failure on the queued resource, without error
	Name, Type   string
	Code         int
	WaitedText   bool // the message says how long it waited, and for how many workers
	Ended        bool // the failure has no nextUri
	WaitedLong   bool // the failure came after the wait
}

func noWorkersExchange(t *testing.T, baseURL string, flavour coordinator.Flavour) noWorkersAnswer {
	t.Helper()
	start := time.Now()
	st := submitRaw(t, baseURL, flavour, "zkpresto-no-workers", "SELECT count(*) FROM tpch.tiny.region")
	a := noWorkersAnswer{QueuedUntil: true}
	a.PostAccepted = st.last.Error == nil && strings.Contains(st.last.NextURI, "/v1/statement/queued/")
	for st.last.Error == nil && st.next != "" && time.Since(start) < 4*workersWait {
		if !strings.Contains(st.last.NextURI, "/v1/statement/queued/") {
			a.QueuedUntil = false
		}
		st.advance()
	}
	if e := st.last.Error; e != nil {
		a.Name, a.Type, a.Code = e.ErrorName, e.ErrorType, e.ErrorCode
		a.WaitedText = strings.Contains(e.Message, "Insufficient active worker nodes. Waited 3.00s for at least 1 workers, but only 0 workers are active")
	}
	a.Ended = st.last.NextURI == ""
	a.WaitedLong = time.Since(start) >= workersWait
	return a
}

// A coordinator without workers does not fail a statement at dispatch with
// NO_NODES_AVAILABLE, as the sources were read to say: it keeps it on the
// queued resource for query-manager.required-workers-max-wait, then fails
// it there with GENERIC_INSUFFICIENT_RESOURCES, never planned. Seen on
// both flavours, and the simulator's SetNoWorkers does the same.
func TestDifferentialNoWorkers(t *testing.T) {
	lonely := map[coordinator.Flavour]*realserver.Server{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, fl := range []coordinator.Flavour{coordinator.Trino, coordinator.Presto} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := realserver.Start(realserver.Options{Flavour: fl, Name: "lonely", NoWorkers: true,
				Config: map[string]string{"query-manager.required-workers-max-wait": "3s"}})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { _ = s.Close() })
			mu.Lock()
			lonely[fl] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	want := noWorkersAnswer{PostAccepted: true, QueuedUntil: true, Name: "GENERIC_INSUFFICIENT_RESOURCES",
		Type: "INSUFFICIENT_RESOURCES", Code: 131072, WaitedText: true, Ended: true, WaitedLong: true}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		real := noWorkersExchange(t, lonely[f.flavour].URL(), f.flavour)
		if real != want {
			t.Errorf("%s without workers: %+v, want %+v", f.flavour, real, want)
		}
		sim, err := coordinator.Start(coordinator.Options{Flavour: f.flavour, RequiredWorkersMaxWait: workersWait})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sim.Close() })
		sim.SetNoWorkers(true)
		if simulated := noWorkersExchange(t, sim.URL(), f.flavour); simulated != real {
			t.Errorf("the simulator without workers: %+v, the real server: %+v", simulated, real)
		}
		// What zkpresto register reads for --min-workers: 0 active workers
		// on the server and the simulator, from the source named and from
		// the one found.
		for _, source := range []registrar.LoadSource{registrar.LoadSource(f.flavour), ""} {
			for name, url := range map[string]string{"the real server": lonely[f.flavour].URL(), "the simulator": sim.URL()} {
				if n, err := registrar.ActiveWorkers(context.Background(), nil, url, source, "", ""); err != nil || n != 0 {
					t.Errorf("%s without workers, source %q: %d active workers, %v; want 0", name, source, n, err)
				}
			}
		}
		sim.SetNoWorkers(false)
		if n, err := registrar.ActiveWorkers(context.Background(), nil, sim.URL(), "", "", ""); err != nil || n != 1 {
			t.Errorf("the simulator with its worker: %d active workers, %v; want 1", n, err)
		}
	})
}
