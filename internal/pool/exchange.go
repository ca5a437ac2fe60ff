package pool

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// GetRetries is how many times an idempotent follow-up request (a GET of a
// nextUri) is retried on the same coordinator after a transport error, a
// refusal (503, 429, 502, 504) or a cut or malformed page.
const GetRetries = 2

// drainLimit bounds how much of a refused answer is read so that its
// connection can be reused.
const drainLimit = 4096

// Exchange is the record of one statement's requests to one coordinator:
// whether the submission may have reached it, the transport failure if any,
// the latest follow-up URL and whether the query is still running. It is
// safe for concurrent use; the zero value is ready.
type Exchange struct {
	// WholePages makes Submit and FollowUp read every 200 answer whole
	// before handing it on, so that a cut or malformed page is a failure
	// (which a GET retries) instead of a decode error in the client. A
	// client that decodes whole pages anyway (the driver) sets it; a
	// streaming proxy does not.
	WholePages bool

	// What the current try of the submission did (see Written). Each try
	// starts with GetConn; GotConn notes the connection.
	connected atomic.Bool             // the try got a connection to write on
	conn      atomic.Pointer[conn]    // that connection, when the Dialer made it (it counts its bytes)
	connBase  atomic.Int64            // conn's bytes written before the try
	unwritten atomic.Bool             // the transport proved that nothing of the try was written
	bodyLen   atomic.Int64            // the submission's ContentLength (0: none or unknown)
	gated     atomic.Bool             // the body passes the gate (GateBody)
	gate      atomic.Int32            // gateOpen, gateReleased or gateAborted: see GateBody
	lastURL   atomic.Pointer[url.URL] // the latest nextUri requested, to cancel the query

	// The dial race (see dialrace.go and ArmDialRace).
	raceDelay time.Duration            // 0: no race
	tryState  atomic.Int32             // tryIdle, tryWaiting, tryConnected or tryGivenUp
	race      atomic.Pointer[dialRace] // the statement's race, shared by its tries (JoinDialRace)

	mu      sync.Mutex
	failure error // the transport failure, if any; set once
	sent    bool  // whether the submission may have reached the coordinator when it failed
	invalid error // a request that could not be sent at all

	// firstNext holds the submission's nextUri, copied from its answer
	// without parsing it (a statement cancelled before its first GET needs
	// it; most never do).
	firstNext    [320]byte
	firstNextLen atomic.Int32
	// gzipHead holds the start of a compressed submission answer, decoded
	// only when its nextUri is asked for: decoding every answer would cost
	// every statement a gzip reader.
	gzipHead    [nextURIScan]byte
	gzipHeadLen int // under mu

	trace httptrace.ClientTrace // notes the end of the submission's write
}

// Fail records a transport failure; sent says whether the statement may
// have reached the coordinator. The first failure recorded wins.
func (e *Exchange) Fail(err error, sent bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failure == nil {
		e.failure, e.sent = err, sent
	}
}

// Failure returns the recorded transport failure (nil if none) and whether
// the statement may have reached the coordinator when it happened.
func (e *Exchange) Failure() (err error, sent bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failure, e.sent
}

// Invalid returns the *RequestError of a request that could not be sent at
// all, nil if none. It is no failure of the coordinator's.
func (e *Exchange) Invalid() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.invalid
}

// SetInvalid records err as the reason a request could not be sent at
// all, for Invalid (the first one recorded wins): a failure of the
// client's, such as credentials it could not get, charged to no
// coordinator.
func (e *Exchange) SetInvalid(err error) { e.setInvalid(err) }

func (e *Exchange) setInvalid(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.invalid == nil {
		e.invalid = err
	}
}

// The states of Exchange.gate.
const (
	gateOpen     int32 = iota // the statement's last bytes were not handed to the connection
	gateReleased              // they were: the statement may be complete at the coordinator
	gateAborted               // the caller gave up first: the statement can never be complete
)

// GateBody makes req's body the gate of the submission: its last bytes are
// handed to the connection only if AbortSubmission did not come first. A
// coordinator accepts a statement only once it has all of it, so a
// submission aborted at the gate can never have been accepted, however
// far its request got, while one whose last bytes were released may have
// been, however soon it is aborted. req must be the caller's own copy.
func (e *Exchange) GateBody(req *http.Request) {
	if gb, ok := req.Body.(*gatedBody); ok && gb.e == e {
		return // gated already
	}
	e.gated.Store(true)
	if req.Body == nil || req.Body == http.NoBody {
		e.gate.Store(gateReleased) // nothing to hold back
		return
	}
	req.Body = &gatedBody{ReadCloser: req.Body, e: e, length: req.ContentLength}
	if getBody := req.GetBody; getBody != nil {
		// Go's transport rewinds the body to retry on a fresh connection.
		req.GetBody = func() (io.ReadCloser, error) {
			body, err := getBody()
			if err != nil {
				return nil, err
			}
			// A transport sends a request that is not idempotent again
			// only when nothing of its first try was written: the last
			// bytes that try read reached no coordinator, and the caller
			// may again abort until the new try's are.
			if !idempotent(req) {
				e.gate.CompareAndSwap(gateReleased, gateOpen)
			}
			return &gatedBody{ReadCloser: body, e: e, length: req.ContentLength}, nil
		}
	}
}

// AbortSubmission reports whether the submission's last bytes were not
// released yet, and if so makes sure they never are: the caller may then
// abort the request, since the coordinator cannot have the statement.
// A submission without a gate (see GateBody) cannot be aborted this way.
func (e *Exchange) AbortSubmission() bool {
	return e.gate.CompareAndSwap(gateOpen, gateAborted)
}

// errGateAborted ends the write of a submission whose caller gave up.
var errGateAborted = errors.New("submission abandoned by the caller before it was complete")

// gatedBody releases the last bytes of a submission's body only through
// the gate.
type gatedBody struct {
	io.ReadCloser
	e      *Exchange
	length int64 // the request's ContentLength; unknown when not positive
	read   int64
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.e.gate.Load() == gateAborted {
		return 0, errGateAborted
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	last := err == io.EOF || (b.length > 0 && b.read >= b.length)
	if last && !b.e.gate.CompareAndSwap(gateOpen, gateReleased) && b.e.gate.Load() == gateAborted {
		return 0, errGateAborted
	}
	return n, err
}

// Written reports whether the submission may have reached the
// coordinator: whether a byte of its current try may have been handed to
// a connection and, for a gated submission (see GateBody), its last bytes
// were released. It is true from the moment that may be so, before the
// bytes are written, and stays true whatever the write, the peer and the
// transport's goroutines report afterwards and in whatever order: a
// write that fails may have written part of its bytes, and one that
// wrote all of them may still report a failure (the connection was
// closed under it). It is false only when the try is proven not to have
// delivered a whole statement: it got no connection; the Dialer's
// connection counted no more bytes written during it than the body's
// length (a coordinator acts only on a whole request, its head and
// ContentLength bytes of body; bytes on the wire, TLS records included,
// are never fewer than the request's own); the transport proved it wrote
// none; or the gate held back the statement's last bytes.
func (e *Exchange) Written() bool {
	switch {
	case !e.connected.Load(), e.unwritten.Load():
		return false
	case e.gated.Load() && e.gate.Load() != gateReleased:
		return false
	}
	if c := e.conn.Load(); c != nil {
		n := c.written.Load() - e.connBase.Load()
		return n > 0 && n > e.bodyLen.Load()
	}
	return true // another dialer's connection: any byte may have gone
}

// Connected reports whether the current try of the submission got a
// connection to write on.
func (e *Exchange) Connected() bool { return e.connected.Load() }

// noteConn is the GotConn hook's record of the try's connection: a
// connection the Dialer made (under TLS, or not) counts the bytes written
// on it, so that a try that wrote none is known to be unsent.
func (e *Exchange) noteConn(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, _ := nc.(*conn)
	if c != nil {
		e.connBase.Store(c.written.Load())
	}
	e.conn.Store(c)
	e.connected.Store(true)
}

// startTry is the GetConn hook: each try of a submission starts unwritten
// (a transport tries again, on a fresh connection, only a request of
// which nothing was written).
func (e *Exchange) startTry() {
	if e.raceDelay > 0 {
		e.tryState.Store(tryWaiting)
	}
	e.connected.Store(false)
	e.unwritten.Store(false)
	e.conn.Store(nil)
}

// LastURL returns the latest follow-up URL requested, or before the first
// one the submission's nextUri; nil when neither is known.
func (e *Exchange) LastURL() *url.URL {
	if u := e.lastURL.Load(); u != nil {
		return u
	}
	if e.firstNextLen.Load() == 0 {
		e.mu.Lock()
		if e.gzipHeadLen > 0 {
			e.noteFirstNext(wire.GunzipHead(e.gzipHead[:e.gzipHeadLen], nextURIScan))
			e.gzipHeadLen = 0
		}
		e.mu.Unlock()
	}
	if n := e.firstNextLen.Load(); n > 0 {
		if u, err := url.Parse(string(e.firstNext[:n])); err == nil {
			return u
		}
	}
	return nil
}

// noteFirstNext keeps the nextUri of the submission's answer in page.
func (e *Exchange) noteFirstNext(page []byte) {
	head := page[:min(len(page), nextURIScan)]
	i := bytes.Index(head, nextURIKey)
	if i < 0 {
		return
	}
	rest := bytes.TrimLeft(head[i+len(nextURIKey):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || rest[0] != '"' {
		return
	}
	rest = rest[1:]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || end > len(e.firstNext) || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return
	}
	copy(e.firstNext[:], rest[:end])
	e.firstNextLen.Store(int32(end))
}

// IsSubmission reports whether req submits a statement: a POST to
// /v1/statement, or a PUT on a statement (the protocol's resubmission).
func IsSubmission(req *http.Request) bool {
	return (req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/v1/statement")) ||
		(req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/v1/statement/"))
}

// Trace returns ctx with e's client trace, which notes each try of a
// submission and its connection (see Written) and checks a reused
// connection before the submission is written on it (see checkReused): the
// context for a submission's request.
func (e *Exchange) Trace(ctx context.Context) context.Context {
	if e.trace.GotConn == nil {
		e.trace.GetConn = func(string) { e.startTry() }
		e.trace.GotConn = func(info httptrace.GotConnInfo) {
			// Noted before the check: a retired connection's write fails
			// with nothing written, and counts none.
			e.noteConn(info.Conn)
			e.connectRace()
			checkReused(info)
		}
	}
	return httptrace.WithClientTrace(ctx, &e.trace)
}

// Submit sends a submission through rt. While Written is false, a failure
// proves the coordinator never saw the statement, and the caller may send
// it elsewhere; once it is true the statement may have started, so it must
// not be sent again. A failure is recorded in e (unless the request's own context
// ended: that is the caller giving up, not the coordinator failing) and
// returned:
//
//   - a refusal (503, 429, 502, 504) is a *RefusedError, not sent: by the
//     protocol the statement was not accepted;
//   - a redirect is a *RedirectError, never followed, and counts as sent;
//   - with WholePages, a cut or malformed 200 answer is a *PageError, sent.
//
// A request net/http would refuse to send is a *RequestError recorded with
// Invalid, not as a failure. The response's body is a *Body that calls
// release, if not nil, when it is closed.
//
// req must carry e's trace (see Trace) in its context, or Submit adds it,
// at the cost of a copy of req.
func Submit(rt http.RoundTripper, req *http.Request, e *Exchange, release func()) (*http.Response, error) {
	if err := wire.CheckHeaders(req.Header); err != nil {
		e.setInvalid(err)
		return nil, err
	}
	if httptrace.ContextClientTrace(req.Context()) != &e.trace {
		req = req.WithContext(e.Trace(req.Context()))
	}
	e.bodyLen.Store(max(req.ContentLength, 0))
	resp, err := rt.RoundTrip(req)
	e.tryState.Store(tryIdle) // the dials of follow-ups are not raced
	if err != nil {
		// A try the Dialer gave up in the dial race fails as its dial
		// does, with nothing written.
		if req.Context().Err() == nil {
			e.Fail(err, e.Written())
		}
		return nil, err
	}
	switch {
	case wire.Refusal(resp.StatusCode):
		err := refusal(resp)
		e.Fail(err, false)
		return nil, err
	case isRedirect(resp.StatusCode):
		discard(resp)
		err := &wire.RedirectError{Status: resp.StatusCode, Location: wire.RedactedLocation(resp)}
		e.Fail(err, true)
		return nil, err
	}
	body, err := e.body(resp, release)
	if err != nil {
		if req.Context().Err() == nil {
			e.Fail(err, true)
		}
		return nil, err
	}
	if body.page != nil {
		page := body.page.Bytes()
		if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
			// Coordinators compress for clients that ask, and the Presto
			// client asks: without decoding, an abandoned submission's query
			// could never be found to cancel. Kept, and decoded by LastURL
			// when that happens.
			e.mu.Lock()
			e.gzipHeadLen = copy(e.gzipHead[:], page)
			e.mu.Unlock()
		} else {
			e.noteFirstNext(page)
		}
	}
	resp.Body = body
	return resp, nil
}

// FollowUp sends a request of a statement that is already running. GETs of
// a nextUri are idempotent and retried on the same coordinator after a
// transport error, a refusal (which a client would otherwise retry for
// minutes, deaf to its caller's deadline) or, with WholePages, a cut or
// malformed page, up to GetRetries times; anything else is sent once. A
// redirect is never followed. A final failure is recorded in e as sent.
// The response's body is a *Body that calls release, if not nil, when it
// is closed.
func FollowUp(rt http.RoundTripper, req *http.Request, e *Exchange, release func()) (*http.Response, error) {
	if err := wire.CheckHeaders(req.Header); err != nil {
		e.setInvalid(err)
		return nil, err
	}
	retries := 0
	if req.Method == http.MethodGet {
		retries = GetRetries
		e.lastURL.Store(req.URL)
	}
	for try := 0; ; try++ {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			switch {
			case wire.Refusal(resp.StatusCode):
				resp, err = nil, refusal(resp)
			case isRedirect(resp.StatusCode):
				discard(resp)
				err := &wire.RedirectError{Status: resp.StatusCode, Location: wire.RedactedLocation(resp)}
				e.Fail(err, true)
				return nil, err
			default:
				body, berr := e.body(resp, release)
				if berr == nil {
					resp.Body = body
					return resp, nil
				}
				resp, err = nil, berr
			}
		}
		if req.Context().Err() != nil {
			return nil, err
		}
		if try >= retries {
			e.Fail(err, true)
			return nil, err
		}
		t := time.NewTimer(time.Duration(try+1) * 50 * time.Millisecond)
		select {
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		case <-t.C:
		}
	}
}

// body returns resp's body wrapped for e: read whole when WholePages asks
// for it and the answer is a 200 of the statement protocol.
func (e *Exchange) body(resp *http.Response, release func()) (*Body, error) {
	b := &Body{ReadCloser: resp.Body, release: release}
	if e.WholePages && resp.StatusCode == http.StatusOK && resp.Request != nil && resp.Request.Method != http.MethodDelete {
		page, err := wire.ReadPage(resp)
		if err != nil {
			return nil, err
		}
		b.page = page
		b.ReadCloser = nil
	}
	return b, nil
}

func isRedirect(status int) bool {
	return status >= 300 && status < 400 && status != http.StatusNotModified
}

// refusal is the error of a refusal status, with what its body says; the
// body is read and closed.
func refusal(resp *http.Response) *wire.RefusedError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, wire.ReasonScan))
	discard(resp)
	return &wire.RefusedError{Status: resp.StatusCode, Message: wire.Reason(resp.Header.Get("Content-Type"), body)}
}

func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	_ = resp.Body.Close()
}

// nextURIKey is the JSON key of a response that has more to fetch.
var nextURIKey = []byte(`"nextUri"`)

// nextURIScan bounds how much of a response is searched for nextURIKey:
// coordinators write it before columns and data, so a large page of rows
// costs nothing extra.
const nextURIScan = 1024

// Body is a response body of an exchange's statement: it calls its
// release function, if any, once it is closed. With WholePages it reads
// from the page read whole. Whether the query still runs is the reader's
// to learn from the page (the driver decodes it whole).
type Body struct {
	io.ReadCloser // nil when page is set
	page          *bytes.Buffer
	release       func()
	closed        bool
}

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	var n int
	var err error
	if b.page != nil {
		n, err = b.page.Read(p)
	} else if b.ReadCloser != nil {
		n, err = b.ReadCloser.Read(p)
	} else {
		return 0, io.EOF
	}
	return n, err
}

// TakePage returns the unread part of a page read whole (WholePages), as
// it came (compressed or not), and hands its buffer over: the body reads
// as ended after it and does not recycle the buffer when closed. It
// returns false for a body that is streamed. It lets a reader that needs
// the whole page keep it without a copy.
func (b *Body) TakePage() ([]byte, bool) {
	if b.page == nil {
		return nil, false
	}
	page := b.page.Bytes()
	b.page = nil
	return page, true
}

// Close closes the body and releases the request.
func (b *Body) Close() error {
	var err error
	if b.ReadCloser != nil {
		err = b.ReadCloser.Close()
	}
	if !b.closed {
		b.closed = true
		if b.page != nil {
			wire.PutPage(b.page)
			b.page = nil
		}
		if b.release != nil {
			b.release()
		}
	}
	return err
}
