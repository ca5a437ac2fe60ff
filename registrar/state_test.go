package registrar_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// A coordinator shutting down gracefully still answers /v1/info with
// "starting": false (PrestoDB 0.287's ServerInfoResource.getInfo reads only
// whether its catalogs are loaded); only GET /v1/info/state says
// SHUTTING_DOWN (ServerInfoResource.getServerState,
// GracefulShutdownHandler.isShutdownRequested; Trino's NodeStateManager,
// with DRAINING and DRAINED for a node being drained). The registrar
// unlists it on the first such answer, whatever the failure threshold,
// and lists it again when its state is ACTIVE once more. A server without
// the resource (404) stays listed on /v1/info alone.
func TestUnlistsACoordinatorThatIsLeaving(t *testing.T) {
	zks := zkserver.StartT(t)
	observer := fleet.DialT(t, zks.Addr())
	for _, leavingState := range []string{"SHUTTING_DOWN", "DRAINING", "DRAINED"} {
		t.Run(leavingState, func(t *testing.T) {
			var mu sync.Mutex
			state := "ACTIVE"
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch r.URL.Path {
				case "/v1/info":
					fmt.Fprint(w, `{"nodeVersion":{"version":"0.287"},"environment":"test","coordinator":true,"starting":false}`)
				case "/v1/info/state":
					mu.Lock()
					s := state
					mu.Unlock()
					if s == "" {
						http.NotFound(w, r)
						return
					}
					fmt.Fprintf(w, "%q", s)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			setState := func(s string) {
				mu.Lock()
				state = s
				mu.Unlock()
			}
			h := &harness{t: t, zk: zks, observer: observer}
			namespace := "leaving" + strings.ToLower(strings.ReplaceAll(leavingState, "_", ""))
			h.start(registrar.Config{
				Servers:      []string{zks.Addr()},
				Namespace:    namespace,
				AdvertiseURI: srv.URL,
				Interval:     50 * time.Millisecond,
				// Only the state's verdict can unlist it in time: as many
				// ordinary failures would take minutes.
				FailureThreshold: 10000,
				UnlistNotReady:   true,
				Logger:           testLogger(t),
			})
			listed := func() int {
				kids, _, err := observer.Children("/" + namespace)
				if err != nil {
					t.Fatal(err)
				}
				return len(kids)
			}
			eventually(t, "the coordinator listed", func() bool { return h.reg.Status().Registered && listed() == 1 })

			setState(leavingState)
			eventually(t, "the coordinator unlisted", func() bool { return !h.reg.Status().Registered && listed() == 0 })
			if st := h.reg.Status(); st.Healthy || !strings.Contains(st.LastError, leavingState) || !strings.Contains(st.LastError, "/v1/info/state") {
				t.Errorf("while %s: status %+v, want unhealthy with the state named", leavingState, st)
			}

			setState("ACTIVE")
			eventually(t, "the coordinator listed again", func() bool { return h.reg.Status().Registered && listed() == 1 })

			setState("") // a server without /v1/info/state
			before := h.reg.Status().LastCheck
			eventually(t, "two more checks", func() bool { return h.reg.Status().LastCheck.After(before.Add(100 * time.Millisecond)) })
			if st := h.reg.Status(); !st.Registered || !st.Healthy {
				t.Errorf("without /v1/info/state: status %+v, want listed on /v1/info alone", st)
			}
		})
	}
}
