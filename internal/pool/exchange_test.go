package pool

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// A request net/http would refuse to send is refused here, recorded as
// invalid and never as the coordinator's failure, and never reaches it.
func TestUnsendableRequestIsNotTheCoordinatorsFault(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, header := range []http.Header{
		{"X-Presto-User": {"al\nice"}},
		{"X-Presto-Session": {"a=\x7f"}},
		{"Bad Name": {"x"}},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
		req.Header = header
		var e Exchange
		_, err := Submit(http.DefaultTransport, req, &e, nil)
		var re *wire.RequestError
		if !errors.As(err, &re) || e.Invalid() == nil {
			t.Errorf("%v: got %v, want a RequestError recorded as invalid", header, err)
		}
		if f, _ := e.Failure(); f != nil {
			t.Errorf("%v: recorded as the coordinator's failure: %v", header, f)
		}
		req, _ = http.NewRequest(http.MethodGet, srv.URL+"/v1/statement/q/1", nil)
		req.Header = header
		if _, err := FollowUp(http.DefaultTransport, req, &e, nil); !errors.As(err, &re) {
			t.Errorf("%v: follow-up got %v", header, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the coordinator got %d requests", hits.Load())
	}
}

// Refusals are not accepted: recorded as not sent, matched by ErrRefused.
func TestRefusalStatusesAreNotSent(t *testing.T) {
	for _, status := range []int{429, 502, 503, 504} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
		var e Exchange
		_, err := Submit(http.DefaultTransport, req, &e, nil)
		f, sent := e.Failure()
		if !errors.Is(err, wire.ErrRefused) || f == nil || sent {
			t.Errorf("%d: got %v, failure %v sent %t; want a refusal, not sent", status, err, f, sent)
		}
		srv.Close()
	}
	// 500 is the coordinator's answer: the client reads its error.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, `{"error":"x"}`, 500) }))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	var e Exchange
	resp, err := Submit(http.DefaultTransport, req, &e, nil)
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("500: got %v, %v", resp, err)
	}
	resp.Body.Close()
}

// The gate: a submission aborted before its last bytes were released never
// completes at the server, and one whose last bytes were released cannot
// be aborted.
func TestGateBody(t *testing.T) {
	var complete atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, err := io.ReadAll(r.Body); err == nil && string(b) == "SELECT 1" {
			complete.Add(1)
		}
	}))
	defer srv.Close()

	var aborted Exchange
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	aborted.GateBody(req)
	if !aborted.AbortSubmission() {
		t.Fatal("a fresh gate could not be aborted")
	}
	if _, err := Submit(http.DefaultTransport, req, &aborted, nil); err == nil {
		t.Fatal("an aborted submission was sent")
	}

	var released Exchange
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	released.GateBody(req)
	resp, err := Submit(http.DefaultTransport, req, &released, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if released.AbortSubmission() {
		t.Fatal("a submission whose body was sent could still be aborted")
	}
	if complete.Load() != 1 {
		t.Fatalf("%d complete statements at the server, want 1", complete.Load())
	}
}
