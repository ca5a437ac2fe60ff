package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/zkpresto/zkpresto/dsn"
	"github.com/zkpresto/zkpresto/internal/wire"
)

// AccessTokenSource returns the bearer token (a JWT) for a request; ctx is
// the statement's. It is called for every request to a coordinator, from
// any goroutine, so that a long statement's later requests carry a fresh
// token: it must be safe for concurrent use, and should keep its token
// until shortly before it expires rather than fetch one per call.
type AccessTokenSource func(ctx context.Context) (string, error)

// WithAccessTokenSource sends "Authorization: Bearer" with the token that
// source returns, for programs whose tokens expire, instead of the DSN's
// static accessToken (giving both is an error, and so is a password). As
// with accessToken, the coordinators must be reached over https (the
// DSN's SSL=true or an ssl_* key).
func WithAccessTokenSource(source AccessTokenSource) Option {
	return func(o *connectorOptions) { o.tokenSource = source }
}

// AccessTokenError is the failure of an AccessTokenSource: the statement
// was not sent. It never holds a token.
type AccessTokenError struct {
	// Err is the source's error.
	Err error
}

// Error implements error.
func (e *AccessTokenError) Error() string {
	return "driver: the access token source failed, the request was not sent: " + e.Err.Error()
}

// Unwrap returns the source's error.
func (e *AccessTokenError) Unwrap() error { return e.Err }

// checkTokenSource refuses a token source the connector cannot use.
func checkTokenSource(cfg *Config, source AccessTokenSource) error {
	switch {
	case source == nil:
		return nil
	case cfg.AccessToken != "":
		return errors.New("driver: NewConnector: the DSN's accessToken and WithAccessTokenSource both give a token: keep one")
	case cfg.Password != "":
		return errors.New("driver: NewConnector: a password and WithAccessTokenSource both authenticate: keep one")
	case !cfg.UsesTLS():
		return fmt.Errorf("driver: NewConnector: WithAccessTokenSource: %w", dsn.ErrTokenWithoutTLS)
	}
	return nil
}

// clientHeaders are the headers of the DSN and the options that the
// Presto client does not send: the per-statement ones every submission
// carries, and the bearer token every request carries.
//
// They are sent as Trino's client sends them (trino-client's
// StatementClientV1.buildQueryRequest): X-*-Trace-Token on the
// submission; one X-*-Extra-Credential and one X-*-Resource-Estimate
// header per entry, name=value with the value URL-encoded, which the
// servers decode (HttpRequestSessionContextFactory in Trino,
// HttpRequestSessionContext in PrestoDB); roles go with the session
// (session.go). The token goes on every request, submissions, pages and
// cancellations alike, as the Trino JDBC driver's token interceptor adds
// it (OkHttpUtil.tokenAuth).
type clientHeaders struct {
	// submission holds the per-statement headers; nil when none.
	submission http.Header
	// token is the DSN's accessToken; source the option's. At most one.
	token  string
	source AccessTokenSource
}

// newClientHeaders returns the headers cfg and source ask for, nil when
// none.
func newClientHeaders(cfg *Config, source AccessTokenSource) *clientHeaders {
	prefix := "X-Presto-"
	if cfg.Trino {
		prefix = "X-Trino-"
	}
	h := make(http.Header)
	if cfg.TraceToken != "" {
		h.Set(prefix+"Trace-Token", cfg.TraceToken)
	}
	for _, m := range []struct {
		name    string
		entries map[string]string
	}{{"Extra-Credential", cfg.ExtraCredentials}, {"Resource-Estimate", cfg.ResourceEstimates}} {
		for _, name := range slices.Sorted(maps.Keys(m.entries)) {
			h.Add(prefix+m.name, name+"="+url.QueryEscape(m.entries[name]))
		}
	}
	ch := &clientHeaders{token: cfg.AccessToken, source: source}
	if len(h) > 0 {
		ch.submission = h
	}
	if ch.submission == nil && ch.token == "" && ch.source == nil {
		return nil
	}
	return ch
}

// apply returns r with the headers added, on a copy of its header map (a
// RoundTripper must not modify its request's, and r's may still be the
// Presto client's); r itself is copied when it is orig, the request the
// transport was given. A token source's failure is an *AccessTokenError.
func (ch *clientHeaders) apply(r, orig *http.Request, a *attempt, submission bool) (*http.Request, error) {
	if !submission && ch.token == "" && ch.source == nil {
		return r, nil
	}
	token, err := ch.bearer(a.caller)
	if err != nil {
		return nil, tokenError(err)
	}
	if r == orig {
		r = orig.WithContext(orig.Context())
	}
	h := r.Header.Clone()
	if submission {
		for name, values := range ch.submission {
			h[name] = values
		}
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	r.Header = h
	return r, nil
}

// bearer is the token of a request made under ctx: the DSN's, or what
// the source answers now (ctx is its argument), "" when there is neither.
// The source's failure, or an empty token from it, is an error.
func (ch *clientHeaders) bearer(ctx context.Context) (string, error) {
	if ch.source == nil {
		return ch.token, nil
	}
	t, err := ch.source(ctx)
	if err == nil && t == "" {
		err = errors.New("an empty token")
	}
	return t, err
}

// tokenError wraps a token source's error for the Presto client, which
// retries every net.Error ten times, backing off for minutes, and so would
// ask the source again each time: net/http hands it any RoundTripper error
// as a *url.Error, which is a net.Error, and it stops only at a cancelled
// context. So the error it gets also matches context.Canceled, as
// errFailover does, while reading as the source's failure; the statement's
// own error is the *AccessTokenError (Exchange.Invalid).
func tokenError(err error) error {
	return &notRetried{err: &AccessTokenError{Err: err}}
}

// notRetried is err, made to match context.Canceled too (see tokenError).
type notRetried struct{ err error }

func (e *notRetried) Error() string   { return e.err.Error() }
func (e *notRetried) Unwrap() []error { return []error{e.err, context.Canceled} }

// cancelAuth is what the driver's own DELETEs carry (a query cancelled
// when its caller gave up or closed its rows early): the statement's user
// and its authentication, a password or a token, since a coordinator that
// authenticates every request (PrestoDB's AuthenticationFilter, on https)
// would refuse an anonymous cancel, leaving the query to run on. Trino 476
// takes one (its statement follow-ups are public, the slug guarding them). The Trino JDBC driver's DELETE goes through the same
// client, with the same authentication, as its pages
// (StatementClientV1.close). Per-statement headers (extra credentials,
// trace token) are not sent: a cancel reads none of them.
type cancelAuth struct {
	userHeader string // X-Presto-User or X-Trino-User
	user       string
	password   string
	headers    *clientHeaders // the token or its source; nil for none
}

// newCancelAuth returns the authentication of cfg's cancels.
func newCancelAuth(cfg *Config, headers *clientHeaders) *cancelAuth {
	ca := &cancelAuth{userHeader: "X-Presto-User", user: cfg.User, password: cfg.Password, headers: headers}
	if cfg.Trino {
		ca.userHeader = "X-Trino-User"
	}
	return ca
}

// header returns the headers of a cancel of a's query, nil when the
// token source fails (the cancel is then sent without a token, which an
// authenticating coordinator refuses; it abandons the query once nobody
// polls it). The source is asked under the caller's context without its
// cancellation, which is what ended the statement, bounded by
// wire.CancelTimeout.
func (ca *cancelAuth) header(a *attempt) http.Header {
	if ca == nil {
		return nil
	}
	h := make(http.Header, 2)
	if ca.user != "" {
		h.Set(ca.userHeader, ca.user)
	}
	switch {
	case ca.password != "":
		r := http.Request{Header: h}
		r.SetBasicAuth(ca.user, ca.password)
	case ca.headers != nil:
		caller := context.Background()
		if a != nil && a.caller != nil {
			caller = context.WithoutCancel(a.caller)
		}
		ctx, cancel := context.WithTimeout(caller, wire.CancelTimeout)
		t, err := ca.headers.bearer(ctx)
		cancel()
		if err == nil && t != "" {
			h.Set("Authorization", "Bearer "+t)
		}
	}
	return h
}
