package registrar_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// startWithLostCreate starts a registrar for a ready coordinator whose first
// registration reaches ZooKeeper while the answer never reaches the
// registrar, and returns once ZooKeeper holds that znode: an orphan the
// registrar does not know of, owned by a session that outlives the cut the
// caller makes next (the proxy holds the connection open but silent).
func startWithLostCreate(t *testing.T, logger *slog.Logger) (h *harness, p *proxy, orphan string, owner int64) {
	t.Helper()
	zks := zkserver.StartT(t)
	coord := startCoordinator(t)
	p = startProxy(t, zks.Addr())
	lost := p.loseAnswerTo("/presto/serverUri=" + coord.Addr() + ";")
	h = &harness{t: t, zk: zks, coord: coord, observer: fleet.DialT(t, zks.Addr())}
	h.start(registrar.Config{
		Servers:      []string{p.addr()},
		AdvertiseURI: coord.URL(),
		Interval:     50 * time.Millisecond,
		// The test is of unlisting: a mark would keep the znode.
		UnlistNotReady: true,
		// Far longer than the cut and go-zookeeper's reconnect (about a
		// second): the session resumes, so its ephemeral znodes do not
		// vanish by themselves.
		SessionTimeout: 8 * time.Second,
		Logger:         logger,
	})
	select {
	case <-lost:
	case <-time.After(waitFor):
		t.Fatal("the registrar sent no create")
	}
	eventually(t, "ZooKeeper to apply the create", func() bool {
		kids := h.children()
		for path := range kids {
			orphan = path
		}
		return len(kids) == 1
	})
	_, stat, err := h.observer.Exists(orphan)
	if err != nil {
		t.Fatal(err)
	}
	owner = stat.EphemeralOwner
	if st := h.reg.Status(); st.Registered {
		t.Fatalf("the registrar knows of %s: the answer was not lost (status %+v)", st.Path, st)
	}
	return h, p, orphan, owner
}

// A create whose answer is lost with the connection leaves a znode in the
// registrar's session. When the coordinator is not ready by the time the
// same session resumes, that znode must go: not ready means not listed.
func TestLostCreateLeavesNoOrphan(t *testing.T) {
	for _, tc := range []struct {
		name     string
		notReady func(*coordinator.Coordinator) error // nil: it stays ready
		ready    func(*coordinator.Coordinator) error
	}{
		{
			name:     "starting",
			notReady: func(c *coordinator.Coordinator) error { c.SetStarting(true); return nil },
			ready:    func(c *coordinator.Coordinator) error { c.SetStarting(false); return nil },
		},
		{
			name:     "down",
			notReady: (*coordinator.Coordinator).Stop,
			ready:    (*coordinator.Coordinator).Restart,
		},
		{name: "ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, p, orphan, owner := startWithLostCreate(t, testLogger(t))
			if tc.notReady != nil {
				if err := tc.notReady(h.coord); err != nil {
					t.Fatal(err)
				}
			}
			// Cut the connection the answer was lost on, and keep the
			// registrar away until it has seen the coordinator not ready,
			// so that it meets the orphan on the not-ready path.
			p.block()
			if tc.notReady != nil {
				eventually(t, "the registrar to see the coordinator not ready", func() bool { return !h.reg.Status().Healthy })
			}
			p.unblock()
			eventually(t, "the registrar to reconnect", func() bool { return h.reg.Status().Connected })

			if tc.notReady != nil {
				eventually(t, "no registration of the coordinator that is not ready", func() bool { return len(h.children()) == 0 })
				if err := tc.ready(h.coord); err != nil {
					t.Fatal(err)
				}
			}
			path := h.waitRegistered()
			if path == orphan {
				t.Fatalf("registered %s, the orphan's path", path)
			}
			// The session that owned the orphan is the one that registers:
			// the orphan went because the registrar removed it, not with
			// an expired session.
			_, stat, err := h.observer.Exists(path)
			if err != nil {
				t.Fatal(err)
			}
			if stat.EphemeralOwner != owner {
				t.Errorf("%s is owned by session %#x, the orphan by %#x: the session did not resume", path, stat.EphemeralOwner, owner)
			}
			if st := h.reg.Status(); st.Registrations != 1 || st.SessionReRegistrations != 0 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// Shutdown that arrives while a create's answer is outstanding, just before
// the connection is cut, must still remove the znode that create left:
// drain waits for the session to resume and sweeps, rather than close a
// session ZooKeeper cannot hear closing and leave the coordinator listed
// until it expires.
func TestDrainRemovesTheOrphanOfALostCreate(t *testing.T) {
	logs := &testutil.Buffer{}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, p, orphan, _ := startWithLostCreate(t, logger)
	h.cancel()
	p.block() // cut the connection; the registrar may reconnect at once
	p.unblock()
	h.waitStopped()
	if ok, _, err := h.observer.Exists(orphan); err != nil || ok {
		t.Fatalf("after Run returned, the orphan %s exists=%v (err %v)", orphan, ok, err)
	}
	if out := logs.String(); !strings.Contains(out, "removed an orphaned registration") || !strings.Contains(out, orphan) {
		t.Errorf("the log does not say the registrar removed %s:\n%s", orphan, out)
	}
}
