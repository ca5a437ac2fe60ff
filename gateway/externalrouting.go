package gateway

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// ExternalRoutingSpec, an extension of ours, names an HTTP endpoint that
// decides a statement's group before the selectors do (Trino Gateway's
// external routing service, with a budget, a cache and a fail-open rule).
type ExternalRoutingSpec struct {
	// URL is where the gateway POSTs each statement's routing inputs,
	// http[s]://host[:port]/path, with no user info.
	URL string `json:"url"`
	// Timeout is the hook's budget per statement, a Go duration ("50ms");
	// empty means DefaultExternalRoutingTimeout. Past it, the selectors
	// decide.
	Timeout string `json:"timeout"`
	// CacheTTL is how long an answer is reused for the same inputs, a Go
	// duration; empty or "0s" means answers are not cached.
	CacheTTL string `json:"cacheTTL"`
	// CacheSize bounds the answers cached; 0 means
	// DefaultExternalRoutingCacheSize.
	CacheSize int `json:"cacheSize"`
	// Headers names the request headers the hook gets besides the routing
	// inputs; credentials (Authorization, cookies, extra credentials) are
	// refused.
	Headers []string `json:"headers"`
}

// Defaults and bounds of an ExternalRoutingSpec.
const (
	// DefaultExternalRoutingTimeout is the hook's budget when the config
	// gives none.
	DefaultExternalRoutingTimeout = 50 * time.Millisecond
	// MaxExternalRoutingTimeout is the longest budget the config may give:
	// every statement may wait that long.
	MaxExternalRoutingTimeout = 5 * time.Second
	// DefaultExternalRoutingCacheSize bounds the answers cached when the
	// config sets a cacheTTL but no cacheSize.
	DefaultExternalRoutingCacheSize = 10000
	// MaxExternalRoutingAnswer is the most of a hook's answer the gateway
	// reads; a longer one is a bad answer.
	MaxExternalRoutingAnswer = 64 << 10
	// maxRefusalMessage bounds the refusal message a client gets.
	maxRefusalMessage = 1024
)

// externalRoutingFields are the fields an externalRouting object reads.
var externalRoutingFields = []string{"url", "timeout", "cacheTTL", "cacheSize", "headers"}

// credentialHeaders are headers the hook never gets: they carry the
// client's credentials.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie",
	"X-Presto-Extra-Credential", "X-Trino-Extra-Credential"}

// credentialWords, in a header's name, make it one the hook never gets.
var credentialWords = []string{"credential", "token", "secret", "password", "passwd", "api-key", "apikey", "session-id"}

// check checks s; an error names the field, under externalRouting, at
// fault. It never quotes the URL, which may carry a secret in its query.
func (s *ExternalRoutingSpec) check() (field string, err error) {
	u, err := url.Parse(s.URL)
	switch {
	case s.URL == "":
		return "url", errors.New("missing")
	case err != nil:
		return "url", errors.New("malformed: want http[s]://host[:port]/path")
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "url", errors.New("want http[s]://host[:port]/path")
	case u.User != nil:
		return "url", errors.New("user info in the URL: it would be sent, and could be logged, in the clear")
	case u.Fragment != "":
		return "url", errors.New("a fragment: want http[s]://host[:port]/path")
	}
	if _, err := s.timeout(); err != nil {
		return "timeout", err
	}
	if _, err := s.cacheTTL(); err != nil {
		return "cacheTTL", err
	}
	if s.CacheSize < 0 {
		return "cacheSize", errors.New("negative")
	}
	seen := map[string]bool{}
	for i, h := range s.Headers {
		at := fmt.Sprintf("headers[%d]", i)
		name := http.CanonicalHeaderKey(h)
		switch {
		case !validHeaderName(h):
			return at, fmt.Errorf("%q is no header name", h)
		case isCredentialHeader(name):
			return at, fmt.Errorf("%q carries credentials: the hook never gets it", h)
		case seen[name]:
			return at, fmt.Errorf("%q a second time", h)
		}
		seen[name] = true
	}
	return "", nil
}

// isCredentialHeader reports whether the canonical header name carries
// credentials.
func isCredentialHeader(name string) bool {
	if slices.Contains(credentialHeaders, name) {
		return true
	}
	lower := strings.ToLower(name)
	return slices.ContainsFunc(credentialWords, func(w string) bool { return strings.Contains(lower, w) })
}

func (s *ExternalRoutingSpec) timeout() (time.Duration, error) {
	if s.Timeout == "" {
		return DefaultExternalRoutingTimeout, nil
	}
	d, err := time.ParseDuration(s.Timeout)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q: want a Go duration, as \"50ms\"", s.Timeout)
	case d <= 0:
		return 0, fmt.Errorf("%q: a budget is more than 0", s.Timeout)
	case d > MaxExternalRoutingTimeout:
		return 0, fmt.Errorf("%q: more than %v, which every statement could wait", s.Timeout, MaxExternalRoutingTimeout)
	}
	return d, nil
}

func (s *ExternalRoutingSpec) cacheTTL() (time.Duration, error) {
	if s.CacheTTL == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s.CacheTTL)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q: want a Go duration, as \"10s\"", s.CacheTTL)
	case d < 0:
		return 0, fmt.Errorf("%q: negative", s.CacheTTL)
	}
	return d, nil
}

// externalRouting is a config's hook: its client, budget, cache and the
// headers it forwards. It is made once per config load.
type externalRouting struct {
	url     string
	host    string // for log lines: the URL's host, never its query
	budget  time.Duration
	headers []string // canonical names
	client  *http.Client
	cache   *answerCache // nil when answers are not cached
}

// errOtherHost is a redirect the hook's client does not follow.
var errOtherHost = errors.New("a redirect to another host, which the gateway does not follow")

// newExternalRouting makes the hook s describes (checked by
// ParseRouterConfig). Its client has a transport of its own, whose idle
// connections close with the Groups.
func newExternalRouting(s *ExternalRoutingSpec) (*externalRouting, error) {
	if _, err := s.check(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(s.URL)
	budget, _ := s.timeout()
	ttl, _ := s.cacheTTL()
	h := &externalRouting{url: s.URL, host: u.Host, budget: budget}
	for _, name := range s.Headers {
		h.headers = append(h.headers, http.CanonicalHeaderKey(name))
	}
	h.client = &http.Client{
		Timeout: budget,
		Transport: &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            (&net.Dialer{Timeout: budget, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:    budget,
			ResponseHeaderTimeout:  budget,
			MaxIdleConnsPerHost:    64,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 16 << 10,
		},
		// A redirect is followed only on the hook's own host (scheme and
		// port included), at most twice: the routing inputs go nowhere else.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
				return errOtherHost
			}
			if len(via) > 2 {
				return errors.New("more than 2 redirects")
			}
			return nil
		},
	}
	if ttl > 0 {
		size := s.CacheSize
		if size == 0 {
			size = DefaultExternalRoutingCacheSize
		}
		h.cache = newAnswerCache(ttl, size)
	}
	return h, nil
}

// close closes the idle connections of the hook's client.
func (h *externalRouting) close() {
	h.client.CloseIdleConnections()
}

// hookRequest is what the hook gets, as JSON in a POST.
type hookRequest struct {
	User          string            `json:"user"`
	Source        string            `json:"source"`
	ClientTags    []string          `json:"clientTags"`
	ClientInfo    string            `json:"clientInfo"`
	StatementKind string            `json:"statementKind"`
	Catalog       string            `json:"catalog"` // the session's
	Schema        string            `json:"schema"`  // the session's
	Tables        []hookTable       `json:"tables"`
	Headers       map[string]string `json:"headers"`
}

type hookTable struct {
	Catalog string `json:"catalog"`
	Schema  string `json:"schema"`
	Table   string `json:"table"`
}

// hookAnswer is what the hook said of one statement.
type hookAnswer struct {
	group  string // the group it names
	refuse string // the refusal's message
	// failed is why the hook's answer is not used (timeout, error,
	// bad_answer, unknown_group), and detail says more; empty when it
	// answered.
	failed, detail string
	cached         bool
	asked          bool // a hook was asked (or its cache was)
}

// The kinds of a hook's failure, as the metrics count them.
const (
	HookTimeout      = "timeout"       // the budget ran out
	HookError        = "error"         // no answer: connection, status, redirect
	HookBadAnswer    = "bad_answer"    // an answer that does not read
	HookUnknownGroup = "unknown_group" // an answer naming no group of the config
)

// describe says what the hook answered, for --explain and Decision.Hook.
func (a hookAnswer) describe(budget time.Duration) string {
	from := "answered"
	if a.cached {
		from = "answered (cached)"
	}
	switch {
	case !a.asked:
		return ""
	case a.failed == HookTimeout:
		return fmt.Sprintf("failed open: no answer within its budget of %v; the selectors decide", budget)
	case a.failed != "":
		return fmt.Sprintf("failed open (%s): %s; the selectors decide", a.failed, a.detail)
	case a.group != "":
		return fmt.Sprintf("%s group %q", from, a.group)
	case a.refuse != "":
		return fmt.Sprintf("%s a refusal: %s", from, a.refuse)
	}
	return from + " nothing; the selectors decide"
}

// askHook asks the config's hook, if any, about in, within its budget:
// unless in names its routing group (which goes first), from the cache
// when it has the answer. A failure is counted in stats (when not nil),
// logged (at most every few seconds) and leaves the decision to the
// selectors.
func (gs *Groups) askHook(ctx context.Context, in routeInput, stats *hookStats, log *slog.Logger) hookAnswer {
	h := gs.hook
	if h == nil || in.group != "" {
		return hookAnswer{}
	}
	body := h.body(in)
	key := sha256.Sum256(body)
	if h.cache != nil {
		if a, ok := h.cache.get(key); ok {
			a.cached = true
			stats.answered(a, 0, false)
			return a
		}
	}
	start := time.Now()
	a := h.ask(ctx, body)
	if a.failed == "" && a.group != "" && gs.byName[a.group] == nil {
		a = hookAnswer{failed: HookUnknownGroup, detail: fmt.Sprintf("no group named %q (groups: %s)", a.group, strings.Join(gs.names(), ", "))}
	}
	a.asked = true
	stats.answered(a, time.Since(start), true)
	if a.failed != "" {
		if stats.mayLog() && log != nil {
			log.Warn("external routing hook failed; the selectors decide", "host", h.host, "kind", a.failed, "err", a.detail)
		}
		return a
	}
	if h.cache != nil {
		h.cache.put(key, a)
	}
	return a
}

// body is the hook's request body for in: deterministic, so that it keys
// the cache.
func (h *externalRouting) body(in routeInput) []byte {
	r := hookRequest{User: in.user, Source: in.source, ClientTags: in.tags, ClientInfo: in.clientInfo,
		StatementKind: in.facts.Kind, Catalog: in.catalog, Schema: in.schema, Tables: []hookTable{}, Headers: map[string]string{}}
	if r.ClientTags == nil {
		r.ClientTags = []string{}
	}
	for _, t := range in.facts.Tables {
		r.Tables = append(r.Tables, hookTable(t))
	}
	for _, name := range h.headers {
		if vs := in.header.Values(name); len(vs) > 0 {
			r.Headers[name] = strings.Join(vs, ",")
		}
	}
	b, _ := json.Marshal(r) // strings, slices and a map of strings: it cannot fail
	return b
}

// ask POSTs body to the hook and reads its answer, within the budget.
func (h *externalRouting) ask(ctx context.Context, body []byte) hookAnswer {
	ctx, cancel := context.WithTimeout(ctx, h.budget)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return hookAnswer{failed: HookError, detail: "the request does not build"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "zkpresto-gateway")
	resp, err := h.client.Do(req)
	if err != nil {
		return failure(ctx, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxExternalRoutingAnswer+1))
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return hookAnswer{}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return hookAnswer{failed: HookError, detail: "HTTP status " + resp.Status}
	case err != nil:
		return failure(ctx, err)
	case len(answer) > MaxExternalRoutingAnswer:
		return hookAnswer{failed: HookBadAnswer, detail: fmt.Sprintf("an answer longer than %d bytes", MaxExternalRoutingAnswer)}
	}
	return readAnswer(answer)
}

// failure is the hookAnswer of err, the error of a request within ctx;
// its detail is the error without the URL (which may carry a secret).
func failure(ctx context.Context, err error) hookAnswer {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return hookAnswer{failed: HookTimeout, detail: "no answer within the budget"}
	}
	return hookAnswer{failed: HookError, detail: err.Error()}
}

// readAnswer reads the hook's answer: {"group": "etl"}, {"refuse": "why"},
// or nothing ({}, null, an empty body) to leave the decision to the
// selectors. Anything else is a bad answer.
func readAnswer(b []byte) hookAnswer {
	if len(bytes.TrimSpace(b)) == 0 {
		return hookAnswer{}
	}
	var v struct {
		Group  *string `json:"group"`
		Refuse *string `json:"refuse"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return hookAnswer{failed: HookBadAnswer, detail: "want {\"group\": \"name\"}, {\"refuse\": \"message\"} or {}: " + answerError(err)}
	}
	if dec.More() {
		return hookAnswer{failed: HookBadAnswer, detail: "more than one JSON value"}
	}
	var a hookAnswer
	if v.Group != nil {
		a.group = strings.TrimSpace(*v.Group)
	}
	if v.Refuse != nil {
		a.refuse = strings.TrimSpace(*v.Refuse)
		if a.refuse == "" {
			a.refuse = "no reason given"
		}
	}
	if a.group != "" && a.refuse != "" {
		return hookAnswer{failed: HookBadAnswer, detail: "both a group and a refusal"}
	}
	if len(a.refuse) > maxRefusalMessage {
		cut := maxRefusalMessage
		for cut > 0 && !utf8.RuneStart(a.refuse[cut]) {
			cut-- // not inside a character
		}
		a.refuse = a.refuse[:cut] + "…"
	}
	return a
}

// answerError says what is wrong with a hook's answer without quoting it.
func answerError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return "not a JSON object"
	case errors.As(err, &typ):
		return fmt.Sprintf("%s: %s where %s is wanted", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "cut short"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "not JSON"
}

// hookRefusal is the *RouteError a refusal of the hook answers.
func hookRefusal(message string) *RouteError {
	return &RouteError{Status: http.StatusForbidden, Name: errRoutingRefused,
		Message: "zkpresto gateway: the external routing hook refuses the statement: " + message}
}

// errRoutingRefused is the error name of a statement the hook refuses.
const errRoutingRefused = "ZKPRESTO_ROUTING_REFUSED"

// answerCache keeps the hook's answers for a time, by the hash of their
// inputs, at most size of them: all live ttl, so the oldest is the first
// to expire, and the first dropped when the cache is full.
type answerCache struct {
	ttl  time.Duration
	size int
	now  func() time.Time

	mu     sync.Mutex
	byKey  map[[32]byte]*list.Element
	byTime *list.List // of *cachedAnswer, oldest first
}

type cachedAnswer struct {
	key     [32]byte
	answer  hookAnswer
	expires time.Time
}

func newAnswerCache(ttl time.Duration, size int) *answerCache {
	return &answerCache{ttl: ttl, size: size, now: time.Now, byKey: map[[32]byte]*list.Element{}, byTime: list.New()}
}

func (c *answerCache) get(key [32]byte) (hookAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return hookAnswer{}, false
	}
	ca := e.Value.(*cachedAnswer)
	if !c.now().Before(ca.expires) {
		c.byTime.Remove(e)
		delete(c.byKey, key)
		return hookAnswer{}, false
	}
	return ca.answer, true
}

func (c *answerCache) put(key [32]byte, a hookAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if e, ok := c.byKey[key]; ok {
		c.byTime.Remove(e)
		delete(c.byKey, key)
	}
	// The expired ones go first, then the oldest while full.
	for e := c.byTime.Front(); e != nil; e = c.byTime.Front() {
		ca := e.Value.(*cachedAnswer)
		if now.Before(ca.expires) && c.byTime.Len() < c.size {
			break
		}
		c.byTime.Remove(e)
		delete(c.byKey, ca.key)
	}
	c.byKey[key] = c.byTime.PushBack(&cachedAnswer{key: key, answer: a, expires: now.Add(c.ttl)})
}

func (c *answerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byTime.Len()
}

// ExternalRoutingBounds are the upper bounds, in seconds, of the buckets
// the hook's latencies are counted in: around its default budget of 50 ms.
var ExternalRoutingBounds = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// ExternalRoutingFigures are what the gateway's external routing hook did
// since the gateway started, over every config it loaded.
type ExternalRoutingFigures struct {
	// Latency is how long the hook took to answer or fail, cache hits left
	// out; its Kind is "external_routing" and its Buckets are over
	// ExternalRoutingBounds.
	Latency RequestLatency
	// Answers counts the answers used, by kind: group, refuse or none
	// (the selectors decide); cache hits included.
	Answers map[string]uint64
	// CacheHits counts the answers taken from the cache.
	CacheHits uint64
	// Failures counts the hook's failures, by kind (HookTimeout,
	// HookError, HookBadAnswer, HookUnknownGroup): each time the
	// selectors decided instead.
	Failures map[string]uint64
}

// hookStats are the gateway's figures of the hook. The zero value is
// ready; a nil *hookStats counts nothing.
type hookStats struct {
	mu       sync.Mutex
	latency  RequestLatency
	answers  map[string]uint64
	hits     uint64
	failures map[string]uint64

	lastLog atomic.Int64 // unix nanoseconds of the last failure logged
}

// hookLogEvery is how often, at most, a failing hook is logged.
const hookLogEvery = 10 * time.Second

func (s *hookStats) answered(a hookAnswer, took time.Duration, called bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers == nil {
		s.answers, s.failures = map[string]uint64{}, map[string]uint64{}
		s.latency = RequestLatency{Kind: "external_routing", Buckets: make([]uint64, len(ExternalRoutingBounds))}
	}
	if called {
		sec := took.Seconds()
		s.latency.Count++
		s.latency.Sum += sec
		for i, bound := range ExternalRoutingBounds {
			if sec <= bound {
				s.latency.Buckets[i]++
			}
		}
	} else {
		s.hits++
	}
	switch {
	case a.failed != "":
		s.failures[a.failed]++
	case a.group != "":
		s.answers["group"]++
	case a.refuse != "":
		s.answers["refuse"]++
	default:
		s.answers["none"]++
	}
}

// mayLog reports whether a failure may be logged now: at most one every
// hookLogEvery, so that a dead hook does not log every statement.
func (s *hookStats) mayLog() bool {
	if s == nil {
		return false
	}
	now := time.Now().UnixNano()
	last := s.lastLog.Load()
	return now-last >= int64(hookLogEvery) && s.lastLog.CompareAndSwap(last, now)
}

// ExternalRouting returns what the config's external routing hook did so
// far, for metrics; all zero when no config had one.
func (g *Gateway) ExternalRouting() ExternalRoutingFigures {
	s := &g.hook
	s.mu.Lock()
	defer s.mu.Unlock()
	f := ExternalRoutingFigures{Latency: s.latency, Answers: map[string]uint64{}, CacheHits: s.hits, Failures: map[string]uint64{}}
	f.Latency.Kind = "external_routing"
	f.Latency.Buckets = slices.Clone(s.latency.Buckets)
	if f.Latency.Buckets == nil {
		f.Latency.Buckets = make([]uint64, len(ExternalRoutingBounds))
	}
	for k, v := range s.answers {
		f.Answers[k] = v
	}
	for k, v := range s.failures {
		f.Failures[k] = v
	}
	return f
}
