package driver

import (
	"bytes"
	"compress/gzip"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// presto-go-client v2.1.1 parses "timestamp with time zone" values only
// with a numeric offset or an abbreviation, so a value in a named zone
// ("2024-05-06 07:08:09.123 Europe/Paris", what Presto returns for a
// session in that zone) fails the whole result, and the row is consumed by
// then. The transport therefore relabels such columns as varchar in each
// page, so the client hands the text back as it is, and the rows wrapper
// parses it (see tstzColumns). Only pages whose column list names the type
// are touched; the others are handed on as they came, compressed or not.

// pageScanLimit bounds the decoded start of a page looked at for its
// column list; a page whose "data" starts later is read whole.
const pageScanLimit = 1 << 20

// pageRetain is the largest buffer the pool keeps.
const pageRetain = 64 << 10

var (
	dataKey     = []byte(`"data":`)
	withTimeTZ  = []byte(`with time zone`)
	peekPool    = sync.Pool{New: func() any { return new(pagePeek) }}
	varcharType = json.RawMessage(`"varchar"`)
	varcharSig  = json.RawMessage(`{"rawType":"varchar","arguments":[]}`)
)

// tstzColumns records which columns of a statement's result were
// relabelled: types[i] is column i's original type, "" for the others.
type tstzColumns struct{ types []string }

// isTSTZ reports whether t is Presto's "timestamp with time zone" or
// Trino's "timestamp(p) with time zone".
func isTSTZ(t string) bool {
	t = strings.ToLower(strings.TrimSpace(t))
	rest, ok := strings.CutPrefix(t, "timestamp")
	if !ok {
		return false
	}
	if strings.HasPrefix(rest, "(") {
		i := strings.IndexByte(rest, ')')
		if i < 0 {
			return false
		}
		rest = rest[i+1:]
	}
	return strings.TrimSpace(rest) == "with time zone"
}

// relabelPage hands resp on, with its page relabelled and decoded when its
// column list has a timestamp with time zone (recording them in a). The
// common case costs no allocation: the peek buffers come from a pool and
// return to it when the body is closed.
func relabelPage(resp *http.Response, a *attempt) {
	if resp.Body == nil || resp.Body == http.NoBody || a.columnsPlain.Load() {
		return
	}
	p := peekPool.Get().(*pagePeek)
	p.start(resp.Body)
	gzipped := strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip")
	head, complete := p.scan(gzipped)
	i := bytes.Index(head, dataKey)
	if i >= 0 || complete {
		if i >= 0 {
			head = head[:i]
		}
		if !bytes.Contains(head, withTimeTZ) {
			if bytes.Contains(head, []byte(`"columns":`)) {
				// The columns of a query do not change from page to page.
				a.columnsPlain.Store(true)
			}
			resp.Body = p // replays what was read, then the rest
			return
		}
	}
	// The page may name the type: read it whole and relabel it.
	page, err := p.readAll(gzipped)
	body := p.body
	p.body = nil
	p.recycle()
	if err != nil {
		resp.Body = &pageBody{Reader: bytes.NewReader(page), err: err, orig: body}
	} else {
		out, cols := relabel(page)
		if cols != nil {
			a.tstz.Store(cols)
		}
		resp.Body = &pageBody{Reader: bytes.NewReader(out), orig: body}
		page = out
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = int64(len(page))
	resp.Uncompressed = gzipped
}

// relabel returns page with its timestamp with time zone columns typed as
// varchar, and which they were; page as it is (and nil) when it has none
// or is not a JSON object, for the client to judge.
func relabel(page []byte) ([]byte, *tstzColumns) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(page, &doc) != nil {
		return page, nil
	}
	var cols []map[string]json.RawMessage
	if json.Unmarshal(doc["columns"], &cols) != nil {
		return page, nil
	}
	found := &tstzColumns{types: make([]string, len(cols))}
	changed := false
	for i, c := range cols {
		var typ string
		if json.Unmarshal(c["type"], &typ) != nil || !isTSTZ(typ) {
			continue
		}
		found.types[i] = typ
		c["type"], c["typeSignature"] = varcharType, varcharSig
		changed = true
	}
	if !changed {
		return page, nil
	}
	b, err := marshalNoEscape(cols)
	if err != nil {
		return page, nil
	}
	doc["columns"] = b
	out, err := marshalNoEscape(doc)
	if err != nil {
		return page, nil
	}
	return out, found
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// pagePeek reads the start of a page and then serves as its body: what it
// read first, then the rest. In a gzip page it decodes the start from the
// bytes it keeps, which it replays compressed.
type pagePeek struct {
	body   io.ReadCloser
	raw    []byte // bytes read from body, as they came
	pos    int    // how much of raw the decoder consumed
	dec    []byte // the decoded start of a gzip page
	err    error  // body's error after raw, io.EOF included
	off    int    // how much of raw was replayed
	closed bool
	zr     gzip.Reader
}

func (p *pagePeek) start(body io.ReadCloser) {
	p.body, p.raw, p.pos, p.dec, p.err, p.off, p.closed = body, p.raw[:0], 0, p.dec[:0], nil, 0, false
}

// fill reads more of body into raw.
func (p *pagePeek) fill() error {
	if p.err != nil {
		return p.err
	}
	if len(p.raw) == cap(p.raw) {
		p.raw = append(p.raw, make([]byte, max(4096, cap(p.raw)))...)[:len(p.raw)]
	}
	n, err := p.body.Read(p.raw[len(p.raw):cap(p.raw)])
	p.raw = p.raw[:len(p.raw)+n]
	if err != nil {
		p.err = err
		if n == 0 {
			return err
		}
	}
	return nil
}

// peekSource feeds the gzip decoder from raw, reading more as needed. It
// is not pagePeek's own Read: that one replays raw to the client, and a
// ReadByte on pagePeek would be taken by the client's decoder.
type peekSource struct{ p *pagePeek }

func (s peekSource) Read(b []byte) (int, error) {
	p := s.p
	for p.pos == len(p.raw) {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.raw[p.pos:])
	p.pos += n
	return n, nil
}

func (s peekSource) ReadByte() (byte, error) {
	p := s.p
	for p.pos == len(p.raw) {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	p.pos++
	return p.raw[p.pos-1], nil
}

// scan reads until the decoded start holds "data":, the page ends or
// pageScanLimit is reached, and returns that start and whether it is the
// whole page.
func (p *pagePeek) scan(gzipped bool) (head []byte, complete bool) {
	if !gzipped {
		for !bytes.Contains(p.raw, dataKey) && len(p.raw) < pageScanLimit {
			if p.fill() != nil {
				return p.raw, true
			}
		}
		return p.raw, false
	}
	if p.zr.Reset(peekSource{p}) != nil {
		return nil, true // not gzip after all: the client will say so
	}
	p.zr.Multistream(false)
	for !bytes.Contains(p.dec, dataKey) && len(p.dec) < pageScanLimit {
		if len(p.dec) == cap(p.dec) {
			p.dec = append(p.dec, make([]byte, max(4096, cap(p.dec)))...)[:len(p.dec)]
		}
		n, err := p.zr.Read(p.dec[len(p.dec):cap(p.dec)])
		p.dec = p.dec[:len(p.dec)+n]
		if err != nil {
			return p.dec, true
		}
	}
	return p.dec, false
}

// readAll returns the whole decoded page.
func (p *pagePeek) readAll(gzipped bool) ([]byte, error) {
	if !gzipped {
		for p.fill() == nil {
		}
		page := bytes.Clone(p.raw)
		if p.err == io.EOF {
			return page, nil
		}
		return page, p.err
	}
	var buf bytes.Buffer
	buf.Write(p.dec)
	if _, err := io.Copy(&buf, &p.zr); err != nil {
		return buf.Bytes(), err
	}
	return buf.Bytes(), nil
}

// Read replays what scan read, then reads on.
func (p *pagePeek) Read(b []byte) (int, error) {
	if p.off < len(p.raw) {
		n := copy(b, p.raw[p.off:])
		p.off += n
		return n, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	return p.body.Read(b)
}

// Close closes the page's body and returns the peek to the pool.
func (p *pagePeek) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.body.Close()
	p.body = nil
	p.recycle()
	return err
}

func (p *pagePeek) recycle() {
	if cap(p.raw) > pageRetain || cap(p.dec) > pageRetain {
		return // let a large page's buffers go
	}
	p.err = nil
	peekPool.Put(p)
}

// pageBody is a relabelled page; closing it closes the original body.
type pageBody struct {
	*bytes.Reader
	err  error // the original body's read error, after the page
	orig io.ReadCloser
}

func (b *pageBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF && b.err != nil {
		return n, b.err
	}
	return n, err
}

func (b *pageBody) Close() error { return b.orig.Close() }

// zones caches loaded locations: LoadLocation reads the zone database.
var zones sync.Map // name → *time.Location

// parseTSTZ parses a Presto timestamp with time zone value: a date, a
// time with an optional fraction, and a zone ID (Europe/Paris), UTC or a
// numeric offset (+02:00).
func parseTSTZ(s string) (time.Time, error) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return time.Time{}, fmt.Errorf("zkpresto: timestamp with time zone %q: no zone", s)
	}
	loc, err := zoneOf(s[i+1:])
	if err != nil {
		return time.Time{}, fmt.Errorf("zkpresto: timestamp with time zone %q: %w", s, err)
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s[:i], loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("zkpresto: timestamp with time zone %q: %w", s, err)
	}
	return t, nil
}

func zoneOf(z string) (*time.Location, error) {
	if l, ok := zones.Load(z); ok {
		return l.(*time.Location), nil
	}
	var loc *time.Location
	switch {
	case z == "UTC" || z == "Z":
		loc = time.UTC
	case strings.HasPrefix(z, "+") || strings.HasPrefix(z, "-"):
		h, m, ok := strings.Cut(z[1:], ":")
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || hh > 14 || mm > 59 {
			return nil, fmt.Errorf("bad offset %q", z)
		}
		secs := hh*3600 + mm*60
		if z[0] == '-' {
			secs = -secs
		}
		loc = time.FixedZone(z, secs)
	default:
		var err error
		if loc, err = time.LoadLocation(z); err != nil {
			return nil, err
		}
	}
	zones.Store(z, loc)
	return loc, nil
}

// convertTSTZ turns the relabelled columns of a row into time.Time.
func convertTSTZ(cols *tstzColumns, dest []driver.Value) error {
	for i, typ := range cols.types {
		if typ == "" || i >= len(dest) || dest[i] == nil {
			continue
		}
		s, ok := dest[i].(string)
		if !ok {
			return fmt.Errorf("zkpresto: column %d (%s): got %T, want its text", i, typ, dest[i])
		}
		t, err := parseTSTZ(s)
		if err != nil {
			return err
		}
		dest[i] = t
	}
	return nil
}

var timeType = reflect.TypeFor[time.Time]()

// attemptTSTZ is the part of an attempt the relabelling uses.
type attemptTSTZ struct {
	// tstz holds the relabelled columns of the statement's result.
	tstz atomic.Pointer[tstzColumns]
	// columnsPlain says a page's column list had no timestamp with time
	// zone: later pages of the statement are not looked at.
	columnsPlain atomic.Bool
}
