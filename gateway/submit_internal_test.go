package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/wire"

	"github.com/zkpresto/zkpresto/routing"
)

// What an attempt of a submission means is decided from what it left
// alone: each kind, the routing outcome it gives, and the error the
// routing gets, also for the combinations a hostile coordinator or
// client makes.
func TestClassifySubmission(t *testing.T) {
	answer := func(status int) *http.Response { return &http.Response{StatusCode: status} }
	refused := &wire.RefusedError{Status: http.StatusServiceUnavailable}
	cut := fmt.Errorf("writing the statement: %w", syscall.ECONNRESET)
	unreadable := fmt.Errorf("reading a coordinator's answer: %w", io.ErrUnexpectedEOF)
	starting := &notReadyError{Node: "c1:8080", ErrorName: "SERVER_STARTING_UP", Message: "starting"}
	noWorkers := &notReadyError{Node: "c1:8080", ErrorName: "NO_NODES_AVAILABLE", Message: "no workers"}
	badHeader := &wire.RequestError{Err: errors.New(`invalid header value for "X-Trino-User"`)}
	redirect := &wire.RedirectError{Status: http.StatusTemporaryRedirect, Location: "http://elsewhere/"}

	// err names the attempt's field the routing gets: "" for none.
	cases := []struct {
		name    string
		attempt submitAttempt
		kind    submitKind
		outcome routing.Outcome
		err     string
	}{
		{"a 200", submitAttempt{resp: answer(200), written: true},
			submitAnswered, routing.Answered, ""},
		{"a 500 after the statement was written, which is no refusal",
			submitAttempt{resp: answer(500), written: true},
			submitAnswered, routing.Answered, ""},
		{"an answer wins over a failure recorded on the way",
			submitAttempt{resp: answer(200), failure: cut, sent: true, written: true},
			submitAnswered, routing.Answered, ""},
		{"a 431 for the client's head", submitAttempt{resp: answer(431), written: true},
			submitClientError, routing.Answered, ""},
		{"a 413 for the client's body", submitAttempt{resp: answer(413), written: true},
			submitClientError, routing.Answered, ""},
		{"a 400", submitAttempt{resp: answer(400), written: true},
			submitClientError, routing.Answered, ""},
		{"a 401 for the client's credentials", submitAttempt{resp: answer(401)},
			submitClientError, routing.Answered, ""},
		{"starting at dispatch", submitAttempt{dispatchErr: starting, written: true},
			submitNotReady, routing.NotSent, "dispatch"},
		{"no workers at dispatch", submitAttempt{dispatchErr: noWorkers, written: true},
			submitNotReady, routing.NotSent, "dispatch"},
		{"not ready, wrapped", submitAttempt{dispatchErr: fmt.Errorf("c1: %w", starting), written: true},
			submitNotReady, routing.NotSent, "dispatch"},
		{"a 2xx whose body cannot be read", submitAttempt{dispatchErr: unreadable, written: true},
			submitMayHaveRun, routing.MaybeSent, "dispatch"},
		{"a 2xx whose body cannot be read, the client gone",
			submitAttempt{dispatchErr: unreadable, written: true, clientGone: true},
			submitMayHaveRun, routing.MaybeSent, "dispatch"},
		{"no connection", submitAttempt{submitErr: syscall.ECONNREFUSED, failure: syscall.ECONNREFUSED},
			submitNotSent, routing.NotSent, "failure"},
		{"a 503 after the statement was written: refused, not accepted",
			submitAttempt{submitErr: refused, failure: refused, written: true},
			submitNotSent, routing.NotSent, "failure"},
		{"a 503 after the client left", submitAttempt{submitErr: refused, failure: refused, written: true, clientGone: true},
			submitNotSent, routing.NotSent, "failure"},
		{"a cut after the statement was written",
			submitAttempt{submitErr: cut, failure: cut, sent: true, written: true},
			submitMayHaveRun, routing.MaybeSent, "failure"},
		{"a cut after the statement was written, the client gone",
			submitAttempt{submitErr: cut, failure: cut, sent: true, written: true, clientGone: true},
			submitMayHaveRun, routing.MaybeSent, "failure"},
		{"a redirect", submitAttempt{submitErr: redirect, failure: redirect, sent: true, written: true},
			submitMayHaveRun, routing.MaybeSent, "failure"},
		{"a redirect before the statement was whole: the record says it may have gone",
			submitAttempt{submitErr: redirect, failure: redirect, sent: true},
			submitMayHaveRun, routing.MaybeSent, "failure"},
		{"a header net/http refuses", submitAttempt{submitErr: badHeader, invalid: badHeader},
			submitInvalid, routing.Invalid, "submit"},
		{"a header net/http refuses, the client gone",
			submitAttempt{submitErr: badHeader, invalid: badHeader, clientGone: true},
			submitInvalid, routing.Invalid, "submit"},
		{"the client left before the statement was whole",
			submitAttempt{submitErr: context.Canceled, clientGone: true},
			submitAbandoned, routing.Abandoned, "submit"},
		{"the client left before the statement was whole, the write failing too",
			submitAttempt{submitErr: cut, failure: cut, sent: false, clientGone: true},
			submitAbandoned, routing.Abandoned, "submit"},
		{"no answer before the deadline, the whole statement written",
			submitAttempt{submitErr: context.DeadlineExceeded, written: true},
			submitUnanswered, routing.MaybeSent, "submit"},
		{"no answer before the deadline, the client gone",
			submitAttempt{submitErr: context.DeadlineExceeded, written: true, clientGone: true},
			submitUnanswered, routing.MaybeSent, "submit"},
		{"the deadline before the statement was whole",
			submitAttempt{submitErr: context.DeadlineExceeded},
			submitTimedOut, routing.Abandoned, "submit"},
		{"a reset in the middle of a 2 MB head: Jetty refusing it",
			submitAttempt{submitErr: cut, failure: cut, headBytes: 2 << 20},
			submitHeadRefused, routing.Invalid, "failure"},
		{"a reset after a whole statement with a 2 MB head: Jetty refusing it",
			submitAttempt{submitErr: cut, failure: cut, sent: true, written: true, headBytes: 2 << 20},
			submitHeadRefused, routing.Invalid, "failure"},
		{"the connection closed before an answer to a 20 kB head",
			submitAttempt{submitErr: unreadable, failure: unreadable, sent: true, written: true, headBytes: 20 << 10},
			submitHeadRefused, routing.Invalid, "failure"},
		{"a reset after a whole statement with a head every coordinator takes",
			submitAttempt{submitErr: cut, failure: cut, sent: true, written: true, headBytes: 4 << 10},
			submitMayHaveRun, routing.MaybeSent, "failure"},
		{"a 503 to a 2 MB head is a refusal, not a hang-up",
			submitAttempt{submitErr: refused, failure: refused, written: true, headBytes: 2 << 20},
			submitNotSent, routing.NotSent, "failure"},
		{"a redirect of a 2 MB head is an answer",
			submitAttempt{submitErr: redirect, failure: redirect, sent: true, written: true, headBytes: 2 << 20},
			submitMayHaveRun, routing.MaybeSent, "failure"},
		{"a page cut after a 2 MB head is the coordinator's",
			submitAttempt{submitErr: &wire.PageError{Err: io.ErrUnexpectedEOF}, failure: &wire.PageError{Err: io.ErrUnexpectedEOF}, sent: true, written: true, headBytes: 2 << 20},
			submitMayHaveRun, routing.MaybeSent, "failure"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classifySubmission(c.attempt)
			if got.kind != c.kind {
				t.Errorf("kind %v, want %v", got.kind, c.kind)
			}
			if o := got.routing(); o != c.outcome {
				t.Errorf("routing outcome %d, want %d", o, c.outcome)
			}
			want := map[string]error{"": nil, "submit": c.attempt.submitErr, "dispatch": c.attempt.dispatchErr, "failure": c.attempt.failure}[c.err]
			if !errors.Is(got.err, want) || (want == nil) != (got.err == nil) {
				t.Errorf("error %v, want %v", got.err, want)
			}
			if got.answered() != (c.err == "") {
				t.Errorf("answered() = %v for %v", got.answered(), got.kind)
			}
			if !got.answered() && got.err == nil {
				t.Errorf("%v without an error: the routing would take it for an answer", got.kind)
			}
		})
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
