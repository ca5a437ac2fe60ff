// Package attemptcases is the one table of what an attempt of a statement
// means: every case of the rule (verdict.Of), written once, and Check,
// which runs them against one caller's decision. The driver's tests and
// the gateway's run the same cases through their own use of the verdict,
// so that both give the same outcome for every case, and RELIABILITY.md's
// table is checked against them. Only tests import it.
package attemptcases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/verdict"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
)

// Case is one attempt's facts and what they mean.
type Case struct {
	// Name says what happened.
	Name  string
	Facts verdict.Facts
	// Want is the kind.
	Want verdict.Kind
	// Err names the fact the routing gets as the error: "" for none,
	// "err" (Facts.Err), "failure" (Facts.Failure), "invalid"
	// (Facts.Invalid), or "head" (a *verdict.HeadRefusedError of
	// Facts.Failure).
	Err string
}

// Errors the cases use.
var (
	refused       = &wire.RefusedError{Status: http.StatusServiceUnavailable}
	errCut        = fmt.Errorf("writing the statement: %w", syscall.ECONNRESET)
	errUnreadable = fmt.Errorf("reading a coordinator's answer: %w", io.ErrUnexpectedEOF)
	badHeader     = &wire.RequestError{Err: errors.New(`invalid header value for "X-Trino-User"`)}
	redirect      = &wire.RedirectError{Status: http.StatusTemporaryRedirect, Location: "http://elsewhere/"}
	errQuery      = errors.New("SYNTAX_ERROR: line 1:1: mismatched input")
	errNotReady   = errors.New("query failed at dispatch")
	dialRace      = &pool.DialRaceError{Addr: "c1:8080", After: 100e6}
	stalled       = &verdict.WriteStallError{Node: "c1:8080", After: 500e6}
	overtaken     = &pool.OvertakenError{Addr: "c2:8080", By: "c1:8080"}
	pageCut       = &wire.PageError{Err: io.ErrUnexpectedEOF}
	errNoConn     = fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)
)

// Cases lists every case once.
var Cases = []Case{
	// Answers.
	{"a 200", verdict.Facts{Answered: true, Status: 200, Written: true}, verdict.Answered, ""},
	{"a 500 after the statement was written, which is no refusal", verdict.Facts{Answered: true, Status: 500, Written: true}, verdict.Answered, ""},
	{"an answer wins over a failure recorded on the way", verdict.Facts{Answered: true, Status: 200, Failure: errCut, Sent: true, Written: true}, verdict.Answered, ""},
	{"a 431 for the client's head (the gateway relays it)", verdict.Facts{Answered: true, Status: 431, Written: true}, verdict.Answered, ""},
	{"a 401 for the client's credentials", verdict.Facts{Answered: true, Status: 401}, verdict.Answered, ""},
	{"a query error in the answer", verdict.Facts{Err: errQuery, Answered: true, Status: 200, ErrorName: "SYNTAX_ERROR", Written: true}, verdict.Answered, "err"},
	{"insufficient resources from a query that ran", verdict.Facts{Err: errQuery, Answered: true, ErrorName: "GENERIC_INSUFFICIENT_RESOURCES", Written: true}, verdict.Answered, "err"},

	// Not ready: accepted, failed before it ran.
	{"starting at dispatch", verdict.Facts{Err: errNotReady, Answered: true, ErrorName: "SERVER_STARTING_UP", Queued: true, Written: true}, verdict.NotReady, "err"},
	{"starting, read from a running resource", verdict.Facts{Err: errNotReady, Answered: true, ErrorName: "SERVER_STARTING_UP", Written: true}, verdict.NotReady, "err"},
	{"no workers at dispatch", verdict.Facts{Err: errNotReady, Answered: true, ErrorName: "NO_NODES_AVAILABLE", Queued: true, Written: true}, verdict.NotReady, "err"},
	{"the resource group's queue full", verdict.Facts{Err: errNotReady, Answered: true, ErrorName: "QUERY_QUEUE_FULL", Queued: true, Written: true}, verdict.NotReady, "err"},
	{"no workers in time, on the queued resource", verdict.Facts{Err: errNotReady, Answered: true, ErrorName: "GENERIC_INSUFFICIENT_RESOURCES", Queued: true, Written: true}, verdict.NotReady, "err"},

	// A failure after an answer.
	{"an answer whose body cannot be read", verdict.Facts{Err: errUnreadable, Answered: true, Failure: errUnreadable, Sent: true, Written: true}, verdict.MaybeRan, "failure"},
	{"an answer whose body cannot be read, a 2 MB head", verdict.Facts{Err: errUnreadable, Answered: true, Failure: errUnreadable, Sent: true, Written: true, HeadBytes: 2 << 20}, verdict.MaybeRan, "failure"},

	// Failures before the statement may have reached the coordinator.
	{"no connection", verdict.Facts{Err: errNoConn, Failure: errNoConn}, verdict.NotSent, "failure"},
	{"a 503 after the statement was written: refused, not accepted", verdict.Facts{Err: refused, Failure: refused, Written: true}, verdict.NotSent, "failure"},
	{"a 503 to a 2 MB head is a refusal, not a hang-up", verdict.Facts{Err: refused, Failure: refused, Written: true, HeadBytes: 2 << 20}, verdict.NotSent, "failure"},
	{"the dial race's delay passed", verdict.Facts{Err: dialRace, Failure: dialRace}, verdict.Unreached, "failure"},
	{"a write stalled at the gate", verdict.Facts{Err: stalled, Failure: stalled}, verdict.Unreached, "failure"},
	{"the race's winner came first", verdict.Facts{Err: overtaken, Failure: overtaken}, verdict.Returned, "failure"},

	// Failures after it may have.
	{"a cut after the statement was written", verdict.Facts{Err: errCut, Failure: errCut, Sent: true, Written: true}, verdict.MaybeRan, "failure"},
	{"a redirect", verdict.Facts{Err: redirect, Failure: redirect, Sent: true, Written: true}, verdict.MaybeRan, "failure"},
	{"a redirect before the statement was whole: the record says it may have gone", verdict.Facts{Err: redirect, Failure: redirect, Sent: true}, verdict.MaybeRan, "failure"},
	{"a reset after a whole statement with a head every coordinator takes", verdict.Facts{Err: errCut, Failure: errCut, Sent: true, Written: true, HeadBytes: 4 << 10}, verdict.MaybeRan, "failure"},
	{"a redirect of a 2 MB head is an answer", verdict.Facts{Err: redirect, Failure: redirect, Sent: true, Written: true, HeadBytes: 2 << 20}, verdict.MaybeRan, "failure"},
	{"a page cut after a 2 MB head is the coordinator's", verdict.Facts{Err: pageCut, Failure: pageCut, Sent: true, Written: true, HeadBytes: 2 << 20}, verdict.MaybeRan, "failure"},

	// A head the coordinator refused by hanging up.
	{"a reset in the middle of a 2 MB head: Jetty refusing it", verdict.Facts{Err: errCut, Failure: errCut, HeadBytes: 2 << 20}, verdict.HeadRefused, "head"},
	{"a reset after a whole statement with a 2 MB head", verdict.Facts{Err: errCut, Failure: errCut, Sent: true, Written: true, HeadBytes: 2 << 20}, verdict.HeadRefused, "head"},
	{"the connection closed before an answer to a 20 kB head", verdict.Facts{Err: errUnreadable, Failure: errUnreadable, Sent: true, Written: true, HeadBytes: 20 << 10}, verdict.HeadRefused, "head"},

	// The client's request.
	{"a header net/http refuses", verdict.Facts{Err: badHeader, Invalid: badHeader}, verdict.Invalid, "invalid"},
	{"a header net/http refuses, the caller gone", verdict.Facts{Err: badHeader, Invalid: badHeader, Aborted: true}, verdict.Invalid, "invalid"},

	// The caller gave up.
	{"the caller left before the statement was whole", verdict.Facts{Err: context.Canceled, Aborted: true}, verdict.Abandoned, "err"},
	{"the caller left before the statement was whole, the write failing too", verdict.Facts{Err: errCut, Failure: errCut, Aborted: true}, verdict.Abandoned, "err"},
	{"the caller left during a query error", verdict.Facts{Err: errQuery, Answered: true, ErrorName: "SERVER_STARTING_UP", Queued: true, Written: true, Aborted: true}, verdict.Abandoned, "err"},
	{"the caller's deadline after the statement's last bytes left", verdict.Facts{Err: context.DeadlineExceeded, Written: true, Aborted: true, Deadline: true}, verdict.Unanswered, "err"},

	// The attempt's own deadline, the caller still there.
	{"no answer before the deadline, the whole statement written", verdict.Facts{Err: context.DeadlineExceeded, Written: true}, verdict.Unanswered, "err"},
	{"the deadline before the statement was whole", verdict.Facts{Err: context.DeadlineExceeded}, verdict.TimedOut, "err"},
}

// Decide is one caller's use of the verdict on a case's facts: the kind
// it reached, the outcome it hands the routing core and the error with
// it. ok is false for facts the caller never records (a gateway never
// reads a query error from an answer it relays, say).
type Decide func(verdict.Facts) (kind verdict.Kind, outcome routing.Outcome, err error, ok bool)

// Check runs every case through decide: the kind, the routing outcome
// (the kind's, verdict.Kind.Routing) and the error must be the case's. It
// returns the kinds of the cases decide met.
func Check(t *testing.T, decide Decide) map[verdict.Kind]bool {
	t.Helper()
	met := map[verdict.Kind]bool{}
	for _, c := range Cases {
		kind, outcome, err, ok := decide(c.Facts)
		if !ok {
			continue
		}
		met[c.Want] = true
		t.Run(c.Name, func(t *testing.T) {
			if kind != c.Want {
				t.Errorf("kind %v, want %v", kind, c.Want)
			}
			if want := c.Want.Routing(); outcome != want {
				t.Errorf("routing outcome %d, want %d", outcome, want)
			}
			if msg := CheckErr(c, err); msg != "" {
				t.Error(msg)
			}
		})
	}
	return met
}

// CheckErr says what is wrong with err as the error of case c; "" when
// nothing is.
func CheckErr(c Case, err error) string {
	var want error
	switch c.Err {
	case "":
		if err != nil {
			return fmt.Sprintf("error %v, want none", err)
		}
		return ""
	case "err":
		want = c.Facts.Err
	case "failure":
		want = c.Facts.Failure
	case "invalid":
		want = c.Facts.Invalid
	case "head":
		var hr *verdict.HeadRefusedError
		if !errors.As(err, &hr) || hr.Bytes != c.Facts.HeadBytes || !errors.Is(err, c.Facts.Failure) {
			return fmt.Sprintf("error %v, want a head of %d bytes refused", err, c.Facts.HeadBytes)
		}
		return ""
	default:
		return fmt.Sprintf("case %q names no fact %q", c.Name, c.Err)
	}
	if err == nil || !errors.Is(err, want) {
		return fmt.Sprintf("error %v, want %v", err, want)
	}
	return ""
}

// effects says, for each routing outcome, what the routing core does to
// the coordinator and with the statement.
var effects = map[routing.Outcome][2]string{
	routing.Answered:   {"healthy", "the caller gets the answer (a result or a query error)"},
	routing.NotSent:    {"ejected", "goes to another coordinator"},
	routing.Unreached:  {"charged a failure", "goes to another coordinator"},
	routing.Returned:   {"nothing", "goes back to the coordinator tried before, whose connection came first"},
	routing.MaybeSent:  {"charged a failure", "never sent again: a `StatementError`"},
	routing.Unanswered: {"charged a failure", "never sent again: the caller's error (the gateway's client: a `StatementError`)"},
	routing.Invalid:    {"nothing", "the caller's error; no other coordinator is tried"},
	routing.Abandoned:  {"nothing", "the caller's error"},
}

// Table is RELIABILITY.md's table of what an attempt means, made from the
// cases: one row per kind, in the rule's order, with the routing core's
// action and the cases of the kind.
func Table() string {
	var b strings.Builder
	b.WriteString("| what the attempt means | the coordinator | the statement | cases (`internal/testrig/attemptcases`) |\n")
	b.WriteString("|---|---|---|---|\n")
	for _, k := range verdict.Kinds() {
		var names []string
		for _, c := range Cases {
			if c.Want == k {
				names = append(names, c.Name)
			}
		}
		e := effects[k.Routing()]
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", k, e[0], e[1], strings.Join(names, "; "))
	}
	return b.String()
}
