package coordinator

import (
	"compress/gzip"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxPollWait caps how long one poll waits for data or a state change, and is the wait of a
// poll without maxWait (trino: ExecutingStatementResource and QueuedStatementResource,
// MAX_WAIT_TIME of 1 s, WAIT_ORDERING.min(MAX_WAIT_TIME, maxWait); prestodb:
// ExecutingStatementResource, MAX_WAIT_TIME).
const maxPollWait = time.Second

// maxTargetResultSize caps targetResultSize (trino: ExecutingStatementResource,
// MAX_TARGET_RESULT_SIZE 128 MB; prestodb: the same).
const maxTargetResultSize = 128 << 20

// pollParams are the query parameters a client may add to a nextUri.
type pollParams struct {
	maxWait    time.Duration // how long the poll may wait for data; at most maxPollWait
	targetSize int64         // bytes of rows a page aims at; 0 when the client asked for none
}

// Units of airlift's Duration (in nanoseconds) and DataSize (in bytes, powers of 1024).
var (
	durationUnits = map[string]float64{"ns": float64(time.Nanosecond), "us": float64(time.Microsecond),
		"ms": float64(time.Millisecond), "s": float64(time.Second), "m": float64(time.Minute),
		"h": float64(time.Hour), "d": float64(24 * time.Hour)}
	dataSizeUnits = map[string]float64{"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40, "PB": 1 << 50}
)

// readPollParams reads maxWait (an airlift Duration: "10ms", "1.5s", "2m") and
// targetResultSize (an airlift DataSize: "1kB", "16MB") from a poll's query string in phase.
// An unreadable one is what each server makes of it, seen on Trino 476 and PrestoDB 0.287
// (interop/realservers TestDifferentialMaxWaitAndTargetResultSize): Trino ignores it and
// takes the default; PrestoDB answers 404, as JAX-RS does for a @QueryParam it cannot convert
// (prestodb: ExecutingStatementResource.getQueryResults takes both, QueuedStatementResource's
// getStatus maxWait only, so there an unreadable targetResultSize is ignored).
func (c *Coordinator) readPollParams(w http.ResponseWriter, r *http.Request, phase string) (pollParams, bool) {
	p := pollParams{maxWait: maxPollWait}
	q := r.URL.Query()
	refused := func() (pollParams, bool) {
		c.refuse(w, r, http.StatusNotFound, "unreadable maxWait or targetResultSize")
		return p, false
	}
	if v := q.Get("maxWait"); v != "" {
		d, err := parseAirlift(v, "a duration", durationUnits, int64(maxPollWait))
		switch {
		case err == nil:
			p.maxWait = time.Duration(d)
		case c.flavour != Trino:
			return refused()
		}
	}
	if v := q.Get("targetResultSize"); v != "" {
		n, err := parseAirlift(v, "a data size", dataSizeUnits, maxTargetResultSize)
		switch {
		case err == nil:
			p.targetSize = n
		case c.flavour != Trino && phase == phaseExecuting:
			return refused()
		}
	}
	return p, true
}

// parseAirlift reads a value as airlift's Duration.valueOf and DataSize.valueOf do: a
// decimal number and one of units, each unit's size in the result's own unit; what names
// the kind of value in the error. The result is capped at limit, the servers' bound on the
// parameter, which also keeps a huge value from overflowing int64.
func parseAirlift(v, what string, units map[string]float64, limit int64) (int64, error) {
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return 0, fmt.Errorf("%q is not %s", v, what)
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	unit, ok := units[strings.TrimSpace(v[i:])]
	if err != nil || !ok || n < 0 {
		return 0, fmt.Errorf("%q is not %s", v, what)
	}
	return int64(min(n*unit, float64(limit))), nil
}

// progressInterval is how often a poll of a sleep(ms) statement answers while it runs, so
// that a progress display has something to show.
const progressInterval = 100 * time.Millisecond

// maxStatementBytes bounds the SQL text a submission may carry.
const maxStatementBytes = 16 << 20

// routes returns the HTTP handler for one listen generation.
func (c *Coordinator) routes(s *serving) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/statement", c.recorded(func(w http.ResponseWriter, r *http.Request) {
		c.handleSubmit(w, r, "", s)
	}))
	mux.HandleFunc("PUT /v1/statement/{queryId}", c.recorded(func(w http.ResponseWriter, r *http.Request) {
		c.handleSubmit(w, r, r.PathValue("queryId"), s)
	}))
	// Trino carries the slug in the path, PrestoDB in the query string; see query.link.
	statementPath, partialCancelPath := "/v1/statement/{phase}/{queryId}/{token}", "/v1/statement/executing/partialCancel/{queryId}/{stage}/{token}"
	if c.flavour == Trino {
		statementPath, partialCancelPath = "/v1/statement/{phase}/{queryId}/{slug}/{token}", "/v1/statement/executing/partialCancel/{queryId}/{stage}/{slug}/{token}"
	}
	mux.HandleFunc("GET "+statementPath, c.recorded(func(w http.ResponseWriter, r *http.Request) {
		c.handlePoll(w, r, s)
	}))
	// HEAD on a nextUri is served by the GET pattern: JAX-RS runs the @GET method for a HEAD
	// and drops the entity, so a HEAD waits, consumes and advances the token as a GET does,
	// and a GET of the same token then replays that page (prestodb:
	// ExecutingStatementResource.getQueryResults and QueuedStatementResource.getStatus are
	// @GET only). Trino 476 does so on the queued resource only; see handlePoll.
	mux.HandleFunc("HEAD /v1/statement", c.recorded(c.handleStatementHead))
	mux.HandleFunc("DELETE "+statementPath, c.recorded(c.handleCancel))
	mux.HandleFunc("DELETE "+partialCancelPath, c.recorded(c.handlePartialCancel))
	mux.HandleFunc("GET /v1/query/{queryId}", c.recorded(c.handleQueryInfo))
	mux.HandleFunc("DELETE /v1/query/{queryId}", c.recorded(c.handleQueryCancel))
	if c.spool != nil {
		mux.HandleFunc("GET /v1/spooled/download/{id}", c.spool.serveDownload)
		mux.HandleFunc("GET /v1/spooled/ack/{id}", c.spool.serveAck)
	}
	mux.HandleFunc("GET /v1/info", c.handleInfo)
	mux.HandleFunc("GET /v1/info/state", c.handleState)
	if c.flavour == Trino {
		mux.HandleFunc("GET /v1/jmx/mbean/{name}", c.handleQueryManagerMBean)
	} else {
		mux.HandleFunc("GET /v1/cluster", c.handleClusterStats)
	}
	if c.oauth != nil {
		c.oauth.routes(c, mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// JAX-RS answers a path no resource matches 404: text/plain on Trino, Jetty's HTML
		// error page on PrestoDB.
		c.refuse(w, r, http.StatusNotFound, "no such resource: "+r.Method+" "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			// The node is going down: break the connection rather than answer.
			panic(http.ErrAbortHandler)
		}
		defer s.inFlight.Done()
		if c.oauth != nil && c.oauth.guards(r.URL.Path) && !c.oauth.authenticated(r) {
			c.oauth.challenge(c, w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// recorder captures what a handler answered, for Calls.
type recorder struct {
	http.ResponseWriter
	status  int
	queryID string // set by a submission once it has an id
}

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// recorded wraps a handler of the statement or query resources so that Calls lists the
// request, also when the handler breaks the connection.
func (c *Coordinator) recorded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, queryID: r.PathValue("queryId")}
		call := Call{Method: r.Method, Path: r.URL.Path, Time: time.Now(), Wire: c.wire(r)}
		defer func() {
			call.Status, call.QueryID = rec.status, rec.queryID
			call.Gzipped = rec.Header().Get("Content-Encoding") == "gzip"
			c.recordCall(call)
		}()
		if c.requireAuth && !c.authenticate(rec, r) {
			return
		}
		h(rec, r)
	}
}

// authenticate checks r's Authorization for RequireAuthorization, and
// answers 401 when it fails.
func (c *Coordinator) authenticate(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(strings.TrimSpace(auth), " ")
	message := ""
	switch {
	case auth == "":
		message = "Unauthorized"
	case strings.EqualFold(scheme, "Negotiate"):
		c.negotiateMu.Lock()
		replayed := c.negotiateSeen[token]
		c.negotiateSeen[token] = true
		c.negotiateMu.Unlock()
		if replayed {
			message = "Request is a replay (34)"
		}
	}
	if message == "" {
		return true
	}
	w.Header().Add("WWW-Authenticate", "Negotiate")
	w.Header().Add("WWW-Authenticate", `Basic realm="Presto"`)
	c.refuse(w, r, http.StatusUnauthorized, message)
	return false
}

// setQueryID tells the recorder the id a submission was given.
func setQueryID(w http.ResponseWriter, id string) {
	if rec, ok := w.(*recorder); ok {
		rec.queryID = id
	}
}

// header returns a session header the coordinator reads, and whether it came with the
// X-Trino- prefix. A Presto coordinator prefers X-Presto-* and, unless strict, also takes
// X-Trino-*; a Trino coordinator reads X-Trino-* only.
func (c *Coordinator) header(r *http.Request, name string) (string, bool) {
	if c.flavour != Trino {
		if v := r.Header.Get("X-Presto-" + name); v != "" {
			return v, false
		}
		if c.strict {
			return "", false
		}
	}
	v := r.Header.Get("X-Trino-" + name)
	return v, v != ""
}

// headerValues is header for headers that may be repeated.
func (c *Coordinator) headerValues(r *http.Request, name string) ([]string, bool) {
	if c.flavour != Trino {
		if v := r.Header.Values("X-Presto-" + name); len(v) > 0 {
			return v, false
		}
		if c.strict {
			return nil, false
		}
	}
	v := r.Header.Values("X-Trino-" + name)
	return v, len(v) > 0
}

// forwardingHeaders are the headers a proxy sets to tell a server how the client reached it.
var forwardingHeaders = []string{
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host",
	"X-Forwarded-Port", "X-Forwarded-Prefix", "X-Presto-Prefix-Url",
}

// wire describes how r arrived.
func (c *Coordinator) wire(r *http.Request) Wire {
	var w Wire
	for name, values := range r.Header {
		switch {
		case strings.HasPrefix(name, "X-Presto-"):
			w.PrestoHeaders++
		case strings.HasPrefix(name, "X-Trino-"):
			w.TrinoHeaders++
		}
		for _, v := range values {
			w.HeaderBytes += len(name) + len(": ") + len(v) + len("\r\n")
		}
	}
	for _, name := range forwardingHeaders {
		if v := r.Header.Values(name); len(v) > 0 {
			if w.Forwarded == nil {
				w.Forwarded = make(http.Header)
			}
			w.Forwarded[name] = append([]string(nil), v...)
		}
	}
	for _, name := range identityHeaders {
		if v := r.Header.Values(name); len(v) > 0 {
			if w.Identity == nil {
				w.Identity = make(http.Header)
			}
			w.Identity[name] = append([]string(nil), v...)
		}
	}
	w.AcceptGzip = acceptsGzip(r)
	return w
}

// identityHeaders are the headers Wire.Identity records.
var identityHeaders = []string{
	"Authorization",
	"X-Presto-Role", "X-Presto-Extra-Credential", "X-Presto-Trace-Token", "X-Presto-Resource-Estimate",
	"X-Trino-Role", "X-Trino-Extra-Credential", "X-Trino-Trace-Token", "X-Trino-Resource-Estimate",
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, line := range r.Header.Values("Accept-Encoding") {
		for item := range strings.SplitSeq(line, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(item), ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
				return false
			}
			return true
		}
	}
	return false
}

// gzipFor reports whether statement answers to r go out compressed.
func (c *Coordinator) gzipFor(r *http.Request) bool { return c.gzip && acceptsGzip(r) }

// parseRequest reads the session headers of a submission.
func (c *Coordinator) parseRequest(r *http.Request, sql string, now time.Time) (Request, map[string]string) {
	req := Request{SQL: sql, Time: now, Wire: c.wire(r)}
	var trino [10]bool
	req.User, trino[0] = c.header(r, "User")
	req.Catalog, trino[1] = c.header(r, "Catalog")
	req.Schema, trino[2] = c.header(r, "Schema")
	req.Source, trino[3] = c.header(r, "Source")
	req.ClientInfo, trino[4] = c.header(r, "Client-Info")
	req.TimeZone, trino[5] = c.header(r, "Time-Zone")
	req.TransactionID, trino[6] = c.header(r, "Transaction-Id")
	req.TransactionSupport = req.TransactionID != ""
	if strings.EqualFold(req.TransactionID, "NONE") {
		req.TransactionID = ""
	}
	req.QueryDataEncoding, _ = c.header(r, "Query-Data-Encoding")
	req.Path, _ = c.header(r, "Path")
	req.Role, _ = c.header(r, "Role")
	req.OriginalUser, _ = c.header(r, "Original-User")
	_, req.Password, _ = r.BasicAuth()
	var sessions, tags, prepared []string
	sessions, trino[7] = c.headerValues(r, "Session")
	tags, trino[8] = c.headerValues(r, "Client-Tags")
	prepared, trino[9] = c.headerValues(r, "Prepared-Statement")
	for _, t := range trino {
		req.Trino = req.Trino || t
	}
	for key, value := range headerPairs(sessions) {
		if req.SessionProperties == nil {
			req.SessionProperties = make(map[string]string)
		}
		req.SessionProperties[key] = value
	}
	for _, line := range tags {
		for tag := range strings.SplitSeq(line, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				req.ClientTags = append(req.ClientTags, tag)
			}
		}
	}
	statements, names := parsePrepared(prepared)
	req.PreparedStatements = names
	return req, statements
}

// linker makes the absolute URIs a coordinator hands out for one request.
type linker struct {
	base string // scheme://host[:port][prefix]
	wrap string // Presto's X-Presto-Prefix-Url: the URI goes after it, URL-encoded
}

// abs returns the URI of path. The zero linker leaves path relative.
func (l linker) abs(path string) string {
	u := l.base + path
	if l.wrap != "" {
		return l.wrap + url.QueryEscape(u)
	}
	return u
}

// links returns the linker for r: the scheme and authority the client used, so the links
// reach this node through whatever address it dialled; or, when forwarding headers are
// honoured, the address the proxy says the client used.
func (c *Coordinator) links(r *http.Request) linker {
	host := r.Host
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); host == "" && ok {
		host = local.String()
	}
	scheme := c.Scheme()
	if !c.forwarded {
		return linker{base: scheme + "://" + host}
	}
	if p := strings.ToLower(firstValue(r.Header.Get("X-Forwarded-Proto"))); p == "http" || p == "https" {
		scheme = p
	}
	if c.flavour != Trino {
		// PrestoDB puts its own URI, URL-encoded, after the prefix the proxy gave.
		return linker{base: scheme + "://" + host, wrap: r.Header.Get("X-Presto-Prefix-Url")}
	}
	if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" {
		host = h
	}
	if port := firstValue(r.Header.Get("X-Forwarded-Port")); port != "" {
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		}
		host = net.JoinHostPort(strings.Trim(name, "[]"), port)
	}
	prefix := strings.TrimSuffix(firstValue(r.Header.Get("X-Forwarded-Prefix")), "/")
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		prefix = "/" + prefix
	}
	return linker{base: scheme + "://" + host + prefix}
}

// firstValue is the first of a comma-separated list of values, as each proxy on the way
// appends its own.
func firstValue(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(first)
}

// validQueryID accepts the characters of Presto query ids, so an id can go into a URL as is.
func validQueryID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}

func (c *Coordinator) newQueryID(now time.Time) string {
	return fmt.Sprintf("%s_%05d_%s", now.UTC().Format("20060102_150405"), c.querySeq.Add(1), c.idSuffix)
}

func (c *Coordinator) handleSubmit(w http.ResponseWriter, r *http.Request, preMintedID string, s *serving) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxStatementBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "statement is larger than "+strconv.Itoa(maxStatementBytes)+" bytes")
		}
		// Otherwise the client went away mid-body: the statement never arrived.
		return
	}
	now := time.Now()
	c.statements.Add(1)
	req, prepared := c.parseRequest(r, string(body), now)
	if c.resetting.Load() {
		req.Reset = true
		c.record(req)
		resetConn(w)
		return
	}
	switch {
	case strings.TrimSpace(req.SQL) == "":
		req.Rejected = true
		c.record(req)
		writeError(w, http.StatusBadRequest, "SQL statement is empty")
		return
	case preMintedID != "" && !validQueryID(preMintedID):
		req.Rejected = true
		c.record(req)
		writeError(w, http.StatusBadRequest, "invalid query id "+strconv.Quote(preMintedID))
		return
	}

	id := preMintedID
	if id == "" {
		id = c.newQueryID(now)
	}
	req.QueryID = id
	setQueryID(w, id)
	p := c.planStatement(req, prepared)
	q := &query{
		id:          id,
		slug:        newSlugSecret(),
		coordinator: c.name,
		flavour:     c.flavour,
		batchRows:   c.batchRows,
		plan:        p,
		created:     now,
		runFor:      time.Duration(c.latency.Load()) + p.sleep,
		canceled:    make(chan struct{}),
		token:       1, // the POST answers token 0 and hands out 1 (trino: QueuedStatementResource.java)
		queuedLeft:  c.queuedPolls,
	}
	if c.flavour == Trino && c.spool.spools(req.QueryDataEncoding) {
		q.spool = c.spool
	}
	q.ready.Store(now.Add(q.runFor).UnixNano()) // dispatch sets it again, or queues it when every slot is taken
	q.tokenNow.Store(1)
	q.touched.Store(now.UnixNano())
	switch {
	case p.kind == describeRequest:
		q.columns = describeColumns
	case p.kind == generateRows && p.width > 0:
		q.columns = bigrowsColumns
	case p.kind == generateRows:
		q.columns = rowsColumns
	case p.kind == dataChange:
		q.columns = updateColumns
	case p.kind == sessionStatement:
		q.columns = resultColumns
	case p.kind == tstzValues:
		q.columns = tstzColumns(c.flavour)
	}
	req.Gzipped = c.gzipFor(r)
	q.req = req
	if !c.register(q, now) {
		req.Rejected = true
		req.QueryID = ""
		req.Gzipped = false
		setQueryID(w, "")
		c.record(req)
		writeError(w, http.StatusConflict, "query "+id+" already exists")
		return
	}
	c.record(req)
	if d := time.Duration(c.answerDelay.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
		}
	}
	c.writeAnswer(w, r, q.queuedAnswer(c.links(r), now, phaseQueued, 1))
}

// newSlugSecret is a query's slug: PrestoDB's, "x" and a random UUID's 32 hex digits, also
// the secret of Trino's per-token slugs (see query.slugFor).
func newSlugSecret() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "x" + hex.EncodeToString(b[:])
}

// resetConn resets the connection of w without answering: SO_LINGER 0, then close.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn() // no close_notify: a reset
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// pollToken reads a statement link: the phase, the query id, the slug (in the path on Trino,
// in the query string on PrestoDB) and the token. A link no resource serves, a token that
// is not a number included, is 404, as JAX-RS answers a path parameter it cannot convert.
func (c *Coordinator) pollToken(w http.ResponseWriter, r *http.Request) (phase, id, slug string, token int64, ok bool) {
	phase = r.PathValue("phase")
	if phase == "" {
		phase = phaseExecuting // partialCancel lives under executing
	}
	if phase != phaseQueued && phase != phaseExecuting {
		c.refuse(w, r, http.StatusNotFound, "no such resource: "+r.Method+" "+r.URL.Path)
		return "", "", "", 0, false
	}
	token, err := strconv.ParseInt(r.PathValue("token"), 10, 64)
	if err != nil {
		c.refuse(w, r, http.StatusNotFound, "bad token "+strconv.Quote(r.PathValue("token")))
		return "", "", "", 0, false
	}
	slug = r.PathValue("slug")
	if slug == "" {
		slug = r.URL.Query().Get("slug")
	}
	return phase, r.PathValue("queryId"), slug, token, true
}

// validLink reports whether slug belongs to the link of phase and token of q: a wrong
// slug is 404 (trino: Slug.isValid in QueuedStatementResource.getQuery and
// ExecutingStatementResource.getQuery; prestodb: Query.isSlugValid).
func (q *query) validLink(phase, slug string, token int64) bool {
	return slug != "" && q.slugFor(phase, token) == slug
}

// validLink is query.validLink for a finished query.
func (f *finishedQuery) validLink(phase, slug string, token int64) bool {
	q := query{slug: f.slug, flavour: f.flavour}
	return slug != "" && q.slugFor(phase, token) == slug
}

// tokenStatus is the status a poll of token gets when next is the token the current phase
// expects and replay tells whether the previous answer can be sent again: 0 when the poll
// may proceed. The rules are the executing resource's (trino: server/protocol/Query.java,
// getNextResult; prestodb: server/protocol/Query.java): the last token again is the same
// page, an older one is 410 Gone, one past the next is 404.
func tokenStatus(token, next int64, replay bool) int {
	switch {
	case token == next:
		return 0
	case token == next-1 && replay:
		return 0
	case token < next:
		return http.StatusGone
	default:
		return http.StatusNotFound
	}
}

func (c *Coordinator) handlePoll(w http.ResponseWriter, r *http.Request, s *serving) {
	phase, id, slug, token, ok := c.pollToken(w, r)
	if !ok {
		return
	}
	q, done := c.lookup(id)
	if q == nil {
		c.replayFinished(w, r, phase, id, slug, token, done)
		return
	}
	if !q.validLink(phase, slug, token) {
		writeNotFound(w, "Query not found")
		return
	}
	params, ok := c.readPollParams(w, r, phase)
	if !ok {
		return
	}
	if phase == phaseQueued {
		c.pollQueued(w, r, s, q, token, params)
		return
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	q.touched.Store(time.Now().UnixNano())
	defer func() { q.touched.Store(time.Now().UnixNano()) }()
	if !q.executing.Load() {
		writeNotFound(w, "Query not found")
		return
	}
	if r.Method == http.MethodHead && c.flavour == Trino {
		// Trino 476 does not run a HEAD as the GET: it is 404 "Query not found" until the
		// executing resource has answered a GET of the query, then 200 without a body, the
		// query left as it was (seen: interop/realservers TestDifferentialHeadRunsAsGet;
		// PrestoDB 0.287 runs it as the GET, as JAX-RS does for a @GET method).
		if !q.polled.Load() {
			writeNotFound(w, "Query not found")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return
	}
	c.pollExecuting(w, r, s, q, token, params)
}

// pollExecuting answers a GET of q's executing token: the last page again, the next one,
// or the refusal of a token out of turn (tokenStatus). The caller holds q.mu.
func (c *Coordinator) pollExecuting(w http.ResponseWriter, r *http.Request, s *serving, q *query, token int64, params pollParams) {
	switch tokenStatus(token, q.token, q.last != nil) {
	case 0:
		if token != q.token {
			c.writeAnswer(w, r, q.last)
			return
		}
	case http.StatusGone:
		c.refuse(w, r, http.StatusGone, fmt.Sprintf("query %s: token %d is older than the last one", q.id, token))
		return
	default:
		c.refuse(w, r, http.StatusNotFound, fmt.Sprintf("query %s: token %d is past the next one", q.id, token))
		return
	}
	c.writePage(w, r, s, q, token, params)
}

// writePage answers the GET of q's executing token, the one it expects: it waits for the
// page as the executing resource does, up to maxWait, and writes it, counting the token on.
// The caller holds q.mu.
func (c *Coordinator) writePage(w http.ResponseWriter, r *http.Request, s *serving, q *query, token int64, params pollParams) {
	// Waiting less than the abandonment limit keeps a polled query from being dropped.
	var wait time.Duration
	if until := time.Until(q.readyAt()); until > 0 {
		wait = min(until, params.maxWait, c.abandon/2)
		if q.plan.sleep > 0 {
			wait = min(wait, progressInterval)
		}
	} else {
		wait = min(q.pageDelay(c), c.abandon/2)
	}
	if wait > 0 && !q.isCanceled() {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-q.canceled:
			timer.Stop()
		case <-r.Context().Done():
			// The client gave up on this poll; the token stays current for a retry.
			timer.Stop()
			return
		case <-s.ctx.Done():
			timer.Stop()
			panic(http.ErrAbortHandler)
		}
	}
	if q.isCanceled() {
		// Canceled or abandoned while waiting: the final answer is on record.
		c.writeEnded(w, r, q)
		return
	}

	ans, final := q.nextAnswer(c.links(r), time.Now(), params.targetSize)
	q.last = ans
	q.token++
	q.tokenNow.Store(q.token)
	q.polled.Store(true)
	if final {
		c.end(q, ans, token, false)
	}
	c.writeAnswer(w, r, ans)
}

// writeEnded answers a poll of q once q has ended: its final answer as recorded, or the
// canceled answer when that record is no longer kept.
func (c *Coordinator) writeEnded(w http.ResponseWriter, r *http.Request, q *query) {
	if _, done := c.lookup(q.id); done != nil {
		c.writeAnswer(w, r, done.final)
		return
	}
	c.writeAnswer(w, r, q.canceledAnswer())
}

// waitingForSlot reports whether q was dispatched and waits for a slot (Options.MaxRunning).
func (q *query) waitingForSlot() bool { return q.ready.Load() == queuedNanos }

// waitForSlot waits up to wait for q to get its slot, or to end.
func (c *Coordinator) waitForSlot(r *http.Request, q *query, wait time.Duration) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for q.waitingForSlot() && !q.isCanceled() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-q.canceled:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// awaitWorkers keeps a query that a coordinator without workers (SetNoWorkers) would
// dispatch on the queued resource, as the servers do: each poll waits up to maxWait for a
// worker, and once Options.RequiredWorkersMaxWait has passed since the first, the query
// fails there with GENERIC_INSUFFICIENT_RESOURCES, never planned (trino:
// execution/ClusterSizeMonitor.waitForMinimumWorkers, query-manager.required-workers-max-wait;
// prestodb: the same; both seen in interop/realservers TestDifferentialNoWorkers). A worker
// that comes back in time lets it go on. The caller holds q.mu.
func (c *Coordinator) awaitWorkers(r *http.Request, q *query, maxWait time.Duration) (waiting bool, qe *queryError) {
	if q.dispatched.Load() || (!c.noWorkers.Load() && q.workersSince.IsZero()) {
		return false, nil
	}
	if q.workersSince.IsZero() {
		q.workersSince = time.Now()
	}
	deadline := q.workersSince.Add(c.requiredWorkersWait)
	end := time.NewTimer(min(maxWait, time.Until(deadline)))
	defer end.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
wait:
	for c.noWorkers.Load() {
		select {
		case <-tick.C:
		case <-end.C:
			break wait
		case <-q.canceled:
			break wait
		case <-r.Context().Done():
			break wait
		}
	}
	if !c.noWorkers.Load() {
		return false, nil
	}
	if time.Now().Before(deadline) {
		return true, nil
	}
	qe = q.newError(errInsufficientResources, "GENERIC_INSUFFICIENT_RESOURCES", fmt.Sprintf(
		"Insufficient active worker nodes. Waited %s for at least 1 workers, but only 0 workers are active", airliftDuration(c.requiredWorkersWait)))
	qe.ErrorType = "INSUFFICIENT_RESOURCES"
	c.markNeverRan(q.id)
	return false, qe
}

// airliftDuration writes d as airlift's Duration.toString does for the units it picks
// here: "5.00s", "5.00m".
func airliftDuration(d time.Duration) string {
	if d >= time.Minute {
		return fmt.Sprintf("%.2fm", d.Minutes())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// errRefuseNextGet is dispatchFailure's answer for a PrestoDB query it refuses at the next
// GET: this one answers QUEUED.
var errRefuseNextGet = &queryError{ErrorName: "refused at the next GET"}

// dispatchFailure is how the first GET of q's queued nextUri fails, nil when q may run: a
// starting coordinator, or one whose queue is full (Options.MaxQueued), accepts the POST
// like any other and fails the query when it dispatches it, never with a 503 (trino:
// dispatcher/DispatchManager.createQueryInternal fails it with SERVER_STARTING_UP "Trino
// server is still initializing" until ServerConfig's startup finishes; prestodb: the same
// codes). It is decided at dispatch,
// as the servers decide it, so a coordinator that finished starting between the POST and
// the GET runs the query. The caller holds q.mu.
func (c *Coordinator) dispatchFailure(q *query) *queryError {
	if q.dispatched.Load() {
		return nil
	}
	server := "Presto"
	if c.flavour == Trino {
		server = "Trino"
	}
	var qe *queryError
	switch {
	case q.plan.kind == failQuery && q.plan.failLocation != nil:
		// A statement that does not parse fails at dispatch, and the queued resource answers
		// the failure (trino: DispatchManager.createQueryInternal parses it with
		// QueryPreparer.prepareQuery; prestodb 0.287 the same). On both real servers a missing
		// table, found by the analysis, failed there too (interop/node TestRealServerFailure).
		// The query was refused, not for want of resources: another coordinator would fail it
		// alike, so it is not marked as never run.
		qe = q.newError(q.plan.failCode, q.plan.failName, q.plan.failure)
		qe.ErrorLocation, qe.FailureInfo.ErrorLocation = q.plan.failLocation, q.plan.failLocation
		return qe
	case c.starting.Load():
		qe = q.newError(errServerStartingUp, "SERVER_STARTING_UP", server+" server is still initializing")
	case q.refusing || c.queueFull():
		// trino: InternalResourceGroup.run refuses a query its group can neither run nor
		// queue, and DispatchManager fails it at once; prestodb 0.287: the same, but its
		// first GET mostly answers QUEUED while the dispatch runs, and the second the failure
		// (interop/realservers TestQueueFullGoesToAnotherCoordinator), as here.
		if c.flavour == Presto && !q.refusing {
			q.refusing = true
			return errRefuseNextGet
		}
		qe = q.newError(errQueryQueueFull, "QUERY_QUEUE_FULL", `Too many queued queries for "global"`)
		qe.ErrorType = "INSUFFICIENT_RESOURCES"
		c.markNeverRan(q.id)
		return qe
	default:
		return nil
	}
	qe.ErrorType = "INTERNAL_ERROR"
	c.markNeverRan(q.id)
	return qe
}

// pollQueued answers a GET of a queued nextUri. The first dispatches the query; the queued
// resource then answers QUEUED, pointing to the next queued token while Options.QueuedPolls
// lasts and then to executing token 0 (trino: QueuedStatementResource.java, getStatus and
// Query.getQueryResults: the last token or the next one, anything else 410 "Invalid token";
// the redirect to /v1/statement/executing/{id}/{slug}/0). On PrestoDB, in place of that
// redirect, the executing resource's first page itself: see below.
func (c *Coordinator) pollQueued(w http.ResponseWriter, r *http.Request, s *serving, q *query, token int64, params pollParams) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	q.touched.Store(now.UnixNano())
	if q.executing.Load() {
		// PrestoDB 0.287 no longer answers the queued resource once the executing one has
		// (seen: interop/realservers TestDifferentialTokenRules); Trino answers its last.
		if token != q.queuedTok && token != q.queuedTok+1 {
			c.refuse(w, r, http.StatusGone, "Invalid token")
			return
		}
		if c.flavour == Presto {
			// The executing resource's GET of token 0 (see below): its page again while
			// that resource has answered nothing after it, 410 once it has (seen:
			// interop/realservers TestDifferentialTokenRules).
			q.queuedTok = token
			q.queuedTokNow.Store(token)
			c.pollExecuting(w, r, s, q, 0, queuedPageParams(params))
			return
		}
		c.writeAnswer(w, r, q.queuedLast)
		return
	}
	if token != q.token && token != q.token-1 {
		c.refuse(w, r, http.StatusGone, "Invalid token")
		return
	}
	if token == q.token-1 && q.last != nil {
		c.writeAnswer(w, r, q.last)
		return
	}
	if waiting, qe := c.awaitWorkers(r, q, params.maxWait); waiting {
		ans := q.queuedAnswer(c.links(r), time.Now(), phaseQueued, token+1)
		q.last, q.token = ans, token+1
		q.tokenNow.Store(q.token)
		c.writeAnswer(w, r, ans)
		return
	} else if qe != nil {
		ans := encode(q.failedAtDispatch(c.links(r), time.Now(), qe))
		c.end(q, ans, token, false)
		c.writeAnswer(w, r, ans)
		return
	}
	if qe := c.dispatchFailure(q); qe == errRefuseNextGet {
		ans := q.queuedAnswer(c.links(r), now, phaseQueued, token+1)
		q.last, q.token = ans, token+1
		q.tokenNow.Store(q.token)
		c.writeAnswer(w, r, ans)
		return
	} else if qe != nil {
		// The queued resource answers the failure: FAILED, no nextUri (trino:
		// QueuedStatementResource.Query.createQueryResults with the dispatch's failure).
		ans := encode(q.failedAtDispatch(c.links(r), now, qe))
		c.end(q, ans, token, false)
		c.writeAnswer(w, r, ans)
		return
	}
	if q.plan.failLocation != nil {
		// A statement that does not parse fails when it is dispatched, on the queued
		// resource, never planned (trino: DispatchManager.createQueryInternal prepares it
		// and creates a failed dispatch query; seen on Trino 476 and PrestoDB 0.287:
		// interop/realservers TestDifferentialAnswersJSON).
		ans := encode(q.failedAtDispatch(c.links(r), now, q.planError()))
		c.end(q, ans, token, false)
		c.writeAnswer(w, r, ans)
		return
	}
	if !c.dispatch(q, now) {
		// Ended before it was dispatched: canceled or abandoned.
		c.writeEnded(w, r, q)
		return
	}
	// A statement waiting for a slot (Options.MaxRunning) stays on the queued resource, as
	// one in a resource group's queue does: each poll waits up to maxWait for its slot and
	// answers QUEUED with the next queued token while it has none (trino:
	// QueuedStatementResource.getStatus waits on Query.waitForDispatched; the redirect to
	// the executing resource comes once DispatchManager has dispatched it).
	if q.waitingForSlot() {
		c.waitForSlot(r, q, params.maxWait)
		now = time.Now()
		if q.isCanceled() {
			c.writeEnded(w, r, q)
			return
		}
	}
	l := c.links(r)
	var ans *answer
	if waiting := q.waitingForSlot(); waiting || q.queuedLeft > 0 {
		if !waiting {
			q.queuedLeft--
		}
		ans = q.queuedAnswer(l, now, phaseQueued, token+1)
		q.last, q.token = ans, token+1
		q.tokenNow.Store(q.token)
	} else if c.flavour == Presto {
		// PrestoDB's queued resource answers the executing resource's first page itself
		// once the query is dispatched: rows included when the query has them within
		// maxWait, its nextUri the executing link of token 1 (prestodb 0.287:
		// QueuedStatementResource.getStatus waits for Query.waitForDispatched, then
		// Query.toResponse asks ExecutingQueryResponseProvider.waitForExecutingResponse,
		// whose LocalExecutingQueryResponseProvider answers the executing
		// server/protocol/Query.waitForResults of token 0 with the request's maxWait,
		// targetResultSize and binaryResults; seen: interop/realservers
		// TestDifferentialFirstGetCarriesRows). Every later GET of a current queued link
		// is the executing resource's GET of token 0 again.
		q.executing.Store(true)
		q.last, q.token = nil, 0
		q.tokenNow.Store(0)
		q.queuedTok = token
		q.queuedTokNow.Store(token)
		c.pollExecuting(w, r, s, q, 0, queuedPageParams(params))
		return
	} else {
		ans = q.queuedAnswer(l, now, phaseExecuting, 0)
		q.queuedLast, q.queuedTok = ans, token
		q.queuedTokNow.Store(token)
		q.queuedLastNow.Store(ans)
		q.last, q.token = nil, 0
		q.tokenNow.Store(0)
		q.executing.Store(true)
	}
	c.writeAnswer(w, r, ans)
}

// queuedPageParams are the parameters PrestoDB's queued resource asks the executing
// resource's first page with: the request's maxWait up to a second, and a target result
// size of 1 MB whatever the request asks (prestodb 0.287: QueuedStatementResource's
// MAX_WAIT_TIME and TARGET_RESULT_SIZE, passed by Query.toResponse).
func queuedPageParams(p pollParams) pollParams {
	return pollParams{maxWait: min(p.maxWait, time.Second), targetSize: 1 << 20}
}

// pageDelay is how long a poll of q waits once q is ready: slow(ms), or the coordinator's.
func (q *query) pageDelay(c *Coordinator) time.Duration {
	if q.plan.hasPageDelay {
		return q.plan.pageDelay
	}
	return time.Duration(c.pageDelay.Load())
}

// replayFinished answers a poll for a query that is no longer active.
func (c *Coordinator) replayFinished(w http.ResponseWriter, r *http.Request, phase, id, slug string, token int64, done *finishedQuery) {
	switch {
	case done == nil || !done.validLink(phase, slug, token):
		writeNotFound(w, "Query not found")
	case done.anyToken || (done.phase == phase && done.token == token):
		c.writeAnswer(w, r, done.final)
	case done.flavour == Presto && phase == phaseQueued && done.phase == phaseExecuting && done.token == 0 &&
		(token == done.queuedTok || token == done.queuedTok+1):
		// PrestoDB's current queued link is the executing resource's token 0 (pollQueued),
		// which ended the query.
		c.writeAnswer(w, r, done.final)
	case done.flavour == Trino && phase == phaseQueued && done.queuedLast != nil &&
		(token == done.queuedTok || token == done.queuedTok+1):
		// Trino's queued resource answers its last answer again, also once the
		// query has ended (trino: QueuedStatementResource.Query.getQueryResults
		// takes the last token or the next while the query is known; seen:
		// interop/realservers TestDifferentialFirstGetCarriesRows).
		c.writeAnswer(w, r, done.queuedLast)
	case done.phase == phase && token > done.token:
		c.refuse(w, r, http.StatusNotFound, fmt.Sprintf("query %s has finished; token %d is past its end", id, token))
	default:
		c.refuse(w, r, http.StatusGone, fmt.Sprintf("query %s has finished; token %d is not current", id, token))
	}
}

// handleStatementHead answers HEAD /v1/statement, which clients send to check their
// credentials without starting a query (JDBC's validateConnection, trino-go-client's
// Ping): Trino answers it since 469; Presto has no such resource and answers 405.
func (c *Coordinator) handleStatementHead(w http.ResponseWriter, _ *http.Request) {
	if c.flavour != Trino {
		w.Header().Set("Allow", http.MethodPost)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleCancel is DELETE on a nextUri, queued or executing: it cancels the query, also one
// submitted and never fetched, which then never runs, and answers 204 No Content without a
// body (trino: QueuedStatementResource.cancelQuery and ExecutingStatementResource.cancelQuery;
// prestodb: the same methods). PrestoDB 0.287 differs before the first GET: it fails that
// DELETE with a NullPointerException, 500, and the query stays, never run unless fetched
// (QueuedStatementResource.Query.cancel reads querySubmissionFuture, which only the first GET
// sets; interop/realservers TestDifferentialCancel). The simulator cancels it all the same,
// deliberately: the driver's and the gateway's tests count the queries left with Running,
// which would count such a query until it is abandoned. A link whose slug does not match is
// 404.
func (c *Coordinator) handleCancel(w http.ResponseWriter, r *http.Request) {
	c.deleteLink(w, r, func(q *query) { c.end(q, q.canceledAnswer(), 0, true) })
}

// handlePartialCancel stops a query's output, as Trino does when a client has read all the
// rows it wants: the query finishes with the rows sent so far.
func (c *Coordinator) handlePartialCancel(w http.ResponseWriter, r *http.Request) {
	c.deleteLink(w, r, func(q *query) { q.partial.Store(true) })
}

// deleteLink answers a DELETE of a statement link: it applies act to the active query the
// link belongs to and answers 204; a link of a query already over is 204 too, with nothing
// to do; any other link is 404. A partialCancel link has no phase and counts as an
// executing one (pollToken).
func (c *Coordinator) deleteLink(w http.ResponseWriter, r *http.Request, act func(q *query)) {
	phase, id, slug, token, ok := c.pollToken(w, r)
	if !ok {
		return
	}
	q, done := c.lookup(id)
	switch {
	case q != nil && q.validLink(phase, slug, token):
		act(q)
	case done != nil && done.validLink(phase, slug, token):
		// Already over; the DELETE is a no-op.
	default:
		writeNotFound(w, "Query not found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleQueryCancel is DELETE /v1/query/{queryId}, how trino-go-client, the Node clients and
// kill_query cancel. Like Presto and Trino it answers 204 whether or not the query is known.
// A query submitted and not yet dispatched is unknown to the query manager, so this does
// nothing to it (trino: server/QueryResource.java cancelQuery through the DispatchManager).
func (c *Coordinator) handleQueryCancel(w http.ResponseWriter, r *http.Request) {
	if q, _ := c.lookup(r.PathValue("queryId")); q != nil && q.dispatched.Load() {
		c.end(q, q.canceledAnswer(), 0, true)
	}
	w.WriteHeader(http.StatusNoContent)
}

// Wire format of the query resource, the part of Presto's QueryInfo clients read.
type (
	queryInfo struct {
		QueryID    string         `json:"queryId"`
		State      string         `json:"state"`
		Scheduled  bool           `json:"scheduled"`
		Self       string         `json:"self"`
		Query      string         `json:"query"`
		Session    sessionInfo    `json:"session"`
		QueryStats queryInfoStats `json:"queryStats"`
		ErrorType  string         `json:"errorType,omitempty"`
		ErrorCode  *errorCode     `json:"errorCode,omitempty"`
	}
	sessionInfo struct {
		QueryID       string `json:"queryId"`
		TransactionID string `json:"transactionId,omitempty"`
		User          string `json:"user"`
		Source        string `json:"source,omitempty"`
		Catalog       string `json:"catalog,omitempty"`
		Schema        string `json:"schema,omitempty"`
	}
	queryInfoStats struct {
		CreateTime      time.Time  `json:"createTime"`
		EndTime         *time.Time `json:"endTime,omitempty"`
		ElapsedTime     string     `json:"elapsedTime"`
		OutputPositions int64      `json:"outputPositions"`
	}
	errorCode struct {
		Code int    `json:"code"`
		Name string `json:"name"`
		Type string `json:"type"`
	}
)

// handleQueryInfo is GET /v1/query/{queryId}: the query's state while it runs and for a
// while after it ended; 410 Gone for a query it does not know (text/plain on Trino, Jetty's
// HTML page on PrestoDB: interop/realservers TestDifferentialLazySubmission), which includes one submitted and not yet dispatched (trino:
// server/QueryResource.java getQueryInfo; the dispatcher creates the query at the first GET
// of its queued nextUri).
func (c *Coordinator) handleQueryInfo(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("queryId")
	q, done := c.lookup(id)
	if q != nil && !q.dispatched.Load() {
		q, done = nil, nil
	}
	if q == nil && done == nil {
		c.refuse(w, r, http.StatusGone, "Error 410 Gone: HTTP 410 Gone")
		return
	}
	now := time.Now()
	info := queryInfo{QueryID: id, Self: c.links(r).abs("/v1/query/" + id)}
	var req Request
	switch {
	case q != nil:
		req = q.req
		info.State, info.Scheduled = "QUEUED", false
		if q.polled.Load() {
			info.State, info.Scheduled = "RUNNING", true
		}
		info.QueryStats = queryInfoStats{CreateTime: q.created, ElapsedTime: formatDuration(now.Sub(q.created)), OutputPositions: q.sent.Load()}
	case done != nil:
		req = done.req
		info.State, info.Scheduled = done.final.state, true
		end := done.ended
		info.QueryStats = queryInfoStats{CreateTime: done.created, EndTime: &end, ElapsedTime: formatDuration(end.Sub(done.created)), OutputPositions: done.rows}
		if e := done.final.err; e != nil {
			info.ErrorType = e.ErrorType
			info.ErrorCode = &errorCode{Code: e.ErrorCode, Name: e.ErrorName, Type: e.ErrorType}
		}
	}
	info.Query = req.SQL
	info.Session = sessionInfo{QueryID: id, TransactionID: req.TransactionID, User: req.User, Source: req.Source, Catalog: req.Catalog, Schema: req.Schema}
	writeJSON(w, http.StatusOK, info)
}

func (c *Coordinator) handleInfo(w http.ResponseWriter, _ *http.Request) {
	type nodeVersion struct {
		Version string `json:"version"`
	}
	writeJSON(w, http.StatusOK, struct {
		NodeVersion nodeVersion `json:"nodeVersion"`
		Environment string      `json:"environment"`
		Coordinator bool        `json:"coordinator"`
		Starting    bool        `json:"starting"`
		Uptime      string      `json:"uptime"`
	}{
		NodeVersion: nodeVersion{Version: c.version},
		Environment: "sim",
		Coordinator: true,
		Starting:    c.starting.Load(),
		Uptime:      c.uptime(time.Now()),
	})
}

// handleClusterStats answers PrestoDB's GET /v1/cluster
// (presto-main ClusterStatsResource) with this coordinator's own counts; the
// worker and memory figures are fixed.
func (c *Coordinator) handleClusterStats(w http.ResponseWriter, _ *http.Request) {
	running, queued := c.Load()
	writeJSON(w, http.StatusOK, map[string]any{
		"runningQueries": running, "blockedQueries": 0, "queuedQueries": queued,
		"activeWorkers": c.activeWorkers(), "runningDrivers": running, "reservedMemory": 0.0,
		"totalInputRows": 0, "totalInputBytes": 0, "totalCpuTimeSecs": 0,
	})
}

// handleQueryManagerMBean answers Trino's GET
// /v1/jmx/mbean/trino.execution:name=QueryManager (airlift's MBeanResource
// over io.trino.execution.QueryManagerStats) with this coordinator's own
// counts, to a request that names a user; other mbeans are not simulated.
func (c *Coordinator) handleQueryManagerMBean(w http.ResponseWriter, r *http.Request) {
	const name = "trino.execution:name=QueryManager"
	if r.Header.Get("X-Trino-User") == "" && r.Header.Get("X-Trino-Original-User") == "" {
		if _, _, ok := r.BasicAuth(); !ok {
			// Trino authenticates this resource: without authentication
			// configured it still wants a user named, and answers 401 as
			// the real 476 does (server/security/InsecureAuthenticator.java).
			w.Header().Set("WWW-Authenticate", `Basic realm="Trino"`)
			w.Header().Set("Content-Type", "text/plain;charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "Basic authentication or X-Trino-Original-User or X-Trino-User must be sent")
			return
		}
	}
	type attribute struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Readable bool   `json:"readable"`
		Writable bool   `json:"writable"`
		Value    int64  `json:"value"`
	}
	if nm := "trino.metadata:name=DiscoveryNodeManager"; r.PathValue("name") == nm {
		// Trino 476's node manager (io.trino.metadata.DiscoveryNodeManager, @Managed
		// getActiveNodeCount: every active node, the coordinator included).
		writeJSON(w, http.StatusOK, map[string]any{
			"objectName": nm,
			"className":  "io.trino.metadata.DiscoveryNodeManager",
			"attributes": []attribute{
				{Name: "ActiveNodeCount", Type: "int", Readable: true, Value: 1 + c.activeWorkers()},
				{Name: "InactiveNodeCount", Type: "int", Readable: true, Value: 0},
				{Name: "ShuttingDownNodeCount", Type: "int", Readable: true, Value: 0},
			},
			"operations": []any{},
		})
		return
	}
	if r.PathValue("name") != name {
		writeError(w, http.StatusNotFound, "no such mbean: "+r.PathValue("name"))
		return
	}
	running, queued := c.Load()
	writeJSON(w, http.StatusOK, map[string]any{
		"objectName": name,
		"className":  "io.trino.execution.QueryManagerStats",
		"attributes": []attribute{
			{Name: "QueuedQueries", Type: "long", Readable: true, Value: queued},
			{Name: "RunningQueries", Type: "long", Readable: true, Value: running},
		},
		"operations": []any{},
	})
}

func (c *Coordinator) handleState(w http.ResponseWriter, _ *http.Request) {
	state := "ACTIVE"
	if c.starting.Load() {
		state = "INACTIVE"
	}
	if s := c.nodeState.Load(); s != nil {
		state = *s
	}
	writeJSON(w, http.StatusOK, state)
}

// gzipWriters keeps compressors between answers: each costs about a megabyte to set up.
var gzipWriters = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // a valid level never fails
	return gz
}}

// writeAnswer sends a statement answer with the headers its statement sets, compressed
// when the client accepts gzip.
func (c *Coordinator) writeAnswer(w http.ResponseWriter, r *http.Request, a *answer) {
	h := w.Header()
	for name, values := range a.header {
		h[name] = values
	}
	h.Set("Content-Type", "application/json")
	if !c.gzipFor(r) {
		w.WriteHeader(http.StatusOK)
		_ = a.writeTo(w) // a failed write means the client is gone; nothing to do
		return
	}
	h.Set("Content-Encoding", "gzip")
	h.Add("Vary", "Accept-Encoding")
	w.WriteHeader(http.StatusOK)
	gz := gzipWriters.Get().(*gzip.Writer)
	gz.Reset(w)
	if a.writeTo(gz) == nil {
		_ = gz.Close()
	}
	gz.Reset(io.Discard) // drop the reference to w before pooling
	gzipWriters.Put(gz)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeNotFound answers 404 with a text/plain body, as the servers' JAX-RS NotFoundException
// does (trino: ExecutingStatementResource.getQuery; prestodb: the same).
func writeNotFound(w http.ResponseWriter, message string) { writeText(w, http.StatusNotFound, message) }

func writeText(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, message+"\n")
}

// writeError sends a JSON error document for requests that are not query answers.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, struct {
		Error  string `json:"error"`
		Status int    `json:"status"`
	}{message, status})
}
