package driver

import presto "github.com/prestodb/presto-go-client/v2"

// QueryError is a statement's failure as its coordinator reported it: the
// error's name (SYNTAX_ERROR, TABLE_NOT_FOUND...), code and type, the
// message, and for an error the server places in the statement's text its
// line and column (ErrorLocation, nil otherwise). The error a statement
// returns wraps it, with the query's id in its text; reach it with
// errors.As:
//
//	var qe *driver.QueryError
//	if errors.As(err, &qe) && qe.ErrorLocation != nil { ... qe.ErrorLocation.LineNumber ... }
//
// It is the Presto Go client's type, named here so that callers need not
// import that client.
type QueryError = presto.QueryError

// ErrorLocation is where in the statement's text a QueryError lies: line
// and column, both from 1.
type ErrorLocation = presto.ErrorLocation
