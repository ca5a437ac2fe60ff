package driver

import (
	"errors"
	"strings"

	presto "github.com/prestodb/presto-go-client/v2"
)

// QueryError is a statement's failure as its coordinator reported it: the
// error's name (SYNTAX_ERROR, TABLE_NOT_FOUND...), code and type, the
// message, for an error the server places in the statement's text its line
// and column (ErrorLocation, nil otherwise), and the query's id and the
// coordinator that ran it. Every statement the coordinator answered with
// an error returns it, or an error that wraps it (Commit's, say); reach it
// with errors.As:
//
//	var qe *driver.QueryError
//	if errors.As(err, &qe) && qe.ErrorLocation != nil { ... qe.ErrorLocation.LineNumber ... }
//
// Its text leads with the server's words: "NAME: message (query ID on
// coordinator URL)". It unwraps to the Presto Go client's
// *presto.QueryError, for code written against that client.
type QueryError struct {
	// ErrorName is the server's name of the error, such as SYNTAX_ERROR.
	ErrorName string
	// ErrorCode is the server's code of the error (SYNTAX_ERROR is 1).
	ErrorCode int
	// ErrorType is the error's kind: USER_ERROR, INTERNAL_ERROR,
	// INSUFFICIENT_RESOURCES or EXTERNAL.
	ErrorType string
	// Message is the server's message.
	Message string
	// ErrorLocation is where in the statement's text the error lies, or
	// nil.
	ErrorLocation *ErrorLocation
	// Retriable is what the server says of retrying the query.
	Retriable bool
	// FailureInfo is the server's account of the failure (the exception,
	// its causes and stack), or nil.
	FailureInfo *FailureInfo
	// QueryID is the query's id on the coordinator ("" when the answer
	// named none).
	QueryID string
	// Coordinator is the base URL of the coordinator that answered
	// (http://host:port).
	Coordinator string

	server *presto.QueryError
}

// Error is the server's error name and message, then the query's id and
// coordinator.
func (e *QueryError) Error() string {
	var b strings.Builder
	b.WriteString(e.ErrorName)
	b.WriteString(": ")
	b.WriteString(e.Message)
	switch {
	case e.QueryID != "" && e.Coordinator != "":
		b.WriteString(" (query " + e.QueryID + " on " + e.Coordinator + ")")
	case e.QueryID != "":
		b.WriteString(" (query " + e.QueryID + ")")
	case e.Coordinator != "":
		b.WriteString(" (on " + e.Coordinator + ")")
	}
	return b.String()
}

// Unwrap returns the Presto Go client's error the coordinator's answer
// decoded to.
func (e *QueryError) Unwrap() error { return e.server }

// ErrorLocation is where in the statement's text a QueryError lies: line
// and column, both from 1.
type ErrorLocation = presto.ErrorLocation

// FailureInfo is a server's account of a failure: the exception's type and
// message, its cause, and its stack.
type FailureInfo = presto.FailureInfo

// queryFailed returns err, a failure of the query whose latest results are
// qr on the attempt a, as a *QueryError when the coordinator answered it
// with an error, and err itself otherwise. The Presto client puts its own
// words before the server's ("fetch next batch failed for query ...: "),
// which hid the server's message behind them.
func queryFailed(err error, qr *presto.QueryResults, a *attempt) error {
	var server *presto.QueryError
	if err == nil || !errors.As(err, &server) || errors.As(err, new(*QueryError)) {
		return err
	}
	qe := &QueryError{
		ErrorName:     server.ErrorName,
		ErrorCode:     server.ErrorCode,
		ErrorType:     server.ErrorType,
		Message:       server.Message,
		ErrorLocation: server.ErrorLocation,
		Retriable:     server.Retriable,
		FailureInfo:   server.FailureInfo,
		server:        server,
	}
	if qr != nil {
		qe.QueryID = qr.Id
	}
	if a != nil && a.Node != nil {
		qe.Coordinator = a.Node.URL()
		if a.tls {
			qe.Coordinator = "https://" + a.Node.Addr
		}
	}
	return qe
}
