package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// zkpresto gateway --explain says what the config's external routing hook
// answered, or that it failed open, and routes as two replicas do.
func TestGatewayExplainShowsTheHook(t *testing.T) {
	cs := startFleet(t, 2, coordinator.Options{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ User string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		switch in.User {
		case "etl_x":
			_, _ = io.WriteString(w, `{"group": "etl"}`)
		case "mallory":
			_, _ = io.WriteString(w, `{"refuse": "not today"}`)
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case "junk":
			_, _ = io.WriteString(w, `{"grp": "etl"}`)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	defer hook.Close()
	config := filepath.Join(t.TempDir(), "router-config.json")
	text := `{
  "groups": [
    {"name": "a", "members": ["` + cs[0].URL() + `"]},
    {"name": "etl", "members": ["` + cs[1].URL() + `"], "weight": 0}
  ],
  "selectors": [{"user": "bob|slow|junk", "targetGroup": "a"}],
  "externalRouting": {"url": "` + hook.URL + `", "timeout": "2s"}
}`
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	fronts := configReplicas(t, config, 2)
	for _, tc := range []struct{ user, hook, did string }{
		{"etl_x", `hook: answered group "etl"`, "coordinators: " + strings.TrimPrefix(cs[1].URL(), "http://")},
		{"bob", "hook: answered nothing; the selectors decide", "coordinators: " + strings.TrimPrefix(cs[0].URL(), "http://")},
		{"mallory", "hook: answered a refusal: not today", "refused: 403"},
		{"slow", "hook: failed open: no answer within its budget of 2s; the selectors decide", "coordinators: " + strings.TrimPrefix(cs[0].URL(), "http://")},
		{"junk", `hook: failed open (bad_answer): want {"group": "name"}, {"refuse": "message"} or {}: unknown field "grp"; the selectors decide`, "coordinators: " + strings.TrimPrefix(cs[0].URL(), "http://")},
	} {
		out, _, err := run([]string{"gateway", "--config", config, "--explain", "SELECT 1", "--explain-user", tc.user}, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.user, err)
		}
		if !strings.Contains(out, tc.hook+"\n") || !strings.Contains(out, tc.did) {
			t.Errorf("%s: --explain says\n%s\nwant %q and %q", tc.user, out, tc.hook, tc.did)
		}
		// Each replica does what --explain says.
		for _, front := range fronts {
			before := []int64{cs[0].Statements(), cs[1].Statements()}
			req, _ := http.NewRequest(http.MethodPost, front+"/v1/statement", strings.NewReader("SELECT 1"))
			req.Header.Set("X-Trino-User", tc.user)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			did := fmt.Sprintf("refused: %d", resp.StatusCode)
			for i, c := range cs {
				if c.Statements() != before[i] {
					did = "coordinators: " + strings.TrimPrefix(c.URL(), "http://")
				}
			}
			if did != tc.did {
				t.Errorf("%s: the gateway did %q (%d %s), --explain says %q", tc.user, did, resp.StatusCode, body, tc.did)
			}
			cancelQuery(t, body)
		}
	}
}
