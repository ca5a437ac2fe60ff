package coordinator

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/wire"
)

var (
	failMarker    = regexp.MustCompile(`(?i)\bfail\s*\(\s*'((?:[^']|'')*)'\s*\)`)
	rowsMarker    = regexp.MustCompile(`(?i)\brows\s*\(\s*(\d+)\s*\)`)
	bigrowsMarker = regexp.MustCompile(`(?i)\bbigrows\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)`)
	sleepMarker   = regexp.MustCompile(`(?i)\bsleep\s*\(\s*(\d+)\s*\)`)
	slowMarker    = regexp.MustCompile(`(?i)\bslow\s*\(\s*(\d+)\s*\)`)
	tstzMarker    = regexp.MustCompile(`(?i)\btstz\s*\(\s*'([A-Za-z0-9_/+:-]+)'\s*\)`)
	warnMarker    = regexp.MustCompile(`(?i)\bwarn\s*\(\s*'((?:[^']|'')*)'\s*\)`)
	syntaxMarker  = regexp.MustCompile(`(?i)\bsyntax\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)`)
	// dmlStatement is an INSERT, CREATE TABLE ... AS, DELETE, UPDATE or MERGE: the
	// statements whose answers carry updateType and an updateCount.
	dmlStatement = regexp.MustCompile(`(?is)^\s*(INSERT|DELETE|UPDATE|MERGE|CREATE\s+TABLE\b.*?\bAS\b)`)
)

// Presto's standard error codes for the failures the simulator produces; the internal
// ones as trino: spi/StandardErrorCode.java numbers them (prestodb's agree).
const (
	errServerStartingUp      = 65548
	errInsufficientResources = 131072 // GENERIC_INSUFFICIENT_RESOURCES
	errQueryQueueFull        = 131074 // INSUFFICIENT_RESOURCES

	errGenericUser        = 0
	errSyntax             = 1
	errAbandoned          = 2
	errUserCanceled       = 3
	errNotFound           = 5
	errNotSupported       = 13
	errUnknownTransaction = 20
	errNotInTransaction   = 21
	errTransactionAborted = 22
	errIncompatibleClient = 27
)

// Limits of the markers, so a typo cannot ask for an answer no machine can build.
const (
	maxRowBytes   = 256 << 20 // bigrows(N, BYTES): BYTES per row
	maxMarkerWait = time.Hour // sleep(ms) and slow(ms)
)

// What sleep(ms) reports while it runs: progress grows evenly towards these totals.
const (
	progressSplits   = 100
	progressRunning  = 8
	progressRows     = 1_000_000
	progressRowBytes = 100
)

// statementKind says what a statement produces.
type statementKind int

const (
	describeRequest  statementKind = iota // one row describing the request
	generateRows                          // rows(N) or bigrows(N, BYTES)
	failQuery                             // fail('msg') or a refused session statement
	sessionStatement                      // SET SESSION, USE, PREPARE, START TRANSACTION, ...
	tstzValues                            // tstz('zone'): timestamp with time zone values
	dataChange                            // INSERT, CREATE TABLE AS, DELETE, ...: an update count
)

// warnTooManyStages is the warning code warn('message') reports, the first of
// spi/StandardWarningCode.java on both servers.
const (
	warnTooManyStages     = 1
	warnTooManyStagesName = "TOO_MANY_STAGES"
)

// plan is what the simulator decided to do with a statement.
type plan struct {
	kind  statementKind
	sql   string // the statement that runs: for EXECUTE, the prepared text with its parameters
	rows  int64
	width int    // bigrows: bytes of the string column; 0 for rows(N)
	zone  string // tstz('zone'): the zone the values are written in

	failCode     int
	failName     string
	failure      string
	failLocation *errorLocation // syntax(line, column)

	warning string // warn('message'): the message of a warning on every answer

	sleep        time.Duration // sleep(ms): extra running time, with progress in the stats
	pageDelay    time.Duration // slow(ms): wait before each page once ready
	hasPageDelay bool

	// Session statements: the result of the statement and the response headers (named
	// without their X-Presto-/X-Trino- prefix) that carry it back to the client.
	updateType string
	header     http.Header
	// Transaction bookkeeping done when the statement is admitted.
	beginTxn, endTxn string
}

func failPlan(code int, name, message string) plan {
	return plan{kind: failQuery, failCode: code, failName: name, failure: message}
}

// planMarkers reads the markers documented in the package comment.
func planMarkers(sql string) plan {
	p := plan{kind: describeRequest, sql: sql}
	// A cheap look for each marker's name first: statements can be megabytes long (a
	// prepared statement header allows 2 MB), and most hold no marker at all.
	lower := strings.ToLower(sql)
	has := func(name string) bool { return strings.Contains(lower, name) }
	if m := dmlStatement.FindStringSubmatch(sql); m != nil {
		p.kind, p.updateType = dataChange, strings.ToUpper(strings.Join(strings.Fields(m[1]), " "))
		if strings.HasPrefix(p.updateType, "CREATE TABLE") {
			p.updateType = "CREATE TABLE"
		}
	}
	if !has("sleep") && !has("slow") && !has("fail") && !has("rows") && !has("tstz") && !has("warn") && !has("syntax") {
		return p
	}
	if m := warnMarker.FindStringSubmatch(sql); m != nil {
		p.warning = strings.ReplaceAll(m[1], "''", "'")
	}
	if m := sleepMarker.FindStringSubmatch(sql); m != nil {
		d, ok := markerMillis(m[1])
		if !ok {
			return failPlan(errGenericUser, "GENERIC_USER_ERROR", fmt.Sprintf("sleep(%s): longer than %v", m[1], maxMarkerWait))
		}
		p.sleep = d
	}
	if m := slowMarker.FindStringSubmatch(sql); m != nil {
		d, ok := markerMillis(m[1])
		if !ok {
			return failPlan(errGenericUser, "GENERIC_USER_ERROR", fmt.Sprintf("slow(%s): longer than %v", m[1], maxMarkerWait))
		}
		p.pageDelay, p.hasPageDelay = d, true
	}
	if m := syntaxMarker.FindStringSubmatch(sql); m != nil {
		line, err1 := strconv.Atoi(m[1])
		col, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || line < 1 || col < 1 {
			return failPlan(errGenericUser, "GENERIC_USER_ERROR", fmt.Sprintf("syntax(%s, %s): out of range", m[1], m[2]))
		}
		// As the parser reports it (trino: sql/parser/ErrorHandler and
		// ParsingException: "line L:C: message", the location in the error).
		f := failPlan(errSyntax, "SYNTAX_ERROR", fmt.Sprintf("line %d:%d: mismatched input 'syntax'. Expecting: <query>", line, col))
		f.failLocation = &errorLocation{LineNumber: line, ColumnNumber: col}
		f.warning = p.warning
		return f
	}
	if m := failMarker.FindStringSubmatch(sql); m != nil {
		f := failPlan(errGenericUser, "GENERIC_USER_ERROR", strings.ReplaceAll(m[1], "''", "'"))
		f.sleep, f.pageDelay, f.hasPageDelay = p.sleep, p.pageDelay, p.hasPageDelay
		f.warning = p.warning
		return f
	}
	if m := tstzMarker.FindStringSubmatch(sql); m != nil {
		p.kind, p.zone = tstzValues, m[1]
		return p
	}
	if m := bigrowsMarker.FindStringSubmatch(sql); m != nil {
		n, err1 := strconv.ParseInt(m[1], 10, 64)
		w, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || w > maxRowBytes {
			return failPlan(errGenericUser, "GENERIC_USER_ERROR", fmt.Sprintf("bigrows(%s, %s): out of range (at most %d bytes a row)", m[1], m[2], maxRowBytes))
		}
		if p.kind != dataChange {
			p.kind = generateRows
		}
		p.rows, p.width = n, w
		return p
	}
	if m := rowsMarker.FindStringSubmatch(sql); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return failPlan(errGenericUser, "GENERIC_USER_ERROR", fmt.Sprintf("rows(%s): row count out of range", m[1]))
		}
		if p.kind != dataChange {
			p.kind = generateRows
		}
		p.rows = n
	}
	return p
}

func markerMillis(s string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms > maxMarkerWait.Milliseconds() {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// query is a statement the coordinator accepted and has not finished.
type query struct {
	id          string
	slug        string // guards the nextUri links against guessing and cross-talk; see slugFor
	coordinator string // name reported in describe rows
	flavour     Flavour
	batchRows   int
	req         Request
	plan        plan
	created     time.Time
	ready       atomic.Int64  // unix nanos when the results are final; queuedNanos while it waits for a slot
	runFor      time.Duration // how long it runs once it has a slot
	started     bool          // it holds a slot (Options.MaxRunning); guarded by Coordinator.mu
	// refusing: its queue was full at its first GET, which a PrestoDB coordinator answers
	// QUEUED before the refusal; guarded by mu.
	refusing bool
	// workersSince is when the first poll found no workers (SetNoWorkers); zero while it
	// has not waited for them. Guarded by mu.
	workersSince time.Time
	columns      []column
	touched      atomic.Int64 // unix nanos of the last submission or poll, for abandonment
	sent         atomic.Int64 // rows sent so far; written by polls, read by cancel and sweep too
	polled       atomic.Bool  // an executing poll was answered: the query is no longer QUEUED
	dispatched   atomic.Bool  // its queued nextUri was fetched once: the query exists for /v1/query
	executing    atomic.Bool  // its links moved to /v1/statement/executing
	tokenNow     atomic.Int64 // token of the current phase, readable by HEAD without a poll's lock
	queuedTokNow atomic.Int64 // queuedTok, readable by Coordinator.end without a poll's lock
	// queuedLastNow is queuedLast, readable by Coordinator.end without a poll's lock.
	queuedLastNow atomic.Pointer[answer]
	partial       atomic.Bool // partialCancelUri was deleted: no more rows are produced
	spool         *spooler    // set when the rows go out as spooled segments

	canceled   chan struct{}
	cancelOnce sync.Once

	// mu serialises polls; the fields below are guarded by it.
	mu         sync.Mutex
	token      int64   // token the next poll of the current phase must carry
	last       *answer // answer to the previous token, replayed on a retried poll
	queuedLeft int     // QUEUED answers the queued phase still gives (Options.QueuedPolls)
	queuedLast *answer // once executing: the last queued answer, for a retried queued poll
	queuedTok  int64   // the token queuedLast answered
}

// Phases of a query's links (trino: dispatcher/QueuedStatementResource.java hands out
// /v1/statement/queued/..., server/protocol/ExecutingStatementResource.java
// /v1/statement/executing/...; prestodb: the classes of the same names in
// presto-main/.../server/protocol/).
const (
	phaseQueued    = "queued"
	phaseExecuting = "executing"
)

// slugFor is the slug of the link that carries token in phase. Trino makes a new one per
// token and phase, "y" and the hex of an HMAC-SHA1 of both under the query's secret, 41
// characters (trino: server/protocol/Slug.java, makeSlug and isValid); PrestoDB keeps one
// slug per query, "x" and a random UUID's 32 hex digits, and puts it in the query string
// (prestodb: QueuedStatementResource.java, Query.slug). Both shapes seen on Trino 476 and
// PrestoDB 0.287 (interop/realservers TestDifferentialTwoPhasesAndSlugs).
func (q *query) slugFor(phase string, token int64) string {
	if q.flavour != Trino {
		return q.slug
	}
	return slugMAC(q.slug, phase, token)
}

func slugMAC(secret, phase string, token int64) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(phase))
	m.Write([]byte{0})
	m.Write(strconv.AppendInt(nil, token, 10))
	return "y" + hex.EncodeToString(m.Sum(nil))
}

func (q *query) cancel() { q.cancelOnce.Do(func() { close(q.canceled) }) }

// queuedNanos is the ready time of a query waiting for a slot: never, until
// it gets one.
const queuedNanos = math.MaxInt64

// readyAt returns when the query's results are final; far in the future
// while it waits in the coordinator's queue.
func (q *query) readyAt() time.Time { return time.Unix(0, q.ready.Load()) }

func (q *query) isCanceled() bool {
	select {
	case <-q.canceled:
		return true
	default:
		return false
	}
}

// answer is an encoded QueryResults document. Pages of generated rows are not held in
// memory: the document is kept as the parts before and after its data array, and the rows
// are written while the answer is sent, so a replayed or a 160 MB page costs nothing to keep.
type answer struct {
	head   []byte // the whole document, or the part before the data array
	tail   []byte // the part after the data array; only with rows
	rows   *page
	header http.Header // response headers, already prefixed for the flavour
	state  string
	err    *queryError
}

// page is a run of generated rows: first..first+count-1, with a string of width bytes each
// for bigrows.
type page struct {
	first, count int64
	width        int
}

// writeTo sends the whole document.
func (a *answer) writeTo(w io.Writer) error {
	if a.rows == nil {
		_, err := w.Write(a.head)
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	_, _ = bw.Write(a.head)
	a.rows.writeTo(bw)
	_, _ = bw.Write(a.tail)
	return bw.Flush() // bufio keeps the first write error and reports it here
}

// writeTo writes the rows as a JSON array, the way json.Marshal would.
func (p *page) writeTo(w *bufio.Writer) {
	var num [20]byte
	_ = w.WriteByte('[')
	for i := range p.count {
		n := p.first + i
		if i > 0 {
			_ = w.WriteByte(',')
		}
		_ = w.WriteByte('[')
		_, _ = w.Write(strconv.AppendInt(num[:0], n, 10))
		if p.width > 0 {
			_, _ = w.WriteString(`,"`)
			fill := fillFor(n)
			for left := p.width; left > 0; {
				k := min(left, len(fill))
				_, _ = w.Write(fill[:k])
				left -= k
			}
			_ = w.WriteByte('"')
		}
		_ = w.WriteByte(']')
		if _, err := w.Write(nil); err != nil {
			return // the client is gone: bufio keeps the error, so stop producing rows
		}
	}
	_ = w.WriteByte(']')
}

// BigrowsValue returns the string that bigrows(N, BYTES) puts in row n: BYTES copies of
// one lower-case letter, 'a' for row 1, 'b' for row 2, and so on round the alphabet, so a
// test can check a large page arrived whole and in order without keeping a copy.
func BigrowsValue(n int64, width int) string {
	return strings.Repeat(string(rune('a'+(n-1)%26)), width)
}

var (
	fillOnce sync.Once
	fills    [26][]byte
)

func fillFor(n int64) []byte {
	fillOnce.Do(func() {
		for i := range fills {
			fills[i] = bytes.Repeat([]byte{byte('a' + i)}, 16<<10)
		}
	})
	return fills[(n-1)%26]
}

// finishedQuery is what remains of a query after it ended: its final answer for replay and
// what GET /v1/query/{queryId} reports.
type finishedQuery struct {
	slug     string // the query's slug secret; see query.slugFor
	flavour  Flavour
	phase    string // the phase whose token the final answer belongs to
	final    *answer
	token    int64
	anyToken bool // canceled or abandoned: every poll gets the final answer
	// queuedTok is PrestoDB's last queued token once the executing resource has answered:
	// the queued link that answers the executing resource's token 0 (pollQueued).
	queuedTok int64
	// queuedLast is Trino's last queued answer, the redirect to the executing
	// resource, which its queued link answers again after the query ended.
	queuedLast *answer
	req        Request
	created    time.Time
	ended      time.Time
	rows       int64
}

// Wire format of QueryResults, with the fields in the order Presto writes them.
type (
	queryResults struct {
		ID               string    `json:"id"`
		InfoURI          string    `json:"infoUri"`
		PartialCancelURI string    `json:"partialCancelUri,omitempty"`
		NextURI          string    `json:"nextUri,omitempty"`
		Columns          *[]column `json:"columns,omitempty"` // a pointer, as Trino sends an empty list

		Data        any         `json:"data,omitempty"`
		Stats       stats       `json:"stats"`
		Error       *queryError `json:"error,omitempty"`
		Warnings    []warning   `json:"warnings"`
		UpdateType  string      `json:"updateType,omitempty"`
		UpdateCount *int64      `json:"updateCount,omitempty"`
		rows        *page       // streamed in place of Data
	}
	// warning is a client Warning (trino: client/Warning.java, a warningCode of code and
	// name, and a message; prestodb: presto-client's PrestoWarning).
	warning struct {
		WarningCode warningCode `json:"warningCode"`
		Message     string      `json:"message"`
	}
	warningCode struct {
		Code int    `json:"code"`
		Name string `json:"name"`
	}
	column struct {
		Name          string        `json:"name"`
		Type          string        `json:"type"`
		TypeSignature typeSignature `json:"typeSignature"`
	}
	// typeSignature is a column's ClientTypeSignature: the type's base
	// name, its parameters as arguments (trino: client/trino-client
	// io/trino/client/ClientTypeSignature.java and
	// ClientTypeSignatureParameter.java), which clients that decode by
	// type, as trino-go-client since v1.5.0 does, read instead of the
	// type's name.
	typeSignature struct {
		RawType   string         `json:"rawType"`
		Arguments []typeArgument `json:"arguments"`
	}
	// typeArgument is a ClientTypeSignatureParameter: kind LONG for a
	// number such as a precision.
	typeArgument struct {
		Kind  string `json:"kind"`
		Value any    `json:"value"`
	}
	// stats is a StatementStats: the protocol's, as clients read it, and the root stage
	// (trino: client/StatementStats.java, rootStage a StageStats; prestodb: the same).
	stats struct {
		wire.QueryStats
		*trinoStats
		*prestoStats
		SpilledBytes int64       `json:"spilledBytes"`
		RootStage    *stageStats `json:"rootStage,omitempty"`
	}
	// trinoStats are the keys of Trino's StatementStats that PrestoDB's lacks (trino:
	// client/StatementStats.java), all 0 here but runningPercentage, which comes with
	// progressPercentage.
	trinoStats struct {
		PlanningTimeMillis        int64    `json:"planningTimeMillis"`
		AnalysisTimeMillis        int64    `json:"analysisTimeMillis"`
		FinishingTimeMillis       int64    `json:"finishingTimeMillis"`
		PhysicalInputTimeMillis   int64    `json:"physicalInputTimeMillis"`
		PhysicalInputBytes        int64    `json:"physicalInputBytes"`
		PhysicalWrittenBytes      int64    `json:"physicalWrittenBytes"`
		InternalNetworkInputBytes int64    `json:"internalNetworkInputBytes"`
		RunningPercentage         *float64 `json:"runningPercentage,omitempty"`
	}
	// prestoStats are the keys of PrestoDB 0.287's StatementStats that Trino's lacks
	// (prestodb: presto-client StatementStats.java), runtimeStats only once the query runs.
	prestoStats struct {
		WaitingForPrerequisites           bool                     `json:"waitingForPrerequisites"`
		WaitingForPrerequisitesTimeMillis int64                    `json:"waitingForPrerequisitesTimeMillis"`
		PeakTotalMemoryBytes              int64                    `json:"peakTotalMemoryBytes"`
		PeakTaskTotalMemoryBytes          int64                    `json:"peakTaskTotalMemoryBytes"`
		RuntimeStats                      map[string]runtimeMetric `json:"runtimeStats,omitempty"`
	}
	// runtimeMetric is one of PrestoDB's RuntimeStats (prestodb: common/RuntimeMetric.java).
	runtimeMetric struct {
		Name  string `json:"name"`
		Unit  string `json:"unit"`
		Sum   int64  `json:"sum"`
		Count int64  `json:"count"`
		Max   int64  `json:"max"`
		Min   int64  `json:"min"`
	}
	// stageStats is a client StageStats (trino: client/StageStats.java); PrestoDB 0.287's
	// has no physicalInputBytes, failedTasks or coordinatorOnly (prestodb: presto-client
	// StageStats.java), so they are pointers, nil on PrestoDB.
	stageStats struct {
		StageID         string       `json:"stageId"`
		State           string       `json:"state"`
		Done            bool         `json:"done"`
		Nodes           int          `json:"nodes"`
		TotalSplits     int          `json:"totalSplits"`
		QueuedSplits    int          `json:"queuedSplits"`
		RunningSplits   int          `json:"runningSplits"`
		CompletedSplits int          `json:"completedSplits"`
		CPUTimeMillis   int64        `json:"cpuTimeMillis"`
		WallTimeMillis  int64        `json:"wallTimeMillis"`
		ProcessedRows   int64        `json:"processedRows"`
		ProcessedBytes  int64        `json:"processedBytes"`
		PhysicalInput   *int64       `json:"physicalInputBytes,omitempty"`
		FailedTasks     *int         `json:"failedTasks,omitempty"`
		CoordinatorOnly *bool        `json:"coordinatorOnly,omitempty"`
		SubStages       []stageStats `json:"subStages"`
	}
	// errorLocation is where in the statement a syntax error is (trino:
	// client/ErrorLocation.java).
	errorLocation struct {
		LineNumber   int `json:"lineNumber"`
		ColumnNumber int `json:"columnNumber"`
	}

	queryError struct {
		Message       string         `json:"message"`
		ErrorCode     int            `json:"errorCode"`
		ErrorName     string         `json:"errorName"`
		ErrorType     string         `json:"errorType"`
		Retriable     *bool          `json:"retriable,omitempty"` // PrestoDB's; Trino 476 sends none
		ErrorLocation *errorLocation `json:"errorLocation,omitempty"`
		FailureInfo   failureInfo    `json:"failureInfo"`
	}
	failureInfo struct {
		Type          string         `json:"type"`
		Message       string         `json:"message"`
		Suppressed    []struct{}     `json:"suppressed"`
		Stack         []string       `json:"stack"`
		ErrorLocation *errorLocation `json:"errorLocation,omitempty"`
	}
)

func typed(name, typ string) column {
	return column{Name: name, Type: typ, TypeSignature: typeSignature{RawType: typ, Arguments: []typeArgument{}}}
}

func varchar(name string) column { return typed(name, "varchar") }

var (
	describeColumns = []column{
		varchar("coordinator"), varchar("user"), varchar("catalog"),
		varchar("schema"), varchar("source"), varchar("query"),
	}
	rowsColumns    = []column{typed("n", "bigint")}
	updateColumns  = []column{typed("rows", "bigint")}
	bigrowsColumns = []column{typed("n", "bigint"), varchar("s")}
	resultColumns  = []column{typed("result", "boolean")}
)

// tstzColumns are the columns of tstz('zone'), typed as the flavour types a
// timestamp with time zone of millisecond precision.
func tstzColumns(f Flavour) []column {
	if f == Trino {
		// Trino's timestamp has a precision, a parameter of the type:
		// rawType is the base name, the precision an argument.
		ts := column{Name: "ts", Type: "timestamp(3) with time zone", TypeSignature: typeSignature{
			RawType: "timestamp with time zone", Arguments: []typeArgument{{Kind: "LONG", Value: 3}},
		}}
		return []column{typed("n", "bigint"), ts}
	}
	return []column{typed("n", "bigint"), typed("ts", "timestamp with time zone")}
}

// TstzValues returns the rows tstz('zone') answers, as Presto writes them
// for a session in that zone: n, then the value (nil for SQL NULL).
func TstzValues(zone string) [][]any {
	return [][]any{
		{1, "2024-05-06 07:08:09.123 " + zone},
		{2, "2024-12-31 23:59:59.999 " + zone},
		{3, nil},
	}
}

func (q *query) newError(code int, name, message string) *queryError {
	exception := "com.facebook.presto.spi.PrestoException"
	if q.flavour == Trino {
		exception = "io.trino.spi.TrinoException"
	}
	var retriable *bool
	if q.flavour != Trino {
		retriable = new(bool)
	}
	return &queryError{
		Message:   message,
		ErrorCode: code,
		ErrorName: name,
		ErrorType: "USER_ERROR",
		Retriable: retriable,
		FailureInfo: failureInfo{
			Type:       exception,
			Message:    message,
			Suppressed: []struct{}{},
			Stack:      []string{},
		},
	}
}

// results returns a QueryResults skeleton for q in the given state.
func (q *query) results(l linker, state string, now time.Time) queryResults {
	elapsed := now.Sub(q.created).Milliseconds()
	r := queryResults{
		ID:       q.id,
		InfoURI:  l.abs("/ui/query.html?" + q.id),
		Warnings: []warning{},
		Stats: stats{QueryStats: wire.QueryStats{
			State:             state,
			Queued:            state == "QUEUED",
			Scheduled:         state != "QUEUED",
			Nodes:             1,
			WallTimeMillis:    elapsed,
			ElapsedTimeMillis: elapsed,
			ProcessedRows:     q.sent.Load(),
		}},
	}
	if q.flavour == Trino {
		r.Stats.trinoStats = &trinoStats{}
	} else {
		r.Stats.prestoStats = &prestoStats{}
	}
	if q.plan.warning != "" && q.dispatched.Load() {
		// The analyzer's warnings are in the query's info from then on, and every answer
		// carries them (trino: Query.getNextResult, queryInfo.getWarnings through
		// ProtocolUtil.toClientWarning).
		r.Warnings = []warning{{WarningCode: warningCode{Code: warnTooManyStages, Name: warnTooManyStagesName}, Message: q.plan.warning}}
	}
	if state == "QUEUED" {
		return r
	}
	if q.columns != nil {
		r.Columns = &q.columns
	}
	// The executing resource's answers carry the updateType from the query's info on every
	// page (trino: Query.getNextResult, queryInfo.getUpdateType()).
	r.UpdateType = q.plan.updateType
	if q.plan.sleep > 0 {
		q.progress(&r.Stats.QueryStats, now)
	} else {
		q.splitProgress(&r.Stats.QueryStats, state)
	}
	r.Stats.RootStage = rootStage(q.flavour, &r.Stats.QueryStats)
	if q.flavour == Trino {
		running := 0.0
		r.Stats.RunningPercentage = &running
	} else {
		// What the planner reports once the query runs (prestodb: RuntimeStats in
		// QueryStats); the one metric here stands for them.
		r.Stats.RuntimeStats = map[string]runtimeMetric{
			"optimizerTimeNanos": {Name: "optimizerTimeNanos", Unit: "NANO", Count: 1},
		}
	}
	return r
}

// failedAtDispatch is the answer's results of a query that failed before it was planned:
// FAILED, the error, no columns, and stats without progress or stages, as the servers'
// queued resource answers it (seen on Trino 476 and PrestoDB 0.287 for a syntax error:
// interop/realservers TestDifferentialAnswersJSON).
func (q *query) failedAtDispatch(l linker, now time.Time, qe *queryError) queryResults {
	r := q.results(l, "FAILED", now)
	r.Columns, r.Error, r.UpdateType = nil, qe, ""
	r.Stats.ProgressPercentage, r.Stats.RootStage = nil, nil
	if r.Stats.trinoStats != nil {
		r.Stats.RunningPercentage = nil
	}
	if r.Stats.prestoStats != nil {
		r.Stats.RuntimeStats = nil
	}
	return r
}

// splitProgress fills the split counts and progressPercentage of a running or ended
// statement other than sleep(ms): one split a page of rows, progress the share of them
// done, as the servers compute it once the query is scheduled (trino:
// execution/QueryStats.getProgressPercentage, completed over total drivers).
func (q *query) splitProgress(s *wire.QueryStats, state string) {
	total := 1
	if q.plan.kind == generateRows && q.batchRows > 0 {
		total = int(max(1, min((q.plan.rows+int64(q.batchRows)-1)/int64(q.batchRows), 1<<20)))
	}
	done := 0
	switch {
	case state == "FINISHED" || state == "FAILED":
		done = total
	case q.plan.kind == generateRows && q.batchRows > 0:
		done = int(min(q.sent.Load()/int64(q.batchRows), int64(total)))
	}
	s.TotalSplits, s.CompletedSplits = total, done
	s.RunningSplits = min(1, total-done)
	s.QueuedSplits = total - done - s.RunningSplits
	s.CPUTimeMillis = s.WallTimeMillis
	pct := 100 * float64(done) / float64(total)
	s.ProgressPercentage = &pct
}

// rootStage is the output stage of a statement with s's figures (trino:
// ProtocolUtil.toStageStats of the query's output stage), with one source stage under it
// for the statements that read rows; the coordinator runs them all on its one node.
func rootStage(f Flavour, s *wire.QueryStats) *stageStats {
	state := s.State
	done := state == "FINISHED" || state == "FAILED"
	if state == "FINISHING" {
		state = "RUNNING"
	}
	st := stageStats{
		StageID: "0", State: state, Done: done, Nodes: 1,
		TotalSplits: s.TotalSplits, QueuedSplits: s.QueuedSplits, RunningSplits: s.RunningSplits,
		CompletedSplits: s.CompletedSplits, CPUTimeMillis: s.CPUTimeMillis, WallTimeMillis: s.WallTimeMillis,
		ProcessedRows: s.ProcessedRows, ProcessedBytes: s.ProcessedBytes,
		SubStages: []stageStats{},
	}
	if f == Trino {
		input, failed, coordinatorOnly := s.ProcessedBytes, 0, false
		if state == "FAILED" {
			failed = 1
		}
		st.PhysicalInput, st.FailedTasks, st.CoordinatorOnly = &input, &failed, &coordinatorOnly
	}
	return &st
}

// progress fills in the stats of a sleep(ms) statement: from submission until it is ready,
// splits complete and rows and bytes are processed at an even pace, as a CLI shows them.
func (q *query) progress(s *wire.QueryStats, now time.Time) {
	f := 1.0
	if span := q.readyAt().Sub(q.created); span > 0 {
		f = min(1, max(0, float64(now.Sub(q.created))/float64(span)))
	}
	done := int(f * progressSplits)
	s.TotalSplits = progressSplits
	s.CompletedSplits = done
	s.RunningSplits = min(progressRunning, progressSplits-done)
	s.QueuedSplits = progressSplits - done - s.RunningSplits
	rows := int64(f * progressRows)
	s.ProcessedRows = max(s.ProcessedRows, rows)
	s.ProcessedBytes = rows * progressRowBytes
	s.CPUTimeMillis = s.WallTimeMillis
	s.PeakMemoryBytes = 1 << 20
	pct := f * 100
	s.ProgressPercentage = &pct
}

// link returns the absolute URI of the poll that carries token in phase: Trino's
// /v1/statement/{phase}/{id}/{slug}/{token} (trino: QueuedStatementResource.getQueuedUri,
// ExecutingStatementResource via Query.getNextUri), PrestoDB's
// /v1/statement/{phase}/{id}/{token}?slug={slug} (prestodb:
// QueryResourceUtil.getQueuedUri and getNextUri).
func (q *query) link(l linker, phase string, token int64) string {
	t := strconv.FormatInt(token, 10)
	if q.flavour != Trino {
		return l.abs("/v1/statement/" + phase + "/" + q.id + "/" + t + "?slug=" + q.slug)
	}
	return l.abs("/v1/statement/" + phase + "/" + q.id + "/" + q.slugFor(phase, token) + "/" + t)
}

// partialCancelLink is the partialCancelUri of the answer whose nextUri carries token:
// /v1/statement/executing/partialCancel/{id}/{stage}/{slug}/{token} on Trino
// (ExecutingStatementResource.cancelQuery's partialCancel), the slug in the query string on
// PrestoDB (ExecutingStatementResource.partialCancel).
func (q *query) partialCancelLink(l linker, token int64) string {
	t := strconv.FormatInt(token, 10)
	if q.flavour != Trino {
		return l.abs("/v1/statement/executing/partialCancel/" + q.id + "/0/" + t + "?slug=" + q.slug)
	}
	return l.abs("/v1/statement/executing/partialCancel/" + q.id + "/0/" + q.slugFor(phaseExecuting, token) + "/" + t)
}

// queuedAnswer is a QUEUED answer without data whose nextUri carries token in phase: the
// answer to the submission, and the queued resource's answers to its GETs.
func (q *query) queuedAnswer(l linker, now time.Time, phase string, token int64) *answer {
	r := q.results(l, "QUEUED", now)
	r.NextURI = q.link(l, phase, token)
	return encode(r)
}

// nextAnswer builds the answer to the executing poll carrying q.token and reports whether it
// is final. targetSize, when not 0, bounds the bytes of rows of the page, which holds at
// least one row (trino: Query.removePagesFromExchange takes pages until targetResultSize is
// reached). The caller holds q.mu.
func (q *query) nextAnswer(l linker, now time.Time, targetSize int64) (*answer, bool) {
	a, final := q.nextPage(l, now, targetSize)
	if q.plan.kind == sessionStatement && a.err == nil {
		// Every executing answer carries the session changes of the statement once its
		// task has run, which it does when it starts: the servers rebuild the headers from
		// the query's info on each answer (trino: Query.getNextResult copies setCatalog,
		// setSessionProperties, addedPreparedStatements, startedTransactionId, ... from
		// QueryInfo; ExecutingStatementResource.toResponse writes them; prestodb:
		// ExecutingStatementResource and QueryResourceUtil the same). The queued
		// resource's answers have none.
		a.header = prefixed(q.flavour, q.plan.header)
	}
	return a, final
}

// nextPage is nextAnswer without the session headers.
func (q *query) nextPage(l linker, now time.Time, targetSize int64) (*answer, bool) {
	next, partialCancel := q.link(l, phaseExecuting, q.token+1), q.partialCancelLink(l, q.token+1)
	if now.Before(q.readyAt()) {
		r := q.results(l, "RUNNING", now)
		r.NextURI, r.PartialCancelURI = next, partialCancel
		return encode(r), false
	}
	switch q.plan.kind {
	case failQuery:
		return q.failedAnswer(l, now, q.planError()), true
	case dataChange:
		// The count comes as the one row of column rows, and from then on the answers
		// carry it as updateCount, the last one included (trino: Query.getNextResult keeps
		// updateCount once resultRows.getUpdateCount() gave it).
		count := q.plan.rows
		if q.sent.Swap(1) == 0 {
			r := q.results(l, "RUNNING", now)
			r.Data, r.UpdateCount = [][]int64{{count}}, &count
			r.NextURI, r.PartialCancelURI = next, partialCancel
			return encode(r), false
		}
		r := q.results(l, "FINISHED", now)
		r.UpdateCount = &count
		return encode(r), true
	case generateRows:
		sent := q.sent.Load()
		count := min(q.plan.rows-sent, int64(q.batchRows))
		if targetSize > 0 {
			// A row is its number, its string and the JSON around them.
			rowBytes := int64(len(strconv.FormatInt(sent+1, 10)) + 3)
			if q.plan.width > 0 {
				rowBytes += int64(q.plan.width) + 3
			}
			count = min(count, max(1, targetSize/rowBytes))
		}
		stopped := q.partial.Load()
		if stopped {
			count = 0
		}
		q.sent.Store(sent + count)
		final := stopped || sent+count >= q.plan.rows
		state := "RUNNING"
		if final {
			state = "FINISHED"
		}
		r := q.results(l, state, now)
		if count > 0 {
			p := &page{first: sent + 1, count: count, width: q.plan.width}
			if q.spool != nil {
				r.Data = q.spool.spool(l, p)
			} else {
				r.rows = p
			}
		}
		if !final {
			r.NextURI, r.PartialCancelURI = next, partialCancel
		}
		return encode(r), final
	case tstzValues:
		q.sent.Store(3)
		r := q.results(l, "FINISHED", now)
		r.Data = TstzValues(q.plan.zone)
		return encode(r), true
	case sessionStatement:
		// One answer, the last, with the headers: Trino's has an empty list of columns
		// and no data (its data definition tasks produce no rows: trino:
		// execution/DataDefinitionExecution), PrestoDB 0.287's the boolean row "result"
		// (seen: interop/realservers TestDifferentialSessionHeaders).
		q.sent.Store(1)
		r := q.results(l, "FINISHED", now)
		if q.flavour == Trino {
			r.Columns = &[]column{}
		} else {
			r.Data = [][]bool{{true}}
		}
		return encode(r), true
	default:
		q.sent.Store(1)
		r := q.results(l, "FINISHED", now)
		req := q.req
		r.Data = [][]string{{q.coordinator, req.User, req.Catalog, req.Schema, req.Source, q.plan.sql}}
		return encode(r), true
	}
}

// planError is the failure the plan of a failQuery statement says.
func (q *query) planError() *queryError {
	qe := q.newError(q.plan.failCode, q.plan.failName, q.plan.failure)
	qe.ErrorLocation, qe.FailureInfo.ErrorLocation = q.plan.failLocation, q.plan.failLocation
	return qe
}

// prefixed names h's headers with the flavour's prefix.
func prefixed(f Flavour, h http.Header) http.Header {
	if len(h) == 0 {
		return nil
	}
	out := make(http.Header, len(h))
	for name, values := range h {
		out[http.CanonicalHeaderKey(f.HeaderPrefix()+name)] = values
	}
	return out
}

// failedAnswer is a final FAILED answer carrying qe.
func (q *query) failedAnswer(l linker, now time.Time, qe *queryError) *answer {
	r := q.results(l, "FAILED", now)
	r.Error = qe
	return encode(r)
}

func (q *query) canceledAnswer() *answer {
	return q.failedAnswer(linker{}, time.Now(), q.newError(errUserCanceled, "USER_CANCELED", "Query was canceled"))
}

func (q *query) abandonedAnswer() *answer {
	return q.failedAnswer(linker{}, time.Now(), q.newError(errAbandoned, "ABANDONED_QUERY", "Query "+q.id+" was abandoned by the client"))
}

// dataMarker stands for the data array of a streamed page while the rest is encoded. Only
// generated rows are streamed, and their documents hold no text a user chose, so the
// marker cannot occur anywhere else in them.
var dataMarker = []byte(`"\u0000rows\u0000"`)

// encode marshals r. Only strings, numbers and slices of them are encoded, so it does not
// fail in practice; should it, the client gets a FAILED answer instead of a broken one.
func encode(r queryResults) *answer {
	a := &answer{state: r.Stats.State, err: r.Error}
	if r.rows != nil {
		r.Data = json.RawMessage(dataMarker)
	}
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(queryResults{
			ID:       r.ID,
			Warnings: []warning{},
			Stats:    stats{QueryStats: wire.QueryStats{State: "FAILED"}},
			Error:    &queryError{Message: "encode results: " + err.Error(), ErrorName: "GENERIC_INTERNAL_ERROR", ErrorType: "INTERNAL_ERROR"},
		})
		a.head, a.state = b, "FAILED"
		return a
	}
	if r.rows != nil {
		if head, tail, ok := bytes.Cut(b, dataMarker); ok {
			a.head, a.tail, a.rows = head, tail, r.rows
			return a
		}
	}
	a.head = b
	return a
}
