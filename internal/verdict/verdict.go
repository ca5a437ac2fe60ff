// Package verdict is the product's central rule: what one attempt of a
// statement on one coordinator means, from the facts its exchange left
// (was anything answered, what the transport recorded, was the whole
// statement written, did the caller give up, how large was the head), and
// so what the routing core does next: try another coordinator, never send
// the statement again, or hand the caller its answer. The driver and the
// gateway both decide through Of; each only gathers its facts and, for
// the gateway, relays a coordinator's 4xx to its client.
//
// It imports the routing core and the protocol's rules (wire, pool's
// errors), never the driver or the gateway.
package verdict

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
)

// Facts is what one attempt of a statement left behind, as its caller
// gathered it. The zero value is an attempt that was answered with
// nothing failing.
type Facts struct {
	// Err is the attempt's error: nil when the coordinator answered and
	// the caller takes the answer as it is.
	Err error
	// Answered reports that the coordinator answered the submission (a
	// status line came back and was no refusal): Err, if any, came with
	// the answer or after it.
	Answered bool
	// Status is that answer's HTTP status; 0 when unknown or none.
	Status int
	// ErrorName is the failed query's error name when an answer failed
	// the query (wire.Answer's), and Queued whether that answer came from
	// the coordinator's queued resource (wire.QueuedURI).
	ErrorName string
	Queued    bool
	// Failure is the transport failure the exchange recorded (nil for
	// none), and Sent whether the statement may have reached the
	// coordinator when it happened (pool.Exchange.Failure).
	Failure error
	Sent    bool
	// Written reports that the whole statement may have reached the
	// coordinator (pool.Exchange.Written).
	Written bool
	// Invalid is the reason the request could not be sent at all (a
	// header net/http refuses, credentials the client could not get).
	Invalid error
	// Aborted reports that the attempt was stopped because its caller
	// gave up (the driver's caller's context, the gateway's client gone
	// before the statement was whole).
	Aborted bool
	// Deadline reports, for an Aborted attempt, that the caller's deadline
	// passed after the statement's last bytes left: the coordinator may
	// have it whole, and gave no answer.
	Deadline bool
	// HeadBytes is about the size of the submission's head (HeadBytes);
	// 0 when not measured.
	HeadBytes int
}

// Kind is what an attempt means.
type Kind int

const (
	// Answered: the coordinator answered, with a result or a query error
	// (for the gateway, any answer it relays). It is healthy.
	Answered Kind = iota
	// NotReady: the coordinator accepted the statement and failed it
	// before running it, starting, without workers or with its queue full
	// (wire.NeverRan): another coordinator gets it, this one is ejected.
	NotReady
	// NotSent: the coordinator failed before it could have the statement
	// (no connection, a refusal, which by the protocol it did not
	// accept): it is ejected and another coordinator gets the statement.
	NotSent
	// Unreached: the coordinator did not take the statement in time (the
	// dial race's delay, a write stalled at the gate): another
	// coordinator gets it and this one is charged a failure.
	Unreached
	// Returned: the statement goes back to the coordinator of the
	// Unreached attempt before, whose connection came first after all.
	Returned
	// MaybeRan: the coordinator failed after it may have had the
	// statement (a cut write or answer, a redirect, an answer that could
	// not be read): it is charged a failure and the statement is never
	// sent again.
	MaybeRan
	// Unanswered: the whole statement may have reached the coordinator,
	// and no answer came before the deadline: it may be running, so it is
	// charged a failure and the statement is never sent again.
	Unanswered
	// Invalid: the request could not be sent at all: the client's fault,
	// no coordinator is charged and no other is tried.
	Invalid
	// HeadRefused: the coordinator hung up without an answer on a head
	// over HeadLimit, what Jetty does to a head over its limit: the
	// client's fault, as Invalid.
	HeadRefused
	// Abandoned: the caller gave up before the coordinator could have the
	// whole statement, or before its answer: no verdict on the
	// coordinator.
	Abandoned
	// TimedOut: the attempt's deadline passed before a whole statement
	// could have reached the coordinator: nothing ran, no verdict on the
	// coordinator.
	TimedOut
)

var kindNames = [...]string{
	Answered:    "answered",
	NotReady:    "not ready",
	NotSent:     "not sent",
	Unreached:   "unreached",
	Returned:    "returned",
	MaybeRan:    "may have run",
	Unanswered:  "unanswered",
	Invalid:     "invalid",
	HeadRefused: "head refused",
	Abandoned:   "abandoned",
	TimedOut:    "timed out",
}

// String names the kind.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Kinds lists every kind, in order.
func Kinds() []Kind {
	out := make([]Kind, len(kindNames))
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// Routing is the outcome the routing core acts on for the kind.
func (k Kind) Routing() routing.Outcome {
	switch k {
	case NotReady, NotSent:
		return routing.NotSent
	case Unreached:
		return routing.Unreached
	case Returned:
		return routing.Returned
	case MaybeRan:
		return routing.MaybeSent
	case Unanswered:
		return routing.Unanswered
	case Invalid, HeadRefused:
		return routing.Invalid
	case Abandoned, TimedOut:
		return routing.Abandoned
	}
	return routing.Answered
}

// Verdict is what an attempt means and the error the routing core gets
// for it (nil only for an answer without an error).
type Verdict struct {
	Kind Kind
	Err  error
}

// Of says what an attempt means. It reads nothing but its argument: the
// order of its cases is the rule.
//
//  1. Nothing failed: an answer.
//  2. A request that could not be sent at all is the client's.
//  3. A caller that gave up decides the rest: unanswered when its
//     deadline passed after the statement's last bytes left, else
//     abandoned.
//  4. After an answer, a query failed before it ran is not ready; a
//     transport failure after the answer may have run; else the error
//     is the answer's (a query error).
//  5. A coordinator that hung up without a word on a head over
//     HeadLimit refused the head.
//  6. No answer and no failure recorded: the attempt's deadline, after
//     the whole statement may have reached the coordinator or before.
//  7. A failure after the statement may have reached it may have run;
//     one before is unreached (the dial race, a stalled write), returned
//     (the race's winner came first) or not sent.
func Of(f Facts) Verdict {
	switch {
	case f.Err == nil:
		return Verdict{Answered, nil}
	case f.Invalid != nil:
		return Verdict{Invalid, f.Invalid}
	case f.Aborted && f.Deadline:
		return Verdict{Unanswered, f.Err}
	case f.Aborted:
		return Verdict{Abandoned, f.Err}
	case f.Answered && wire.NeverRan(f.ErrorName, f.Queued):
		return Verdict{NotReady, f.Err}
	case f.Answered && f.Failure != nil:
		return Verdict{MaybeRan, f.Failure}
	case f.Answered:
		return Verdict{Answered, f.Err}
	case f.Failure != nil && f.HeadBytes > HeadLimit && hungUp(f.Failure):
		return Verdict{HeadRefused, &HeadRefusedError{Bytes: f.HeadBytes, Err: f.Failure}}
	case f.Failure == nil && f.Written:
		return Verdict{Unanswered, fmt.Errorf("no answer to the statement in time: %w", f.Err)}
	case f.Failure == nil:
		return Verdict{TimedOut, f.Err}
	case f.Sent:
		return Verdict{MaybeRan, f.Failure}
	case errors.As(f.Failure, new(*pool.DialRaceError)), errors.As(f.Failure, new(*WriteStallError)):
		return Verdict{Unreached, f.Failure}
	case errors.As(f.Failure, new(*pool.OvertakenError)):
		return Verdict{Returned, f.Failure}
	}
	return Verdict{NotSent, f.Failure}
}

// HeadLimit is the smallest request head a coordinator is known to
// refuse: Jetty's default, 8 kB, which PrestoDB keeps (Trino takes about
// 2 MB). Jetty answers a head over its limit with 431 and closes the
// connection with the rest of the head unread, which resets it and loses
// the 431 on the way; a coordinator that hangs up without a word on a
// larger head is taken to have done that. A coordinator that really
// failed just then is charged by the next statement.
const HeadLimit = 8 << 10

// HeadRefusedError is the failure of a submission whose head the
// coordinator refused by hanging up (see HeadLimit).
type HeadRefusedError struct {
	// Bytes is about the size of the head.
	Bytes int
	// Err is the connection's failure.
	Err error
}

// Error implements error.
func (e *HeadRefusedError) Error() string {
	return fmt.Sprintf("the coordinator closed the connection without an answer on a request head of %d bytes, more than coordinators take by default (%d kB); send less in headers: %v",
		e.Bytes, HeadLimit>>10, e.Err)
}

// Unwrap returns the connection's failure.
func (e *HeadRefusedError) Unwrap() error { return e.Err }

// WriteStallError is the failure of a submission whose write had not
// delivered the statement by half the caller's remaining time: its last
// bytes were held at the gate, so it was not sent.
type WriteStallError struct {
	// Node is the coordinator (host:port).
	Node string
	// After is how long the write had when it was given up.
	After time.Duration
}

// Error implements error.
func (e *WriteStallError) Error() string {
	return fmt.Sprintf("the statement's write to %s was not complete after %v, half the caller's remaining time: not sent", e.Node, e.After.Round(time.Millisecond))
}

// Timeout reports true: it is a net.Error timeout.
func (e *WriteStallError) Timeout() bool { return true }

// Temporary reports true, as other timeouts do.
func (e *WriteStallError) Temporary() bool { return true }

// hungUp reports whether err is a connection the coordinator closed or
// reset before any answer: not a refusal, a redirect, a cut page or an
// answer's head too long, which are answers.
func hungUp(err error) bool {
	var refused *wire.RefusedError
	var redirect *wire.RedirectError
	var page *wire.PageError
	if errors.As(err, &refused) || errors.As(err, &redirect) || errors.As(err, &page) || errors.Is(err, pool.ErrHeadTooLarge) {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// HeadBytes is about the size of req's head on the wire: its request
// line, Host and header fields.
func HeadBytes(req *http.Request) int {
	n := len(req.Method) + len(req.URL.RequestURI()) + len(req.URL.Host) + len(" HTTP/1.1\r\nHost: \r\n\r\n")
	for k, vs := range req.Header {
		for _, v := range vs {
			n += len(k) + len(v) + len(": \r\n")
		}
	}
	return n
}
