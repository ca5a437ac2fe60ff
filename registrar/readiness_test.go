package registrar_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// mark is the one registration's not-ready mark, as the driver reads it;
// "-" when there is not exactly one registration.
func (h *harness) mark() string {
	h.t.Helper()
	kids := h.children()
	if len(kids) != 1 {
		return "-"
	}
	for _, n := range kids {
		return n.NotReady
	}
	return "-"
}

func (h *harness) waitMark(want string) {
	h.t.Helper()
	eventually(h.t, "the registration marked "+strconvQuote(want), func() bool {
		return h.mark() == want && h.reg.Status().NotReady == want && h.reg.Status().Healthy == (want == "")
	})
}

func strconvQuote(s string) string { return `"` + s + `"` }

// A coordinator that answers but takes no work stays listed with the reason
// in its registration (notready=), which is taken away when it is ready
// again: starting, a leaving node state, fewer active workers than
// MinWorkers (read from PrestoDB's /v1/cluster, from Trino's node manager
// mbean, or from whichever answers when the source is not said), and an
// operator's drain mark, which outlives the registrar.
func TestMarksANotReadyCoordinator(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flavour coordinator.Flavour
		source  registrar.LoadSource
	}{
		{"presto", coordinator.Presto, registrar.LoadFromPresto},
		{"trino", coordinator.Trino, registrar.LoadFromTrino},
		{"trino, source found", coordinator.Trino, ""},
		{"presto, source found", coordinator.Presto, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coord, err := coordinator.Start(coordinator.Options{Name: "c1", Version: "0.289", Flavour: tc.flavour})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { coord.Close() })
			zks := zkserver.StartT(t)
			h := &harness{t: t, zk: zks, coord: coord, observer: fleet.DialT(t, zks.Addr())}
			cfg := registrar.Config{Servers: []string{h.zk.Addr()}, AdvertiseURI: coord.URL(), Interval: 20 * time.Millisecond,
				MinWorkers: 1, WorkersSource: tc.source, SessionTimeout: 2 * time.Second, Logger: testLogger(t)}
			h.start(cfg)
			first := h.waitRegistered()
			h.waitMark("")

			coord.SetNoWorkers(true)
			h.waitMark("workers:0/1")
			coord.SetNoWorkers(false)
			h.waitMark("")
			if tc.name != "presto" {
				return
			}
			if st := h.reg.Status(); st.Path == first {
				t.Errorf("the readiness changes kept znode %s: a client that watches only some children's data would miss them", first)
			}

			coord.SetStarting(true)
			h.waitMark(registrar.NotReadyStarting)
			coord.SetStarting(false)
			coord.SetNodeState("SHUTTING_DOWN")
			h.waitMark("SHUTTING_DOWN")
			coord.SetNodeState("")
			h.waitMark("")

			ctx := context.Background()
			if err := registrar.SetDrained(ctx, cfg, coord.URL(), true); err != nil {
				t.Fatal(err)
			}
			h.waitMark(registrar.NotReadyDrained)
			// The mark is ZooKeeper's, not the registrar's: a new one
			// finds it.
			h.cancel()
			h.waitStopped()
			h = &harness{t: t, zk: zks, coord: coord, observer: h.observer}
			h.start(cfg)
			h.waitMark(registrar.NotReadyDrained)
			if err := registrar.SetDrained(ctx, cfg, coord.Addr(), false); err != nil {
				t.Fatal(err)
			}
			h.waitMark("")
			// Twice is once.
			for range 2 {
				if err := registrar.SetDrained(ctx, cfg, coord.Addr(), true); err != nil {
					t.Fatal(err)
				}
			}
			h.waitMark(registrar.NotReadyDrained)
			for range 2 {
				if err := registrar.SetDrained(ctx, cfg, coord.Addr(), false); err != nil {
					t.Fatal(err)
				}
			}
			h.waitMark("")
		})
	}
}

// With UnlistNotReady, a coordinator without enough workers is unlisted, as
// registrars before the mark did with every not-ready coordinator.
func TestUnlistsWithoutWorkersWhenAsked(t *testing.T) {
	h := newHarness(t, func(c *registrar.Config) { c.MinWorkers, c.UnlistNotReady = 1, true })
	h.waitRegistered()
	h.coord.SetNoWorkers(true)
	h.waitDeregistered()
	if st := h.reg.Status(); st.NotReady != "workers:0/1" || st.Healthy {
		t.Errorf("status %+v", st)
	}
	h.coord.SetNoWorkers(false)
	h.waitRegistered()
}

// A readiness change replaces the registration by a new znode created
// before the old one is deleted: a client watching the children, which
// reads the list again at each notification, never finds the coordinator
// unlisted, across many flips; and the registration is not counted as a
// new one. (A delete then a create, as before, left it unlisted for a
// round trip, which such a watcher saw.)
func TestReadinessFlipsNeverUnlist(t *testing.T) {
	// A check that fails (a loaded machine, a probe slower than Interval)
	// must not unlist it either: only readiness changes are under test.
	h := newHarness(t, func(c *registrar.Config) { c.Interval, c.FailureThreshold = 20*time.Millisecond, 1000 })
	h.waitRegistered()
	watcher := fleet.DialT(t, h.zk.Addr())
	stop := make(chan struct{})
	lists := make(chan [][]string, 1)
	go func() {
		var seen [][]string
		defer func() { lists <- seen }()
		for {
			kids, _, ev, err := watcher.ChildrenW("/presto")
			if err != nil {
				seen = append(seen, []string{"error: " + err.Error()})
				return
			}
			seen = append(seen, kids)
			select {
			case <-ev:
			case <-stop:
				return
			}
		}
	}()
	const flips = 30
	for i := range flips {
		h.coord.SetStarting(i%2 == 0)
		if i%2 == 0 {
			h.waitMark(registrar.NotReadyStarting)
		} else {
			h.waitMark("")
		}
	}
	close(stop)
	seen := <-lists
	if len(seen) < flips {
		t.Errorf("the watcher saw %d children lists over %d flips, want one at least for each", len(seen), flips)
	}
	for i, kids := range seen {
		if len(kids) == 0 {
			t.Fatalf("children list %d of %d is empty: the coordinator was unlisted during a readiness change", i, len(seen))
		}
		if strings.HasPrefix(kids[0], "error") {
			t.Fatal(kids[0])
		}
	}
	if st := h.reg.Status(); st.Registrations != 1 || st.ReadinessWrites != flips {
		t.Errorf("Registrations %d, ReadinessWrites %d; want 1 and %d", st.Registrations, st.ReadinessWrites, flips)
	}
}
