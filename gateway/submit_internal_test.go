package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/attemptcases"
	"github.com/zkpresto/zkpresto/internal/verdict"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
)

// The gateway decides an attempt of a submission on the one table of
// cases the driver also runs (attemptcases): each case the gateway can
// meet is made into the gateway's record of an attempt (submitAttempt)
// and classified from it, and gives the case's kind, routing outcome and
// error. The cases it cannot meet are the driver's: a query error read
// from an answer (the gateway relays answers unread), a caller that left
// after the statement was whole (the submission outlives its client) or
// whose deadline passed then.
func TestClassifySubmission(t *testing.T) {
	met := attemptcases.Check(t, func(f verdict.Facts) (verdict.Kind, routing.Outcome, error, bool) {
		a, ok := submitAttemptOf(f)
		if !ok {
			return 0, 0, nil, false
		}
		got := classifySubmission(a)
		if got.answered() != (got.Err == nil) {
			t.Errorf("answered() = %v with error %v", got.answered(), got.Err)
		}
		return got.Kind, got.routing(), got.Err, true
	})
	for _, k := range []verdict.Kind{verdict.Answered, verdict.NotReady, verdict.NotSent, verdict.MaybeRan,
		verdict.Unanswered, verdict.Invalid, verdict.HeadRefused, verdict.Abandoned, verdict.TimedOut} {
		if !met[k] {
			t.Errorf("no case of %v made into the gateway's record", k)
		}
	}
}

// submitAttemptOf is the gateway's record of an attempt with facts f;
// false when the gateway never records such an attempt.
func submitAttemptOf(f verdict.Facts) (submitAttempt, bool) {
	a := submitAttempt{failure: f.Failure, sent: f.Sent, written: f.Written, invalid: f.Invalid, clientGone: f.Aborted, headBytes: f.HeadBytes}
	switch {
	case f.Deadline, f.Aborted && (f.Written || f.Answered):
		return a, false // the client leaving after the statement was whole aborts nothing
	case f.Err == nil:
		status := f.Status
		if status == 0 {
			status = http.StatusOK
		}
		a.resp = &http.Response{StatusCode: status}
	case f.Answered && wire.NeverRan(f.ErrorName, f.Queued):
		a.failure, a.sent = nil, false
		a.dispatchErr = fmt.Errorf("%w: %w", f.Err, &notReadyError{Node: "c1:8080", ErrorName: f.ErrorName, Message: "not ready"})
	case f.Answered && f.Failure != nil:
		a.failure, a.sent = nil, false
		a.dispatchErr = f.Failure // the first GET's failure
	case f.Answered:
		return a, false // a query error: the gateway relays the answer
	default:
		a.submitErr = f.Err
	}
	return a, true
}

// A coordinator's 4xx answer refused the client's own request: relayed as
// it came, an answer, never the coordinator's failure.
func TestSubmissionClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 413, 431} {
		got := classifySubmission(submitAttempt{resp: &http.Response{StatusCode: status}, written: true})
		if !got.clientError || got.Kind != verdict.Answered || got.routing() != routing.Answered || got.Err != nil {
			t.Errorf("%d: %+v, want a client error relayed as an answer", status, got)
		}
	}
	for _, status := range []int{200, 500} {
		if got := classifySubmission(submitAttempt{resp: &http.Response{StatusCode: status}, written: true}); got.clientError {
			t.Errorf("%d taken for a client error", status)
		}
	}
}

// A coordinator that took the whole statement and gives no answer within
// the submission's timeout may be running it: the client gets a 500 it
// does not retry, never the 503 of a statement no coordinator took, the
// coordinator is charged a failure, and the statement goes nowhere else.
func TestSilentCoordinatorAfterTheStatementIsNeverRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var statements atomic.Int32
	var conns sync.WaitGroup
	conns.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				if b, err := io.ReadAll(req.Body); err == nil && string(b) == "SELECT 1" {
					statements.Add(1)
				}
				<-release // the whole statement read, no answer
			})
		}
	})
	defer func() {
		close(release)
		ln.Close()
		conns.Wait()
	}()
	g, r := gatewayTo(t, ln.Addr().String())
	g.submitTimeout = 200 * time.Millisecond
	srv := httptest.NewServer(g)
	defer srv.Close()

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Trino-User", "alice")
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var queued queuedQuery
	err = json.NewDecoder(resp.Body).Decode(&queued)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || queued.NextURI == "" {
		t.Fatalf("%s %+v %v: want a queued query", resp.Status, queued, err)
	}
	// Its first page is its failure, which no client sends again.
	if resp, err = client.Get(queued.NextURI); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer prestoError
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || answer.Stats.State != "FAILED" || answer.Error.ErrorName != errStatementFailure {
		t.Errorf("%s %s: %s; want the query FAILED with %s", resp.Status, answer.Error.ErrorName, answer.Error.Message, errStatementFailure)
	}
	if n := statements.Load(); n != 1 {
		t.Errorf("the coordinator read the statement %d times, want once", n)
	}
	if nodes := r.Stats().Nodes; len(nodes) != 1 || nodes[0].LastError == "" {
		t.Errorf("coordinator's figures %+v: want a failure charged", nodes)
	}
}
