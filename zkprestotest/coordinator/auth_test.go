package coordinator

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRequireAuthorization checks that a coordinator with
// RequireAuthorization answers 401 to a request without Authorization and
// to a Negotiate token it saw before, on the submission and on the
// follow-ups alike, and takes any other credential.
func TestRequireAuthorization(t *testing.T) {
	c := start(t, Options{RequireAuthorization: true})
	do := func(method, url, auth string) *http.Response {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader("SELECT 1")
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequest(method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Presto-User", "alice")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	submit := c.URL() + "/v1/statement"
	if resp := do(http.MethodPost, submit, ""); resp.StatusCode != http.StatusUnauthorized || len(resp.Header.Values("WWW-Authenticate")) == 0 {
		t.Fatalf("no Authorization: %d, challenge %q; want 401 with one", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	resp := do(http.MethodPost, submit, "Negotiate tok-1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a fresh Negotiate token: %d", resp.StatusCode)
	}
	var ans struct {
		NextURI string `json:"nextUri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || ans.NextURI == "" {
		t.Fatalf("submission's answer: %v, nextUri %q", err, ans.NextURI)
	}
	if resp := do(http.MethodGet, ans.NextURI, "Negotiate tok-1"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a replayed Negotiate token: %d, want 401", resp.StatusCode)
	}
	if resp := do(http.MethodGet, ans.NextURI, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a poll without Authorization: %d, want 401", resp.StatusCode)
	}
	if resp := do(http.MethodGet, ans.NextURI, "Negotiate tok-2"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a poll with a fresh Negotiate token: %d", resp.StatusCode)
	}
	if resp := do(http.MethodDelete, ans.NextURI, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a cancel without Authorization: %d, want 401", resp.StatusCode)
	}
	if resp := do(http.MethodDelete, ans.NextURI, "Bearer any"); resp.StatusCode/100 != 2 {
		t.Fatalf("a cancel with a bearer token: %d", resp.StatusCode)
	}
}
