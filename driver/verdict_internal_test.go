package driver

import (
	"context"
	"errors"
	"testing"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/attemptcases"
	"github.com/zkpresto/zkpresto/internal/verdict"
	"github.com/zkpresto/zkpresto/routing"
)

// The driver decides an attempt on the one table of cases the gateway
// also runs (attemptcases): each case the driver can meet is made into
// the driver's record of an attempt (its exchange, the Presto client's
// error, the caller's context) and classified from it as Conn.submit
// does, and gives the case's kind, routing outcome and error. The cases
// it cannot meet are the gateway's: an answer whose first GET failed (the
// driver's transport records that failure, sent) and the submission's own
// timeout with the caller still there (the driver's deadline is the
// caller's).
func TestClassifyAttempt(t *testing.T) {
	met := attemptcases.Check(t, func(f verdict.Facts) (verdict.Kind, routing.Outcome, error, bool) {
		ctx, a, err, ok := driverAttemptOf(f)
		if !ok {
			return 0, 0, nil, false
		}
		if err == nil {
			return verdict.Answered, routing.Answered, nil, true // Conn.submit's first case
		}
		v := classifyAttempt(err, ctx, a)
		return v.Kind, v.Kind.Routing(), v.Err, true
	})
	for _, k := range []verdict.Kind{verdict.Answered, verdict.NotReady, verdict.NotSent, verdict.Unreached, verdict.Returned,
		verdict.MaybeRan, verdict.Unanswered, verdict.Invalid, verdict.HeadRefused, verdict.Abandoned} {
		if !met[k] {
			t.Errorf("no case of %v made into the driver's record", k)
		}
	}
}

// driverAttemptOf is the driver's record of an attempt with facts f: the
// caller's context, the attempt and the Presto client's error; false when
// the driver never records such an attempt.
func driverAttemptOf(f verdict.Facts) (context.Context, *attempt, error, bool) {
	answered := f.Failure == nil
	switch {
	case f.Err != nil && !f.Aborted && f.Invalid == nil && answered != f.Answered:
		return nil, nil, nil, false
	case f.Queued && f.ErrorName == "GENERIC_INSUFFICIENT_RESOURCES":
		// Queued comes from the exchange's latest URI, which only a
		// request sets (TestStartingCoordinatorGetsNoStatements drives it).
		return nil, nil, nil, false
	}
	ctx := context.Background()
	if f.Aborted {
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
	}
	a := newAttempt(&routing.Attempt{Node: &discovery.Node{Addr: "c1:8080"}}, ctx)
	if f.Failure != nil {
		a.Fail(f.Failure, f.Sent)
	}
	if f.Invalid != nil {
		a.SetInvalid(f.Invalid)
	}
	a.unanswered.Store(f.Deadline)
	a.headBytes = f.HeadBytes
	err := f.Err
	if f.ErrorName != "" && err != nil {
		// The Presto client's error for a failed query, naming the fact.
		err = errors.Join(f.Err, &presto.QueryError{ErrorName: f.ErrorName})
	}
	return ctx, a, err, true
}
