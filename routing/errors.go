package routing

import (
	"errors"
	"fmt"
	"strings"
)

// NodeFailure is one coordinator's failure to accept a statement.
type NodeFailure struct {
	// Node is the coordinator's address (host:port).
	Node string
	// Err is why it failed.
	Err error
}

// Error implements error.
func (f NodeFailure) Error() string { return fmt.Sprintf("%s: %v", f.Node, f.Err) }

// Unwrap returns the cause.
func (f NodeFailure) Unwrap() error { return f.Err }

// NoCoordinatorError reports a statement that was sent nowhere: every
// coordinator tried failed before it could accept the statement (or none
// could be picked).
type NoCoordinatorError struct {
	// Tried lists the coordinators tried, in order, with their failures.
	Tried []NodeFailure
	// Err is why no further coordinator was tried, when it was not the
	// retry limit; nil otherwise.
	Err error
}

// Error implements error.
func (e *NoCoordinatorError) Error() string {
	var b strings.Builder
	b.WriteString("routing: statement not run; ")
	if len(e.Tried) == 1 {
		b.WriteString("1 coordinator tried, it did not accept it:")
	} else {
		fmt.Fprintf(&b, "%d coordinators tried, none accepted it:", len(e.Tried))
	}
	for _, t := range e.Tried {
		fmt.Fprintf(&b, " %s (%v);", t.Node, t.Err)
	}
	var none *noUntriedError
	var pick *pickError
	switch {
	case errors.As(e.Err, &none):
		fmt.Fprintf(&b, " no other coordinator is listed in %s", none.source)
	case errors.As(e.Err, &pick):
		fmt.Fprintf(&b, " then: %v", pick.err)
	case e.Err != nil:
		fmt.Fprintf(&b, " then: %v", e.Err)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// noUntriedError is Pick's error when every coordinator listed in source
// has failed the statement already.
type noUntriedError struct{ source string }

func (e *noUntriedError) Error() string {
	return "routing: no untried coordinator left in " + e.source
}

// pickError is why Pick found no coordinator to try. Alone it names the
// package; a NoCoordinatorError that ends with it quotes only its cause,
// so that the package is named once.
type pickError struct{ err error }

func (e *pickError) Error() string { return "routing: " + e.err.Error() }

func (e *pickError) Unwrap() error { return e.err }

// Unwrap returns every cause: each coordinator's failure in order, then Err
// when set, so that errors.Is and errors.As see all of them.
func (e *NoCoordinatorError) Unwrap() []error {
	out := make([]error, 0, len(e.Tried)+1)
	for _, t := range e.Tried {
		out = append(out, t.Err)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// StatementError reports a statement whose coordinator failed after the
// statement may have reached it. It is not sent again, since it may be
// running; the caller decides.
type StatementError struct {
	// Node is the coordinator's address (host:port).
	Node string
	// QueryID is the query's id when the coordinator had accepted the
	// statement and its result was being read: the coordinator went away
	// while the query ran. Empty when it failed before naming the query.
	QueryID string
	// PagesRead is how many pages of the query's rows had been read when
	// the next one was lost (with QueryID).
	PagesRead int
	// Err is the failure.
	Err error
}

// Error implements error.
func (e *StatementError) Error() string {
	if e.QueryID != "" {
		return fmt.Sprintf("routing: coordinator %s went away while query %s ran: page %d of its rows was lost (the query may have run on; not sent again): %v",
			e.Node, e.QueryID, e.PagesRead+1, e.Err)
	}
	return fmt.Sprintf("routing: coordinator %s failed after the statement was sent (it may have run; not sent again): %v", e.Node, e.Err)
}

// Unwrap returns the failure.
func (e *StatementError) Unwrap() error { return e.Err }
