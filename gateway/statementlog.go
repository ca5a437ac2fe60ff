package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// Bounds on what one statement's record holds.
const (
	// headBytes is how much of a coordinator's first answer is kept to
	// find the query id and state in.
	headBytes = 8 << 10
	// maxNoteText bounds a user, source or error text in a record.
	maxNoteText = 300
)

// statementLog is the ring of the last RecentStatements records. The zero
// value is empty and ready.
type statementLog struct {
	mu   sync.Mutex
	ring [RecentStatements]loggedStatement
	next int
	n    int
	ends map[string]queryEnd // how queries ended, by id (see queryend.go)
}

// loggedStatement is a record as the log keeps it: an accepted statement's
// query id, state and error are read from the head of its first answer
// only when the status page asks, not while the statement is relayed.
type loggedStatement struct {
	rec     StatementRecord
	head    []byte // the first answer's start, still to be read; nil when none
	gzipped bool
}

func (l *statementLog) add(rec StatementRecord) { l.addAnswered(rec, nil, false) }

// addAnswered records a statement answered with head as its answer's
// start (gzipped, if it was).
func (l *statementLog) addAnswered(rec StatementRecord, head []byte, gzipped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = loggedStatement{rec: rec, head: head, gzipped: gzipped}
	l.next = (l.next + 1) % len(l.ring)
	l.n = min(l.n+1, len(l.ring))
}

// newestFirst returns the records, newest first.
func (l *statementLog) newestFirst() []StatementRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]StatementRecord, 0, l.n)
	for i := 1; i <= l.n; i++ {
		e := &l.ring[(l.next-i+len(l.ring))%len(l.ring)]
		if e.head != nil {
			e.rec.readHead(e.head, e.gzipped)
			e.head = nil
		}
		rec := e.rec
		l.applyEnd(&rec)
		out = append(out, rec)
	}
	return out
}

// readHead fills an accepted statement's query id and state, and its
// outcome and error when the answer says it failed.
func (rec *StatementRecord) readHead(head []byte, gzipped bool) {
	id, state, msg := answerHead(head, gzipped)
	rec.QueryID, rec.State = clip(id), clip(state)
	switch {
	case rec.Outcome != outcomeAccepted:
	case msg != "":
		rec.Outcome, rec.Error = outcomeFailed, clip(msg)
		rec.ErrorName, _, _ = strings.Cut(rec.Error, ":")
	case state == "FINISHED":
		rec.Outcome = outcomeFinished // whole in its first answer
	}
}

// noteStatement records a statement once it was answered or failed: err
// is the routing's failure; otherwise resp is the coordinator at base's
// answer, whose body is watched to find the query id in, and the record is
// made when the body is closed (relayed or given up).
func (g *Gateway) noteStatement(r *http.Request, group string, by choice, base string, resp *http.Response, err error) {
	rec := StatementRecord{
		Group:    group,
		ChosenBy: by.group,
		PickedBy: by.coordinator,
		User:     clip(clientHeader(r.Header, "User")),
		Source:   clip(clientHeader(r.Header, "Source")),
	}
	if err != nil {
		var se *routing.StatementError
		var re *wire.RequestError
		switch {
		case errors.As(err, &se):
			rec.Status, rec.Outcome, rec.Coordinator = http.StatusInternalServerError, "failed", se.Node
		case errors.As(err, &re):
			rec.Status, rec.Outcome = http.StatusBadRequest, "bad request"
		default:
			rec.Status, rec.Outcome = http.StatusServiceUnavailable, "not routed"
		}
		rec.Error = clip(err.Error())
		rec.Time = time.Now()
		g.recent.add(rec)
		return
	}
	if resp == nil {
		return
	}
	if u, perr := url.Parse(base); perr == nil {
		rec.Coordinator = u.Host
	}
	rec.Status = resp.StatusCode
	resp.Body = &watchedBody{ReadCloser: resp.Body, g: g, r: r, rec: rec, gzipped: resp.Header.Get("Content-Encoding") == "gzip"}
}

// choice says what chose a statement's group and coordinator, for its
// record.
type choice struct {
	group       string // Decision.By
	coordinator string // see StatementRecord.PickedBy
}

// hashesKey are the strategies that hash a request's routing key.
var hashesKey = map[string]bool{"consistent_hash": true, "user_hash": true}

// chosenBy says what chose the group of a statement (d) and its
// coordinator: the transaction it is in (pinned), the affinity cookie
// when the preferred coordinator took it (a, nil when none did), the
// routing key when router's strategy hashes it, else the strategy.
func chosenBy(d Decision, req *strategy.Request, pinned *discovery.Node, a *routing.Attempt, router *routing.Router) choice {
	c := choice{group: d.By}
	switch {
	case pinned != nil:
		c.coordinator = "transaction"
	case req.Prefer != "" && a != nil && a.Node.Addr == req.Prefer:
		c.coordinator = "affinity cookie"
	case req.Key != "" && hashesKey[router.StrategyName()]:
		c.coordinator = "routing key"
	}
	return c
}

// watchedBody keeps the start of a coordinator's first answer and records
// the statement when it is closed.
type watchedBody struct {
	io.ReadCloser
	g       *Gateway
	r       *http.Request
	rec     StatementRecord
	gzipped bool
	head    []byte
	eof     bool // read to its end: the relay wrote all of it to the client
	once    sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if room := headBytes - len(b.head); room > 0 && n > 0 {
		b.head = append(b.head, p[:min(n, room)]...)
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() {
		rec := b.rec
		rec.Time = time.Now()
		switch {
		case b.r.Context().Err() != nil && !b.eof:
			// Gone before the answer was relayed whole. One that went after
			// reading it all (its request context ends as it closes the
			// connection, which may come before this Close) got it.
			rec.Outcome = "client gone"
		case rec.Status != http.StatusOK:
			rec.Outcome = "refused"
		default:
			rec.Outcome = outcomeAccepted // or failed, as the head will tell
		}
		b.g.recent.addAnswered(rec, b.head, b.gzipped)
	})
	return err
}

// answerHead reads the query id, state and error message from the start
// of a Presto answer, as far as it goes.
func answerHead(head []byte, gzipped bool) (id, state, msg string) {
	var src io.Reader = bytes.NewReader(head)
	if gzipped {
		gz, err := gzip.NewReader(src)
		if err != nil {
			return "", "", ""
		}
		plain, _ := io.ReadAll(io.LimitReader(gz, 4*headBytes)) // a cut stream ends early
		src = bytes.NewReader(plain)
	}
	dec := json.NewDecoder(src)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", "", ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return
		}
		key, _ := t.(string)
		switch key {
		case "id":
			if err := dec.Decode(&id); err != nil {
				return
			}
		case "stats":
			var s struct{ State string }
			if err := dec.Decode(&s); err != nil {
				return
			}
			state = s.State
		case "error":
			var e struct{ Message, ErrorName string }
			if err := dec.Decode(&e); err != nil {
				return
			}
			msg = strings.TrimSpace(e.ErrorName + ": " + e.Message)
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return
			}
		}
	}
	return id, state, msg
}

// clip bounds a text shown on the status page.
func clip(s string) string {
	if len(s) <= maxNoteText {
		return s
	}
	return cutText(s, maxNoteText, "…")
}

// cutText returns the first n bytes of s with any invalid UTF-8 dropped,
// the part of a rune the cut splits among it, followed by tail, which says
// the rest is missing.
func cutText(s string, n int, tail string) string {
	return strings.ToValidUTF8(s[:n], "") + tail
}
