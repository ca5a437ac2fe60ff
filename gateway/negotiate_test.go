package gateway_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// authCoordinator starts a coordinator of flavour f that authenticates
// every request and refuses a replayed Negotiate token, as PrestoDB with
// Kerberos does; the gateway over it has not seen it dispatch, so it
// would make a statement's first GET itself.
func authCoordinator(t *testing.T, f coordinator.Flavour, gf gateway.Flavour) (*coordinator.Coordinator, *gateway.Gateway, string) {
	t.Helper()
	c, err := coordinator.Start(coordinator.Options{Flavour: f, RequireAuthorization: true, Latency: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{Flavour: gf}, c.Addr())
	return c, g, serveGateway(t, g).URL
}

// TestNegotiateTokenIsNeverReplayed checks that a Kerberos client, which
// makes a fresh SPNEGO token for each request, runs its statement through
// the gateway against a coordinator that refuses a replayed token: the
// gateway makes no request of its own with the client's token (not the
// first GET of the queued nextUri, which it makes for a client with any
// other credential), so every token reaches the coordinator once, and no
// request is refused.
func TestNegotiateTokenIsNeverReplayed(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			c, _, base := authCoordinator(t, f.sim, f.gateway)
			n := 0
			method, uri, body := http.MethodPost, base+"/v1/statement", "SELECT 1"
			for uri != "" {
				n++
				req, _ := http.NewRequest(method, uri, strings.NewReader(body))
				req.Header.Set(f.user, "alice")
				req.Header.Set("Authorization", "Negotiate token-"+strconv.Itoa(n))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var answer struct {
					NextURI string `json:"nextUri"`
					Error   any    `json:"error"`
				}
				err = decodeJSON(resp.Body, &answer)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || answer.Error != nil {
					t.Fatalf("request %d, %s %s: %s %v %v", n, method, uri, resp.Status, err, answer.Error)
				}
				method, uri, body = http.MethodGet, answer.NextURI, ""
			}
			seen := map[string]int{}
			var queuedGet string
			for _, call := range c.Calls() {
				auth := call.Identity.Get("Authorization")
				seen[auth]++
				if call.Status == http.StatusUnauthorized {
					t.Errorf("%s %s was refused (Authorization %q)", call.Method, call.Path, auth)
				}
				if call.Method == http.MethodGet && strings.HasPrefix(call.Path, "/v1/statement/queued/") && queuedGet == "" {
					queuedGet = auth
				}
			}
			for auth, times := range seen {
				if times != 1 {
					t.Errorf("Authorization %q reached the coordinator %d times", auth, times)
				}
			}
			if len(seen) != n {
				t.Errorf("%d tokens reached the coordinator, the client made %d", len(seen), n)
			}
			if queuedGet != "Negotiate token-2" {
				t.Errorf("the first GET of the queued nextUri carried %q, want the client's second token", queuedGet)
			}
		})
	}
}

// TestGatewaysOwnRequestsCarryReplayableCredentials checks what the
// gateway's own requests to a coordinator that authenticates every
// request carry: the client's bearer token on its first GET and on the
// cancel of a client that left during its POST (answered, so the query
// ends), and never a Negotiate token, which would be refused as a replay
// (the cancel goes without it).
func TestGatewaysOwnRequestsCarryReplayableCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, auth string
		cancelled  bool
	}{
		{"bearer", "Bearer eyJ.e30.sig", true},
		{"negotiate", "Negotiate one-use", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, g, base := authCoordinator(t, coordinator.Presto, "")
			c.SetLatency(time.Hour)
			// The first GET, which the gateway makes for a coordinator it has
			// not seen dispatch.
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader("SELECT 1"))
			req.Header.Set("X-Presto-User", "alice")
			req.Header.Set("Authorization", tc.auth)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST: %s", resp.Status)
			}
			// A client that leaves while the coordinator is slow to answer.
			c.SetAnswerDelay(300 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/statement", strings.NewReader("SELECT 2"))
			req.Header.Set("X-Presto-User", "alice")
			req.Header.Set("Authorization", tc.auth+"-2")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatal("the POST returned before the client's deadline")
			}
			waitIdle(t, g)
			var deletes int
			deadline := time.Now().Add(10 * time.Second)
			for deletes == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				for _, call := range c.Calls() {
					if call.Method == http.MethodDelete {
						deletes++
					}
				}
			}
			var gets int
			for _, call := range c.Calls() {
				auth := call.Identity.Get("Authorization")
				switch call.Method {
				case http.MethodGet:
					gets++
					if tc.cancelled && auth != tc.auth {
						t.Errorf("the gateway's GET of %s carried %q, want the client's token", call.Path, auth)
					}
				case http.MethodDelete:
					if strings.HasPrefix(auth, "Negotiate") {
						t.Errorf("the gateway's cancel carried the client's Negotiate token")
					}
					if got := call.Status == http.StatusNoContent; got != tc.cancelled {
						t.Errorf("the gateway's cancel (Authorization %q) answered %d", auth, call.Status)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.cancelled]; gets != want {
				t.Errorf("the gateway made %d GETs of its own, want %d", gets, want)
			}
			if deletes == 0 {
				t.Fatal("the gateway sent no cancel for the client that left")
			}
			if tc.cancelled && c.Running() != 1 {
				t.Errorf("%d queries running after the cancel, want the first alone", c.Running())
			}
		})
	}
}

// TestNegotiateQueryLookupIsNotReplayed checks GET and DELETE
// /v1/query/{id} of a Kerberos client on a replica that never saw its
// query: the search of the coordinators that know it goes without the
// client's token, which reaches the coordinator once, with the client's
// own request, not refused as a replay of the search's.
func TestNegotiateQueryLookupIsNotReplayed(t *testing.T) {
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) {
			c, _, base := authCoordinator(t, f.sim, f.gateway)
			// The statement through the coordinator itself, dispatched by
			// its first GET: the gateway has not seen it.
			n := 0
			send := func(method, uri string, body string) *http.Response {
				t.Helper()
				n++
				req, _ := http.NewRequest(method, uri, strings.NewReader(body))
				req.Header.Set(f.user, "alice")
				req.Header.Set("Authorization", "Negotiate token-"+strconv.Itoa(n))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			var answer struct {
				ID      string `json:"id"`
				NextURI string `json:"nextUri"`
			}
			resp := send(http.MethodPost, "http://"+c.Addr()+"/v1/statement", "SELECT 1")
			err := decodeJSON(resp.Body, &answer)
			resp.Body.Close()
			if err != nil || answer.ID == "" || answer.NextURI == "" {
				t.Fatalf("POST: %s %v %+v", resp.Status, err, answer)
			}
			resp = send(http.MethodGet, answer.NextURI, "")
			resp.Body.Close()
			for _, method := range []string{http.MethodGet, http.MethodDelete} {
				resp = send(method, base+"/v1/query/"+answer.ID, "")
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					t.Errorf("%s /v1/query/%s through the gateway: %s", method, answer.ID, resp.Status)
				}
			}
			seen := map[string]int{}
			for _, call := range c.Calls() {
				auth := call.Identity.Get("Authorization")
				seen[auth]++
				if call.Status == http.StatusUnauthorized && auth != "" {
					t.Errorf("%s %s was refused (Authorization %q)", call.Method, call.Path, auth)
				}
			}
			for auth, times := range seen {
				if auth != "" && times != 1 {
					t.Errorf("Authorization %q reached the coordinator %d times", auth, times)
				}
			}
		})
	}
}
