package wire_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// A cancel carries the statement's credentials to its coordinator only: a
// coordinator (or whatever answers in its place) that redirects the DELETE
// does not get them sent on, not even to another port of the same host,
// which Go's client would still send Authorization to (over plain http
// here).
func TestCancelQueryFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("Authorization") != "" {
			t.Errorf("a %s with Authorization reached a host the cancel was redirected to", r.Method)
		}
	}))
	defer other.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var deletes atomic.Int32
		coordinator := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			deletes.Add(1)
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		u, err := url.Parse(coordinator.URL + "/v1/statement/executing/q1/slug/1")
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{"Authorization": {"Basic dXNlcjpzZWNyZXQ="}}
		if err := wire.CancelQuery(context.Background(), &http.Client{}, u, h); err != nil {
			t.Errorf("%d: %v", code, err)
		}
		coordinator.Close()
		if deletes.Load() != 1 {
			t.Errorf("%d: the coordinator got %d DELETEs, want 1", code, deletes.Load())
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirected cancel reached the other host %d times, want never", n)
	}
}
