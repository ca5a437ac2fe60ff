package gateway

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/zkpresto/zkpresto/internal/gateway/rewrite"
	"github.com/zkpresto/zkpresto/internal/gateway/token"
)

// copyBufferSize is the relay's buffer: the memory one query costs, however
// large its pages.
const copyBufferSize = 32 << 10

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// gzipWriters compress answers for clients at gzip.BestSpeed, nginx's
// default gzip_comp_level: the default level's writer clears 640 KB of
// match tables at every Reset, which for an answer of a few hundred bytes
// costs more than the answer's own compression, and it compresses large
// pages at half the speed for some 10% fewer bytes.
var gzipWriters = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return gz
}}

// smallAnswerBytes is the size up to which an answer goes to the client
// uncompressed, in one write with a Content-Length: it fits one Ethernet
// packet either way, so compressing it saves no round trip, only a few
// hundred bytes, at the cost of a gzip stream (some 30 µs of CPU on a
// small machine for a 600-byte answer). Presto's answers while a query
// is queued or running are about this size.
const smallAnswerBytes = 1400

// relay streams a coordinator's answer to the client: status, headers (the
// transaction id wrapped so that the transaction's next statements come
// back to its coordinator) and the body with every URI rewritten to the
// gateway, compressed when the client asked for it and the answer is
// larger than smallAnswerBytes. It returns an error when the answer could
// not be relayed whole, and whether anything of it was written to the
// client: if so, the client's connection must be cut, so that it never
// takes half a page for a whole one; if not, the client may still get an
// error answer (see unsent). A relayed answer is noted for a drain: id is
// the query the request was about (empty for a submission).
func (g *Gateway) relay(w http.ResponseWriter, r *http.Request, resp *http.Response, base, id string) (written bool, err error) {
	_, written, err = g.relayAnswer(w, r, resp, base, id)
	return written, err
}

// relayAnswer is relay, which also returns the answer's nextUri on the
// coordinator, as far as it was read: the query to cancel when the client
// did not get the answer.
func (g *Gateway) relayAnswer(w http.ResponseWriter, r *http.Request, resp *http.Response, base, id string) (nextURI string, written bool, err error) {
	defer resp.Body.Close()
	defer func() {
		// A HEAD's answer has no body, so no nextUri: it says nothing of whether the
		// query has more pages (the coordinator runs it as a GET, which may have
		// consumed one; the client's GET of the same token replays it).
		if err == nil && r.Method != http.MethodHead {
			g.running.answered(id, resp.StatusCode, nextURI)
		}
	}()
	h := w.Header()
	copyAnswerHeader(h, resp.Header)
	g.wrapTransaction(h, base)
	if resp.StatusCode == http.StatusUnauthorized {
		// An OAuth2 challenge names the coordinator's own token URIs.
		g.rewriteChallenge(h, g.publicBase(r), base)
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		// Asked for identity, got gzip anyway: decode to rewrite.
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nextURI, false, err
		}
		defer gz.Close()
		body = gz
	}
	h.Del("Content-Encoding")
	if r.Method == http.MethodHead {
		w.WriteHeader(resp.StatusCode)
		return nextURI, true, nil
	}
	if rewritable(resp) {
		public := g.publicBase(r)
		rw := rewrite.New(body, func(field rewrite.Field, uri string) (string, error) {
			if (field == rewrite.SegmentURI || field == rewrite.SegmentAckURI) && !onHost(uri, base) {
				// A spooled segment on object storage (a presigned URI) or
				// on a worker: the client fetches it there itself, with the
				// segment's headers, as it would without the gateway.
				return uri, nil
			}
			if field == rewrite.NextURI {
				nextURI = uri
			}
			return g.gatewayURI(public, base, uri)
		})
		defer rw.Release()
		body = rw
	}
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// The head of the answer first: one that ends within it is written
	// whole, uncompressed, in one write (the server gives it its
	// Content-Length). Holding it costs the client nothing, as no client
	// reads an answer before it is whole.
	head, err := io.ReadFull(body, (*buf)[:smallAnswerBytes])
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		// Said here, not left to the server: it holds for an answer
		// flushed before the handler returns too.
		h.Set("Content-Length", strconv.Itoa(head))
		w.WriteHeader(resp.StatusCode)
		_, err = w.Write((*buf)[:head])
		return nextURI, true, err
	}
	if err != nil {
		return nextURI, false, err
	}
	var out io.Writer = w
	if resp.StatusCode == http.StatusOK && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		gz := gzipWriters.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			if cerr := gz.Close(); err == nil {
				err = cerr
			}
			gzipWriters.Put(gz)
		}()
		out = gz
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := out.Write((*buf)[:head]); err != nil {
		return nextURI, true, err
	}
	flusher, _ := w.(http.Flusher)
	for {
		n, err := body.Read(*buf)
		if n > 0 {
			if _, werr := out.Write((*buf)[:n]); werr != nil {
				return nextURI, true, werr
			}
		}
		if err == io.EOF {
			return nextURI, true, nil
		}
		if err != nil {
			return nextURI, true, err
		}
		if n < len(*buf) && flusher != nil {
			// The coordinator paused (a long poll, a slow page): pass on
			// what came so far instead of holding it.
			if gz, ok := out.(*gzip.Writer); ok {
				gz.Flush()
			}
			flusher.Flush()
		}
	}
}

// unsent clears the answer headers a failed relay copied before it wrote
// anything, so that the error answer the client gets instead carries none
// of the coordinator's (a session change, a transaction id).
func unsent(w http.ResponseWriter) {
	clear(w.Header())
}

// gatewayURI is the gateway's URI for a coordinator's: the same path and
// query behind a routing token for the coordinator base and the query.
// The URI's own host is not trusted: the token names the coordinator the
// gateway picked, whatever host the coordinator wrote.
func (g *Gateway) gatewayURI(public, base, uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	rest := u.EscapedPath()
	if u.RawQuery != "" {
		rest += "?" + u.RawQuery
	}
	after, onPublic := onPublicBase(public, uri)
	reparse := onPublic
	if onPublic {
		rest = after
	}
	if tok, path, ok := token.Split(rest); ok {
		// Already a gateway URI (a coordinator that builds its URIs from
		// forwarding headers, or a proxy on the way that rewrote them):
		// never wrapped twice. One on the public base whose token names this
		// coordinator for this query is kept byte for byte; any other token
		// is replaced, so that a client only ever holds tokens for the
		// coordinator that answered, signed by this gateway.
		p, q, _ := strings.Cut(path, "?")
		id := queryIDOf(pathUnescape(p), q)
		if b, err := g.keys.Verify(tok, id); err == nil && b == base && onPublic {
			if id != "" {
				g.queries.remember(id, base)
			}
			return uri, nil
		}
		rest, reparse = path, true
	}
	if reparse {
		if u, err = url.Parse(rest); err != nil {
			return "", err
		}
	}
	id := queryIDOf(u.Path, u.RawQuery)
	if id != "" {
		g.queries.remember(id, base)
	}
	tok, err := g.keys.Sign(base, id)
	if err != nil {
		return "", err
	}
	return public + token.Prefix(tok) + rest, nil
}

// spooled reports whether path is one of a coordinator's spooled-segment
// resources (download or acknowledgement).
func spooled(path string) bool { return strings.HasPrefix(path, "/v1/spooled/") }

// onHost reports whether uri is on the host of base.
func onHost(uri, base string) bool {
	u, err := url.Parse(uri)
	return err == nil && strings.EqualFold(u.Host, hostOf(base))
}

// onPublicBase reports whether uri is on the gateway's public base URL,
// and returns what follows it (a path from '/', with its query).
func onPublicBase(public, uri string) (string, bool) {
	after, ok := strings.CutPrefix(uri, public)
	if !ok || after == "" || after[0] != '/' {
		return "", false
	}
	return after, true
}

// pathUnescape decodes an escaped path, or keeps it when it is malformed
// (its query id then matches no token).
func pathUnescape(p string) string {
	if d, err := url.PathUnescape(p); err == nil {
		return d
	}
	return p
}

// queryIDOf finds the query id in a Presto URI: the segment after the
// phase of /v1/statement/{phase}/{id}/... (after partialCancel for a
// partial cancel), after /v1/query/, or the query of /ui/query.html?{id}.
func queryIDOf(path, rawQuery string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		switch parts[i] {
		case "statement":
			j := i + 2
			if j < len(parts) && parts[j] == "partialCancel" {
				j++
			}
			if j < len(parts) {
				return parts[j]
			}
			return ""
		case "query":
			return parts[i+1]
		}
	}
	if strings.HasPrefix(path, "/ui/") && rawQuery != "" {
		id, _, _ := strings.Cut(rawQuery, "&")
		return strings.TrimPrefix(id, "id=")
	}
	return ""
}

// rewritable reports whether resp's body is a protocol answer whose URIs
// are rewritten: a JSON body, or an untyped one on a 200; never an empty
// one (a 204 to a DELETE), nor a spooled segment's.
func rewritable(resp *http.Response) bool {
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified || resp.ContentLength == 0 {
		return false
	}
	if resp.Request != nil && spooled(resp.Request.URL.Path) {
		return false // segment data, or an acknowledgement: no URIs in them
	}
	ct := resp.Header.Get("Content-Type")
	return strings.Contains(ct, "json") || (ct == "" && resp.StatusCode == http.StatusOK)
}

func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, enc := range strings.Split(v, ",") {
			name, q, _ := strings.Cut(strings.TrimSpace(enc), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(q) != "q=0" {
				return true
			}
		}
	}
	return false
}
