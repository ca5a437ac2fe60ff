package wire

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zkpresto/zkpresto/internal/hostport"
)

// RefusedError is a coordinator's (or its proxy's) answer that by the
// protocol means the statement was not accepted and may be sent again: 503
// (starting or overloaded), 429 (too many requests), 502 and 504 (a proxy
// in front found no coordinator to give it to). Every official client
// retries these, even a POST.
type RefusedError struct {
	// Status is the HTTP status code.
	Status int
	// Message is what the answer's body says, when it is a Presto error
	// (a gateway's: "zkpresto gateway is draining") or a line of text;
	// empty otherwise.
	Message string
}

// Error implements error.
func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// ReasonScan bounds what is read of an error answer's body for Reason:
// the reason is in its first lines.
const ReasonScan = 8 << 10

// maxReason bounds the text Reason returns.
const maxReason = 300

// Reason is what an error answer's body (its first ReasonScan bytes) says,
// in one line of at most 300 characters: a Presto error's name and message
// (a gateway's own answers are such errors), an HTML page's title without
// its "Error 401 " prefix (PrestoDB's are Jetty's error pages:
// "<title>Error 401 Access Denied: Invalid credentials</title>"), else the
// first line of the text (Trino's reasons are plain text). Control
// characters and invalid UTF-8 are dropped.
func Reason(contentType string, body []byte) string {
	reason := ""
	trimmed := bytes.TrimSpace(body)
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "text/html" || bytes.HasPrefix(trimmed, []byte("<")):
		lower := asciiLower(body)
		if i := bytes.Index(lower, []byte("<title>")); i >= 0 {
			if j := bytes.Index(lower[i:], []byte("</title>")); j >= 0 {
				reason = html.UnescapeString(string(body[i+len("<title>") : i+j]))
				if f := strings.Fields(reason); len(f) >= 2 && f[0] == "Error" {
					reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(reason, "Error"), " "+f[1]))
				}
			}
		}
	case bytes.HasPrefix(trimmed, []byte("{")):
		if a, err := DecodeAnswer(trimmed); err == nil && a.Error != nil && a.Error.Message != "" {
			reason = a.Error.Message
			if a.Error.ErrorName != "" {
				reason = a.Error.ErrorName + ": " + reason
			}
		}
	default:
		reason, _, _ = strings.Cut(string(trimmed), "\n")
	}
	reason = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) && r != ' ' {
			return ' '
		}
		return r
	}, reason)
	reason = strings.Join(strings.Fields(reason), " ")
	if r := []rune(reason); len(r) > maxReason {
		reason = string(r[:maxReason]) + "…"
	}
	return reason
}

// asciiLower returns b with its ASCII letters lower-cased and every other
// byte as it is: the offsets found in it are offsets in b, which
// bytes.ToLower's would not be (invalid UTF-8 grows to U+FFFD, the Kelvin
// sign shrinks to 'k').
func asciiLower(b []byte) []byte {
	lower := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return lower
}

// Is makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ErrRefused matches every *RefusedError.
var ErrRefused = errors.New("not accepted by the coordinator")

// NeverRan reports whether errorName, a failed query's, says that its
// coordinator never ran it, queued telling whether the failure came from
// the queued resource (/v1/statement/queued/). A starting coordinator
// (SERVER_STARTING_UP) and one whose resource group's queue is full
// (QUERY_QUEUE_FULL) accept the POST and fail the query at dispatch, at
// the first GET of its nextUri (PrestoDB's queue at the first or the
// second), before anything runs (trino:
// dispatcher/DispatchManager.createQueryInternal, and
// InternalResourceGroup.run for the queue; prestodb: the same); one
// without workers keeps the query on the queued resource up to
// query-manager.required-workers-max-wait and fails it there with
// GENERIC_INSUFFICIENT_RESOURCES ("Insufficient active worker nodes"),
// unplanned (execution/ClusterSizeMonitor.java; seen on Trino 476 and
// PrestoDB 0.287), and NO_NODES_AVAILABLE fails one the scheduler finds no
// node for, before any task. Such a statement may go to another
// coordinator.
func NeverRan(errorName string, queued bool) bool {
	switch errorName {
	case "SERVER_STARTING_UP", "NO_NODES_AVAILABLE", "QUERY_QUEUE_FULL":
		return true
	case "GENERIC_INSUFFICIENT_RESOURCES":
		// Elsewhere it may come from a query that ran (a connector's).
		return queued
	}
	return false
}

// QueuedURI reports whether u is on a coordinator's queued resource, where
// a query waits before it is dispatched.
func QueuedURI(u *url.URL) bool {
	return u != nil && strings.HasPrefix(u.Path, "/v1/statement/queued/")
}

// Refusal reports whether status is one of RefusedError's.
func Refusal(status int) bool {
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// RedirectError is a redirect answered to a statement request. Redirects
// of statements are never followed: following one would send the
// statement (or its follow-ups, with the user's credentials) to a host
// nobody picked, and for a submission possibly twice.
type RedirectError struct {
	// Status is the HTTP status code.
	Status int
	// Location is the redirect's target, without credentials.
	Location string
}

// Error implements error.
func (e *RedirectError) Error() string {
	return fmt.Sprintf("HTTP %d redirect to %q, not followed: statements are never redirected (is discovery listing a router instead of coordinators?)", e.Status, e.Location)
}

// ForeignURIError is a follow-up URI, handed out by a coordinator, that
// names another host than the coordinator (or plain http where https is
// required). It is never requested: the user's credentials would go to a
// host nobody picked.
type ForeignURIError struct {
	// Node is the coordinator that runs the query (host:port).
	Node string
	// URI is the scheme and host of the URI it handed out.
	URI string
}

// Error implements error.
func (e *ForeignURIError) Error() string {
	return fmt.Sprintf("coordinator %s handed out a URI on %s; follow-ups only go to the coordinator that runs the query", e.Node, e.URI)
}

// PageError is a 200 answer whose body was cut or is not the JSON object
// the protocol promises.
type PageError struct {
	// Err says what was wrong.
	Err error
}

// Error implements error.
func (e *PageError) Error() string { return "bad answer: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *PageError) Unwrap() error { return e.Err }

// RequestError is a request that cannot be sent at all (a header value
// net/http refuses). It says nothing about the coordinator: it would fail
// the same way on any other.
type RequestError struct {
	// Err says what was wrong.
	Err error
}

// Error implements error.
func (e *RequestError) Error() string { return "request not sent: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *RequestError) Unwrap() error { return e.Err }

// RedactedLocation is resp's Location without credentials.
func RedactedLocation(resp *http.Response) string {
	loc := resp.Header.Get("Location")
	if u, err := url.Parse(loc); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// CheckHeaders returns a RequestError when a header net/http would refuse
// to send: a name that is not a token, or a value with a control character
// other than tab.
func CheckHeaders(h http.Header) error {
	for name, values := range h {
		for i := 0; i < len(name); i++ {
			if c := name[i]; c <= ' ' || c >= 0x7f || c == ':' {
				return &RequestError{Err: fmt.Errorf("header name %q is not valid", name)}
			}
		}
		for _, v := range values {
			for i := 0; i < len(v); i++ {
				if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
					return &RequestError{Err: fmt.Errorf("header %s holds a control character", name)}
				}
			}
		}
	}
	return nil
}

// CheckTarget returns a *ForeignURIError unless u, a URI a coordinator
// handed out, is on that coordinator (addr, host:port in canonical form),
// over https when wantTLS is set. Follow-ups only go to the coordinator
// that runs the query: anything else would send the user's credentials to
// a host nobody picked.
func CheckTarget(u *url.URL, addr string, wantTLS bool) error {
	if (u.Scheme == "https" || (u.Scheme == "http" && !wantTLS)) && (u.Host == addr || sameHost(u, addr)) {
		return nil
	}
	return &ForeignURIError{Node: addr, URI: u.Scheme + "://" + u.Host}
}

// sameHost reports whether u's host and port, in canonical form, are addr.
func sameHost(u *url.URL, addr string) bool {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	return err == nil && p > 0 && hostport.Join(host, int(p)) == addr
}
