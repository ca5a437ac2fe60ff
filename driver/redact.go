package driver

import (
	"regexp"
	"strings"
)

// slugPattern finds the slug of a statement URI in an error's text.
// Trino's is a path segment, /v1/statement/{phase}/{queryId}/{slug}/{token}
// (trino server/protocol/Slug.java, QueuedStatementResource); PrestoDB's a
// query parameter, /v1/statement/{phase}/{queryId}/{token}?slug=...
// (presto-main server/protocol/QueryResourceUtil).
var slugPattern = regexp.MustCompile(`(/v1/statement/[A-Za-z]+/[^/\s"?]+/)[^/\s"?]+(/[0-9]+)|([?&]slug=)[^&\s"]+`)

// redactedError is an error whose text leaves out the slugs of the
// statement URIs it names: a slug lets whoever holds the URI read the
// query's results or cancel it, which is no business of a log. Unwrap
// returns the error as it was, so errors.Is and errors.As see through.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// redactSlugs returns err with the slugs of the statement URIs in its text
// redacted, or err itself when it names none. The Presto client's
// transport errors (*url.Error) name the URI of the request that failed,
// the cancelled one included.
func redactSlugs(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if !strings.Contains(text, "/v1/statement/") {
		return err
	}
	redacted := slugPattern.ReplaceAllString(text, "${1}${3}REDACTED${2}")
	if redacted == text {
		return err
	}
	return &redactedError{err: err, text: redacted}
}
