package driver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// Progress is what a coordinator reported of a running statement in one
// of its answers: the query's id and the statistics of the page (Presto's
// QueryResults.stats).
type Progress struct {
	// QueryID is the query's id, as the coordinator's logs and web UI name it.
	QueryID string
	// Coordinator is the address of the coordinator running it.
	Coordinator string
	// State is the query's state: QUEUED, PLANNING, RUNNING, FINISHED, FAILED...
	State string
	// Queued and Scheduled are Presto's flags of the same names.
	Queued, Scheduled bool
	// Nodes is the number of worker nodes running the query.
	Nodes int
	// TotalSplits, QueuedSplits, RunningSplits and CompletedSplits count the splits.
	TotalSplits, QueuedSplits, RunningSplits, CompletedSplits int
	// Elapsed, CPU, Wall and Queued time of the query so far.
	Elapsed, CPUTime, WallTime, QueuedTime time.Duration
	// ProcessedRows and ProcessedBytes are the input read so far.
	ProcessedRows, ProcessedBytes int64
	// PeakMemoryBytes is the query's peak memory.
	PeakMemoryBytes int64
	// Percentage is the progress in percent when HasPercentage is true (the
	// coordinator does not always know it).
	Percentage    float64
	HasPercentage bool
	// UpdateType names what a statement that is not a query did (SET
	// SESSION, USE, INSERT, CREATE TABLE...), as presto-cli prints it; ""
	// for a query. UpdateCount is the rows it changed, when HasUpdateCount.
	UpdateType     string
	UpdateCount    int64
	HasUpdateCount bool
}

type progressKey struct{}

// WithProgress returns a context under which every answer a coordinator
// sends for a statement calls fn with the statement's progress, from the
// goroutine that reads the statement's results, before the statement's
// call (QueryContext, Rows.Next...) returns. It is how a command-line tool
// shows a running query's progress and learns its id. fn must not block
// for long. Without it the driver reads no statistics and costs nothing
// extra; with it, every page is scanned once more.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// RoundTrip implements http.RoundTripper: roundTrip, and the progress
// report of a statement whose context asks for it (see WithProgress).
func (t *routingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	if err == nil && req.Method != http.MethodHead && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		explainRefusal(resp, req, t.coordinatorURL(attemptFrom(req.Context()), req))
	}
	if err != nil || resp.StatusCode != http.StatusOK || req.Method == http.MethodDelete {
		return resp, err
	}
	if a := attemptFrom(req.Context()); a != nil {
		noteTransaction(resp, a)
		if a.splitPages {
			splitPage(resp, a)
		}
	}
	if fn, _ := req.Context().Value(progressKey{}).(func(Progress)); fn != nil {
		node := req.URL.Host
		if a := attemptFrom(req.Context()); a != nil && a.Node != nil {
			node = a.Node.Addr
		}
		resp.Body = &progressBody{
			ReadCloser: resp.Body,
			gzipped:    strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip"),
			report:     fn,
			node:       node,
		}
	}
	return resp, err
}

// progressHead and progressTail bound what a progressBody keeps of a page:
// the id comes first, the stats after the data, near the end.
const (
	progressHead = 1 << 10
	progressTail = 64 << 10
)

// progressBody passes a page on and reports its progress when closed.
type progressBody struct {
	io.ReadCloser
	gzipped bool
	report  func(Progress)
	node    string
	raw     bytes.Buffer // the compressed page
	ends    pageEnds
	closed  bool
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.gzipped {
		b.raw.Write(p[:n])
	} else {
		b.ends.Write(p[:n])
	}
	return n, err
}

func (b *progressBody) Close() error {
	if !b.closed {
		b.closed = true
		// What the reader left (a decoder stops after the object).
		_, _ = io.Copy(b, io.LimitReader(b.ReadCloser, 64<<20))
		if b.gzipped {
			if zr, err := gzip.NewReader(&b.raw); err == nil {
				_, _ = io.Copy(&b.ends, zr)
			}
		}
		if p, ok := b.ends.progress(); ok {
			p.Coordinator = b.node
			b.report(p)
		}
	}
	return b.ReadCloser.Close()
}

// Write lets io.Copy drain the body through Read's bookkeeping.
func (b *progressBody) Write(p []byte) (int, error) {
	if b.gzipped {
		return b.raw.Write(p)
	}
	return b.ends.Write(p)
}

// pageEnds keeps the start and the end of a page.
type pageEnds struct {
	head, tail []byte
}

func (e *pageEnds) Write(p []byte) (int, error) {
	if n := min(len(p), progressHead-len(e.head)); n > 0 {
		e.head = append(e.head, p[:n]...)
	}
	e.tail = append(e.tail, p...)
	if len(e.tail) > 2*progressTail {
		e.tail = append(e.tail[:0], e.tail[len(e.tail)-progressTail:]...)
	}
	return len(p), nil
}

// progress reads the query id from the page's start and the stats object
// from its end: the last "stats" key, which follows the data.
func (e *pageEnds) progress() (Progress, bool) {
	var p Progress
	var head struct {
		ID string `json:"id"`
	}
	if i := bytes.Index(e.head, []byte(`"id"`)); i >= 0 {
		// {"id":"...", — decode the one member.
		dec := json.NewDecoder(bytes.NewReader(append([]byte("{"), e.head[i:]...)))
		if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
			if key, err := dec.Token(); err == nil && key == "id" {
				_ = dec.Decode(&head.ID)
			}
		}
	}
	p.QueryID = head.ID
	i := bytes.LastIndex(e.tail, []byte(`"stats"`))
	if i < 0 {
		return p, p.QueryID != ""
	}
	rest := bytes.TrimLeft(e.tail[i+len(`"stats"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return p, p.QueryID != ""
	}
	var st wire.QueryStats

	if err := json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&st); err != nil {
		return p, p.QueryID != ""
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	p.State, p.Queued, p.Scheduled, p.Nodes = st.State, st.Queued, st.Scheduled, st.Nodes
	p.TotalSplits, p.QueuedSplits, p.RunningSplits, p.CompletedSplits = st.TotalSplits, st.QueuedSplits, st.RunningSplits, st.CompletedSplits
	p.CPUTime, p.WallTime, p.QueuedTime, p.Elapsed = ms(st.CPUTimeMillis), ms(st.WallTimeMillis), ms(st.QueuedTimeMillis), ms(st.ElapsedTimeMillis)
	p.ProcessedRows, p.ProcessedBytes, p.PeakMemoryBytes = st.ProcessedRows, st.ProcessedBytes, st.PeakMemoryBytes
	if st.ProgressPercentage != nil {
		p.Percentage, p.HasPercentage = *st.ProgressPercentage, true
	}
	// updateType and updateCount follow the stats (QueryResults' order);
	// a key of the same name before the stats is data.
	after := rest[1:]
	if v, ok := memberAfter(after, "updateType"); ok {
		_ = json.Unmarshal(v, &p.UpdateType)
	}
	if v, ok := memberAfter(after, "updateCount"); ok {
		p.HasUpdateCount = json.Unmarshal(v, &p.UpdateCount) == nil
	}
	return p, true
}

// memberAfter returns the value of the last member named key in page, the
// part of a page after its stats.
func memberAfter(page []byte, key string) (json.RawMessage, bool) {
	i := bytes.LastIndex(page, []byte(`"`+key+`"`))
	if i < 0 {
		return nil, false
	}
	rest := bytes.TrimLeft(page[i+len(key)+2:], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return nil, false
	}
	var v json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}
