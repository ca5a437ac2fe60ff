package coordinator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	failMarker = regexp.MustCompile(`(?i)\bfail\s*\(\s*'((?:[^']|'')*)'\s*\)`)
	rowsMarker = regexp.MustCompile(`(?i)\brows\s*\(\s*(\d+)\s*\)`)
)

// Presto's standard error codes for the failures the simulator produces.
const (
	errGenericUser  = 0
	errAbandoned    = 2
	errUserCanceled = 3
)

// statementKind says what a statement produces.
type statementKind int

const (
	describeRequest statementKind = iota // one row describing the request
	generateRows                         // rows(N)
	failQuery                            // fail('msg')
)

// plan is what the simulator decided to do with a statement.
type plan struct {
	kind    statementKind
	rows    int64
	failure string
}

// planStatement reads the markers documented in the package comment.
func planStatement(sql string) plan {
	if m := failMarker.FindStringSubmatch(sql); m != nil {
		return plan{kind: failQuery, failure: strings.ReplaceAll(m[1], "''", "'")}
	}
	if m := rowsMarker.FindStringSubmatch(sql); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return plan{kind: failQuery, failure: fmt.Sprintf("rows(%s): row count out of range", m[1])}
		}
		return plan{kind: generateRows, rows: n}
	}
	return plan{kind: describeRequest}
}

// query is a statement the coordinator accepted and has not finished.
type query struct {
	id          string
	slug        string // guards the nextUri links against guessing and cross-talk
	coordinator string // name reported in describe rows
	batchRows   int
	req         Request
	plan        plan
	created     time.Time
	readyAt     time.Time
	columns     []column
	touched     atomic.Int64 // unix nanos of the last submission or poll, for abandonment
	sent        atomic.Int64 // rows sent so far; written by polls, read by cancel and sweep too

	canceled   chan struct{}
	cancelOnce sync.Once

	// mu serialises polls; the fields below are guarded by it.
	mu    sync.Mutex
	token int64  // token the next poll must carry
	last  answer // answer to the previous token, replayed on a retried poll
}

func (q *query) cancel() { q.cancelOnce.Do(func() { close(q.canceled) }) }

func (q *query) isCanceled() bool {
	select {
	case <-q.canceled:
		return true
	default:
		return false
	}
}

// answer is an encoded QueryResults document.
type answer []byte

// finishedQuery is what remains of a query after it ended: its final answer for replay.
type finishedQuery struct {
	slug     string
	final    answer
	token    int64
	anyToken bool // canceled or abandoned: every poll gets the final answer
}

// Wire format of QueryResults, as presto-go-client decodes it.
type (
	queryResults struct {
		ID       string      `json:"id"`
		InfoURI  string      `json:"infoUri"`
		NextURI  string      `json:"nextUri,omitempty"`
		Columns  []column    `json:"columns,omitempty"`
		Data     any         `json:"data,omitempty"`
		Stats    stats       `json:"stats"`
		Error    *queryError `json:"error,omitempty"`
		Warnings []struct{}  `json:"warnings"`
	}
	column struct {
		Name          string        `json:"name"`
		Type          string        `json:"type"`
		TypeSignature typeSignature `json:"typeSignature"`
	}
	typeSignature struct {
		RawType   string     `json:"rawType"`
		Arguments []struct{} `json:"arguments"`
	}
	stats struct {
		State             string `json:"state"`
		Queued            bool   `json:"queued"`
		Scheduled         bool   `json:"scheduled"`
		Nodes             int    `json:"nodes"`
		TotalSplits       int    `json:"totalSplits"`
		CompletedSplits   int    `json:"completedSplits"`
		WallTimeMillis    int64  `json:"wallTimeMillis"`
		QueuedTimeMillis  int64  `json:"queuedTimeMillis"`
		ElapsedTimeMillis int64  `json:"elapsedTimeMillis"`
		ProcessedRows     int64  `json:"processedRows"`
	}
	queryError struct {
		Message     string      `json:"message"`
		ErrorCode   int         `json:"errorCode"`
		ErrorName   string      `json:"errorName"`
		ErrorType   string      `json:"errorType"`
		Retriable   bool        `json:"retriable"`
		FailureInfo failureInfo `json:"failureInfo"`
	}
	failureInfo struct {
		Type       string     `json:"type"`
		Message    string     `json:"message"`
		Suppressed []struct{} `json:"suppressed"`
		Stack      []string   `json:"stack"`
	}
)

func varchar(name string) column {
	return column{Name: name, Type: "varchar", TypeSignature: typeSignature{RawType: "varchar", Arguments: []struct{}{}}}
}

var (
	describeColumns = []column{
		varchar("coordinator"), varchar("user"), varchar("catalog"),
		varchar("schema"), varchar("source"), varchar("query"),
	}
	rowsColumns = []column{{Name: "n", Type: "bigint", TypeSignature: typeSignature{RawType: "bigint", Arguments: []struct{}{}}}}
)

func newQueryError(code int, name, message string) *queryError {
	return &queryError{
		Message:   message,
		ErrorCode: code,
		ErrorName: name,
		ErrorType: "USER_ERROR",
		FailureInfo: failureInfo{
			Type:       "com.facebook.presto.spi.PrestoException",
			Message:    message,
			Suppressed: []struct{}{},
			Stack:      []string{},
		},
	}
}

// results returns a QueryResults skeleton for q in the given state.
func (q *query) results(state string, now time.Time) queryResults {
	elapsed := now.Sub(q.created).Milliseconds()
	r := queryResults{
		ID:       q.id,
		InfoURI:  "/ui/query.html?" + q.id,
		Warnings: []struct{}{},
		Stats: stats{
			State:             state,
			Queued:            state == "QUEUED",
			Scheduled:         state != "QUEUED",
			Nodes:             1,
			WallTimeMillis:    elapsed,
			ElapsedTimeMillis: elapsed,
			ProcessedRows:     q.sent.Load(),
		},
	}
	if state != "QUEUED" {
		r.Columns = q.columns
	}
	return r
}

// link returns the absolute URI of the poll that carries token.
func (q *query) link(base, phase string, token int64) string {
	return base + "/v1/statement/" + phase + "/" + q.id + "/" + q.slug + "/" + strconv.FormatInt(token, 10)
}

// queuedAnswer is the answer to the submission.
func (q *query) queuedAnswer(base string, now time.Time) answer {
	r := q.results("QUEUED", now)
	r.InfoURI = base + r.InfoURI
	r.NextURI = q.link(base, "queued", q.token)
	return encode(r)
}

// nextAnswer builds the answer to the poll carrying q.token and reports whether it is final.
// The caller holds q.mu.
func (q *query) nextAnswer(base string, now time.Time) (answer, bool) {
	next := q.link(base, "executing", q.token+1)
	if now.Before(q.readyAt) {
		r := q.results("RUNNING", now)
		r.InfoURI = base + r.InfoURI
		r.NextURI = next
		return encode(r), false
	}
	switch q.plan.kind {
	case failQuery:
		return q.failedAnswer(base, now, newQueryError(errGenericUser, "GENERIC_USER_ERROR", q.plan.failure)), true
	case generateRows:
		sent := q.sent.Load()
		count := min(q.plan.rows-sent, int64(q.batchRows))
		batch := make([][1]int64, count)
		for i := range batch {
			batch[i][0] = sent + int64(i) + 1
		}
		q.sent.Store(sent + count)
		final := sent+count >= q.plan.rows
		state := "RUNNING"
		if final {
			state = "FINISHED"
		}
		r := q.results(state, now)
		r.InfoURI = base + r.InfoURI
		if count > 0 {
			r.Data = batch
		}
		if !final {
			r.NextURI = next
		}
		return encode(r), final
	default:
		q.sent.Store(1)
		r := q.results("FINISHED", now)
		r.InfoURI = base + r.InfoURI
		req := q.req
		r.Data = [][]string{{q.coordinator, req.User, req.Catalog, req.Schema, req.Source, req.SQL}}
		return encode(r), true
	}
}

// failedAnswer is a final FAILED answer carrying qe.
func (q *query) failedAnswer(base string, now time.Time, qe *queryError) answer {
	r := q.results("FAILED", now)
	r.InfoURI = base + r.InfoURI
	r.Error = qe
	return encode(r)
}

func (q *query) canceledAnswer() answer {
	return q.failedAnswer("", time.Now(), newQueryError(errUserCanceled, "USER_CANCELED", "Query was canceled"))
}

func (q *query) abandonedAnswer() answer {
	return q.failedAnswer("", time.Now(), newQueryError(errAbandoned, "ABANDONED_QUERY", "Query "+q.id+" was abandoned by the client"))
}

// encode marshals r. Only strings, numbers and slices of them are encoded, so it does not
// fail in practice; should it, the client gets a FAILED answer instead of a broken one.
func encode(r queryResults) answer {
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(queryResults{
			ID:       r.ID,
			Warnings: []struct{}{},
			Stats:    stats{State: "FAILED"},
			Error:    &queryError{Message: "encode results: " + err.Error(), ErrorName: "GENERIC_INTERNAL_ERROR", ErrorType: "INTERNAL_ERROR"},
		})
	}
	return b
}
