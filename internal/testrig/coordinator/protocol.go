package coordinator

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxPollWait caps how long one poll waits for a statement's latency, like Presto's maxWait.
const maxPollWait = time.Second

// maxStatementBytes bounds the SQL text a submission may carry.
const maxStatementBytes = 16 << 20

// routes returns the HTTP handler for one listen generation.
func (c *Coordinator) routes(s *serving) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/statement", func(w http.ResponseWriter, r *http.Request) {
		c.handleSubmit(w, r, "", s)
	})
	mux.HandleFunc("PUT /v1/statement/{queryId}", func(w http.ResponseWriter, r *http.Request) {
		c.handleSubmit(w, r, r.PathValue("queryId"), s)
	})
	mux.HandleFunc("GET /v1/statement/{phase}/{queryId}/{slug}/{token}", func(w http.ResponseWriter, r *http.Request) {
		c.handlePoll(w, r, s)
	})
	mux.HandleFunc("DELETE /v1/statement/{phase}/{queryId}/{slug}/{token}", c.handleCancel)
	mux.HandleFunc("GET /v1/info", c.handleInfo)
	mux.HandleFunc("GET /v1/info/state", c.handleState)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such resource: "+r.Method+" "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			// The node is going down: break the connection rather than answer.
			panic(http.ErrAbortHandler)
		}
		defer s.inFlight.Done()
		mux.ServeHTTP(w, r)
	})
}

// header returns a session header sent with either the X-Presto- or the X-Trino- prefix,
// and whether the Trino prefix was used.
func header(r *http.Request, name string) (string, bool) {
	if v := r.Header.Get("X-Presto-" + name); v != "" {
		return v, false
	}
	v := r.Header.Get("X-Trino-" + name)
	return v, v != ""
}

// headerValues is header for headers that may be repeated.
func headerValues(r *http.Request, name string) ([]string, bool) {
	if v := r.Header.Values("X-Presto-" + name); len(v) > 0 {
		return v, false
	}
	v := r.Header.Values("X-Trino-" + name)
	return v, len(v) > 0
}

// parseRequest reads the session headers of a submission.
func parseRequest(r *http.Request, sql string, now time.Time) Request {
	req := Request{SQL: sql, Time: now}
	var trino [8]bool
	req.User, trino[0] = header(r, "User")
	req.Catalog, trino[1] = header(r, "Catalog")
	req.Schema, trino[2] = header(r, "Schema")
	req.Source, trino[3] = header(r, "Source")
	req.ClientInfo, trino[4] = header(r, "Client-Info")
	req.TimeZone, trino[5] = header(r, "Time-Zone")
	var sessions, tags []string
	sessions, trino[6] = headerValues(r, "Session")
	tags, trino[7] = headerValues(r, "Client-Tags")
	for _, t := range trino {
		req.Trino = req.Trino || t
	}
	for _, line := range sessions {
		for pair := range strings.SplitSeq(line, ",") {
			key, value, _ := strings.Cut(strings.TrimSpace(pair), "=")
			if key == "" {
				continue
			}
			if decoded, err := url.QueryUnescape(value); err == nil {
				value = decoded
			}
			if req.SessionProperties == nil {
				req.SessionProperties = make(map[string]string)
			}
			req.SessionProperties[key] = value
		}
	}
	for _, line := range tags {
		for tag := range strings.SplitSeq(line, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				req.ClientTags = append(req.ClientTags, tag)
			}
		}
	}
	return req
}

// baseURL is the scheme and authority the client used, so nextUri links reach this node
// through whatever address the client dialled.
func (c *Coordinator) baseURL(r *http.Request) string {
	host := r.Host
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); host == "" && ok {
		host = local.String()
	}
	return "http://" + host
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
	req := parseRequest(r, string(body), now)
	switch {
	case c.starting.Load():
		req.Rejected = true
		c.record(req)
		writeError(w, http.StatusServiceUnavailable, "Presto server is still initializing")
		return
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
	q := &query{
		id:          id,
		slug:        "x" + strings.ToLower(rand.Text()),
		coordinator: c.name,
		batchRows:   c.batchRows,
		req:         req,
		plan:        planStatement(req.SQL),
		created:     now,
		readyAt:     now.Add(time.Duration(c.latency.Load())),
		canceled:    make(chan struct{}),
		token:       1,
	}
	q.touched.Store(now.UnixNano())
	switch q.plan.kind {
	case describeRequest:
		q.columns = describeColumns
	case generateRows:
		q.columns = rowsColumns
	}
	if !c.admit(q, now) {
		req.Rejected = true
		req.QueryID = ""
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
	writeAnswer(w, q.queuedAnswer(c.baseURL(r), now))
}

func (c *Coordinator) handlePoll(w http.ResponseWriter, r *http.Request, s *serving) {
	id, slug := r.PathValue("queryId"), r.PathValue("slug")
	token, err := strconv.ParseInt(r.PathValue("token"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad token "+strconv.Quote(r.PathValue("token")))
		return
	}
	q, done := c.lookup(id)
	if q == nil {
		c.replayFinished(w, id, slug, token, done)
		return
	}
	if q.slug != slug {
		writeError(w, http.StatusNotFound, "query "+id+" not found")
		return
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	q.touched.Store(time.Now().UnixNano())
	defer func() { q.touched.Store(time.Now().UnixNano()) }()
	switch {
	case token == q.token-1 && q.last != nil:
		writeAnswer(w, q.last)
		return
	case token != q.token:
		writeError(w, http.StatusGone, fmt.Sprintf("query %s: token %d is not current (expected %d)", id, token, q.token))
		return
	}

	if wait := time.Until(q.readyAt); wait > 0 && !q.isCanceled() {
		// Waiting less than the abandonment limit keeps a polled query from being dropped.
		timer := time.NewTimer(min(wait, maxPollWait, c.abandon/2))
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
		_, done := c.lookup(id)
		if done != nil {
			writeAnswer(w, done.final)
		} else {
			writeAnswer(w, q.canceledAnswer())
		}
		return
	}

	ans, final := q.nextAnswer(c.baseURL(r), time.Now())
	q.last = ans
	q.token++
	if final {
		c.end(q, ans, token, false)
	}
	writeAnswer(w, ans)
}

// replayFinished answers a poll for a query that is no longer active.
func (c *Coordinator) replayFinished(w http.ResponseWriter, id, slug string, token int64, done *finishedQuery) {
	switch {
	case done == nil || done.slug != slug:
		writeError(w, http.StatusNotFound, "query "+id+" not found")
	case done.anyToken || done.token == token:
		writeAnswer(w, done.final)
	default:
		writeError(w, http.StatusGone, fmt.Sprintf("query %s has finished; token %d is not current", id, token))
	}
}

func (c *Coordinator) handleCancel(w http.ResponseWriter, r *http.Request) {
	id, slug := r.PathValue("queryId"), r.PathValue("slug")
	q, done := c.lookup(id)
	switch {
	case q != nil && q.slug == slug:
		c.end(q, q.canceledAnswer(), 0, true)
	case done != nil && done.slug == slug:
		// Already over; cancelling is a no-op, as on Presto.
	default:
		writeError(w, http.StatusNotFound, "query "+id+" not found")
		return
	}
	// Presto answers 204; presto-go-client treats every status but 200 as a failed cancel,
	// so answer 200 with the canceled state and no error.
	writeJSON(w, http.StatusOK, queryResults{ID: id, Warnings: []struct{}{}, Stats: stats{State: "CANCELED"}})
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

func (c *Coordinator) handleState(w http.ResponseWriter, _ *http.Request) {
	state := "ACTIVE"
	if c.starting.Load() {
		state = "INACTIVE"
	}
	writeJSON(w, http.StatusOK, state)
}

func writeAnswer(w http.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a) // a failed write means the client is gone; nothing to do
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

// writeError sends a JSON error document for requests that are not query answers.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, struct {
		Error  string `json:"error"`
		Status int    `json:"status"`
	}{message, status})
}
