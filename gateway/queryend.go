package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// A statement's outcome, as the status page shows it, is learnt from the
// follow-ups this replica relays: the final page (one without a nextUri)
// says FINISHED or FAILED with its error's name, a DELETE says cancelled. A
// query whose follow-ups another replica served stays "accepted" here.

// Outcomes of statements that ran.
const (
	outcomeAccepted  = "accepted" // running, or followed through another replica
	outcomeFinished  = "finished"
	outcomeFailed    = "failed"
	outcomeCancelled = "cancelled"
)

// Bounds of what is kept of a follow-up's page to learn its outcome: the
// nextUri comes before the data, the stats and error after it.
const (
	pageHeadBytes = 8 << 10
	pageTailBytes = 64 << 10
)

// queryEnd is how a query ended.
type queryEnd struct {
	outcome, state, errorName string
	at                        time.Time
}

// end records how query id ended, for its record in the log.
func (l *statementLog) end(id string, e queryEnd) {
	if id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ends == nil || len(l.ends) >= 4*RecentStatements {
		// Older ends belong to records the ring has dropped, mostly.
		l.ends = map[string]queryEnd{}
	}
	if prev, ok := l.ends[id]; ok && prev.outcome == outcomeCancelled {
		return // the final page of a cancelled query says FAILED: it was cancelled
	}
	l.ends[id] = e
}

// applyEnd fills rec's outcome from how its query ended, if known.
func (l *statementLog) applyEnd(rec *StatementRecord) {
	e, ok := l.ends[rec.QueryID]
	if !ok || rec.QueryID == "" {
		return
	}
	rec.Outcome = e.outcome
	if e.state != "" {
		rec.State = e.state
	}
	if e.errorName != "" {
		rec.ErrorName = e.errorName
	}
	rec.Ended = e.at
	if !rec.Time.IsZero() && e.at.After(rec.Time) {
		rec.ElapsedMillis = float64(e.at.Sub(rec.Time).Microseconds()) / 1000
	}
}

// watchPage wraps a follow-up's answer to learn whether it is its query's
// final page, and how the query ended then.
func (g *Gateway) watchPage(resp *http.Response, id string) {
	if id == "" || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		return
	}
	resp.Body = &pageWatch{ReadCloser: resp.Body, onEnd: func(e queryEnd) { g.recent.end(id, e) }}
}

// pageWatch keeps a page's head until it shows a nextUri (then nothing
// more), else its tail, and reports a final page's end when closed.
type pageWatch struct {
	io.ReadCloser
	onEnd   func(queryEnd)
	head    []byte
	tail    []byte
	hasNext bool
	done    bool
}

func (p *pageWatch) Read(b []byte) (int, error) {
	n, err := p.ReadCloser.Read(b)
	if p.hasNext || n == 0 {
		return n, err
	}
	if room := pageHeadBytes - len(p.head); room > 0 {
		p.head = append(p.head, b[:min(n, room)]...)
		if bytes.Contains(p.head, []byte(`"nextUri"`)) {
			p.hasNext, p.head, p.tail = true, nil, nil
			return n, err
		}
	}
	p.tail = append(p.tail, b[:n]...)
	if len(p.tail) > 2*pageTailBytes {
		p.tail = append(p.tail[:0], p.tail[len(p.tail)-pageTailBytes:]...)
	}
	if err == io.EOF {
		p.finish()
	}
	return n, err
}

func (p *pageWatch) Close() error {
	p.finish() // a reader that stopped at the object's end read it all
	return p.ReadCloser.Close()
}

// finish reports the end a whole final page says.
func (p *pageWatch) finish() {
	if p.done || p.hasNext {
		return
	}
	p.done = true
	state, errorName := pageEnd(p.tail)
	switch state {
	case "FINISHED":
		p.onEnd(queryEnd{outcome: outcomeFinished, state: state, at: time.Now()})
	case "FAILED":
		outcome := outcomeFailed
		if errorName == "USER_CANCELED" || errorName == "USER_CANCELLED" {
			outcome = outcomeCancelled
		}
		p.onEnd(queryEnd{outcome: outcome, state: state, errorName: errorName, at: time.Now()})
	}
}

// pageEnd reads the state of a page's top-level stats and its error's name
// from the page's tail: the last "stats" member, which follows the data,
// and an "error" after it.
func pageEnd(tail []byte) (state, errorName string) {
	i := bytes.LastIndex(tail, []byte(`"stats"`))
	if i < 0 {
		return "", ""
	}
	rest := bytes.TrimLeft(tail[i+len(`"stats"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return "", ""
	}
	dec := json.NewDecoder(bytes.NewReader(rest[1:]))
	var stats struct{ State string }
	if dec.Decode(&stats) != nil {
		return "", ""
	}
	after := rest[1+int(dec.InputOffset()):]
	if j := bytes.Index(after, []byte(`"error"`)); j >= 0 {
		if r := bytes.TrimLeft(after[j+len(`"error"`):], " \t\r\n"); len(r) > 0 && r[0] == ':' {
			var e struct{ ErrorName string }
			if json.NewDecoder(bytes.NewReader(r[1:])).Decode(&e) == nil {
				errorName = e.ErrorName
			}
		}
	}
	return stats.State, errorName
}
