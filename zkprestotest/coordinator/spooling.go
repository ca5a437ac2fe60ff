package coordinator

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SpoolingMode is how a Trino coordinator hands out the rows of a client that asks for the
// spooling protocol (X-Trino-Query-Data-Encoding: json): as segments the client downloads
// and then acknowledges, instead of inline data arrays.
type SpoolingMode string

// The spooling modes, after Trino's protocol.spooling.retrieval-mode.
const (
	// SpoolingOff ignores the encoding header: data is always inline.
	SpoolingOff SpoolingMode = ""
	// SpoolingCoordinator serves segments from the coordinator, at
	// /v1/spooled/download/{id} (Trino's coordinator_proxy).
	SpoolingCoordinator SpoolingMode = "coordinator"
	// SpoolingStorage points segment URIs at object storage (a server of the
	// coordinator's own here, on another port): presigned URIs that need the
	// segment's headers (Trino's storage mode, with S3 and SSE-C headers).
	SpoolingStorage SpoolingMode = "storage"
	// SpoolingRedirect serves segment URIs on the coordinator that answer 303 to
	// object storage (Trino's coordinator_storage_redirect).
	SpoolingRedirect SpoolingMode = "redirect"
)

// The header and its value that the storage demands with every download, as a segment's
// headers carry them.
const (
	StorageKeyHeader = "X-Sim-Storage-Key"
	storageKey       = "sim-sse-key"
)

// spooler keeps the segments of one coordinator until they are acknowledged.
type spooler struct {
	mode    SpoolingMode
	inline  bool             // pages under the inlining limits go inline
	storage *httptest.Server // SpoolingStorage and SpoolingRedirect

	mu       sync.Mutex
	segments map[string]*page
	seq      atomic.Int64

	downloads        atomic.Int64 // from the coordinator
	storageDownloads atomic.Int64
	acks             atomic.Int64
}

func newSpooler(mode SpoolingMode) *spooler {
	s := &spooler{mode: mode, segments: make(map[string]*page)}
	if mode == SpoolingStorage || mode == SpoolingRedirect {
		s.storage = httptest.NewServer(http.HandlerFunc(s.serveStorage))
	}
	return s
}

func (s *spooler) close() {
	if s.storage != nil {
		s.storage.Close()
	}
}

// spools reports whether a statement whose client asked for encodings gets segments: the
// coordinator spools and "json" is among them.
func (s *spooler) spools(encodings string) bool {
	if s == nil || s.mode == SpoolingOff {
		return false
	}
	for e := range strings.SplitSeq(encodings, ",") {
		if strings.TrimSpace(e) == "json" {
			return true
		}
	}
	return false
}

// segmentData is the data member of an answer with one spooled segment.
type segmentData struct {
	Encoding string    `json:"encoding"`
	Segments []segment `json:"segments"`
}

type segment struct {
	Type     string              `json:"type"`
	URI      string              `json:"uri,omitempty"`
	AckURI   string              `json:"ackUri,omitempty"`
	Data     []byte              `json:"data,omitempty"` // an inline segment's rows, base64 in JSON
	Metadata segmentMetadata     `json:"metadata"`
	Headers  map[string][]string `json:"headers,omitempty"`
}

type segmentMetadata struct {
	RowOffset   int64  `json:"rowOffset"`
	RowsCount   int64  `json:"rowsCount"`
	SegmentSize int    `json:"segmentSize"`
	ExpiresAt   string `json:"expiresAt,omitempty"` // a spooled segment's: when storage drops it
}

// Inlining limits and the life of a spooled segment, Trino's defaults (trino:
// server/protocol/spooling/SpoolingConfig.java, inlining.max-rows 1000 and
// inlining.max-size 128 kB; the file system spooling manager's segment TTL of 12 h).
const (
	maxInlinedRows  = 1000
	maxInlinedBytes = 128 << 10
	segmentTTL      = 12 * time.Hour
)

// spool keeps p as a segment and returns the data member that points at it, with links
// made by l for the coordinator's own URIs.
func (s *spooler) spool(l linker, p *page) segmentData {
	meta := segmentMetadata{RowOffset: p.first - 1, RowsCount: p.count}
	if s.inline && p.count <= maxInlinedRows && int64(p.count)*int64(p.width) <= maxInlinedBytes {
		// A small page goes inline, its encoded rows base64 in the answer (trino:
		// SpoolingQueryDataProducer inlines below the limits; client/spooling/InlineSegment).
		if rows := p.bytes(); len(rows) <= maxInlinedBytes {
			meta.SegmentSize = len(rows)
			return segmentData{Encoding: "json", Segments: []segment{{Type: "inline", Data: rows, Metadata: meta}}}
		}
	}
	id := fmt.Sprintf("seg%d", s.seq.Add(1))
	s.mu.Lock()
	s.segments[id] = p
	s.mu.Unlock()
	seg := segment{
		Type:     "spooled",
		URI:      l.abs("/v1/spooled/download/" + id),
		AckURI:   l.abs("/v1/spooled/ack/" + id),
		Metadata: meta,
	}
	seg.Metadata.SegmentSize = p.size()
	// When the storage drops the segment, as an ISO-8601 instant (trino:
	// SpooledSegment metadata "expiresAt", from the segment handle's expiration).
	seg.Metadata.ExpiresAt = time.Now().Add(segmentTTL).UTC().Format(time.RFC3339Nano)
	if s.mode == SpoolingStorage {
		seg.URI = s.storageURI(id)
		seg.Headers = map[string][]string{StorageKeyHeader: {storageKey}}
	}
	return segmentData{Encoding: "json", Segments: []segment{seg}}
}

// storageURI is the presigned URI of segment id on the storage.
func (s *spooler) storageURI(id string) string {
	return s.storage.URL + "/bucket/" + id + "?X-Sim-Signature=" + signature(id)
}

func signature(id string) string { return "sig-" + id }

func (s *spooler) segment(id string) (*page, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.segments[id]
	return p, ok
}

// serveDownload answers GET /v1/spooled/download/{id} on the coordinator.
func (s *spooler) serveDownload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, ok := s.segment(id)
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "no segment "+id)
	case s.mode == SpoolingRedirect:
		http.Redirect(w, r, s.storageURI(id), http.StatusSeeOther)
	case s.mode == SpoolingCoordinator:
		s.downloads.Add(1)
		writeSegment(w, p)
	default:
		writeError(w, http.StatusNotFound, "segments are on the storage")
	}
}

// serveAck answers GET /v1/spooled/ack/{id}: the segment is gone.
func (s *spooler) serveAck(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	_, ok := s.segments[id]
	delete(s.segments, id)
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "no segment "+id)
		return
	}
	s.acks.Add(1)
	w.WriteHeader(http.StatusOK)
}

// serveStorage is the object storage: a segment for its presigned URI only, and in
// SpoolingStorage only with the header the segment names (the URIs a coordinator redirects
// to carry all they need).
func (s *spooler) serveStorage(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/bucket/")
	keyed := s.mode != SpoolingStorage || r.Header.Get(StorageKeyHeader) == storageKey
	if !ok || r.URL.Query().Get("X-Sim-Signature") != signature(id) || !keyed {
		http.Error(w, "AccessDenied", http.StatusForbidden)
		return
	}
	p, ok := s.segment(id)
	if !ok {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	s.storageDownloads.Add(1)
	writeSegment(w, p)
}

// writeSegment sends p's rows, a JSON array, as segment data.
func writeSegment(w http.ResponseWriter, p *page) {
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := bufio.NewWriterSize(w, 64<<10)
	p.writeTo(bw)
	_ = bw.Flush()
}

// size is the length of p's rows as a JSON array.
func (p *page) size() int { return len(p.bytes()) }

// bytes is p's rows as a JSON array.
func (p *page) bytes() []byte {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	p.writeTo(bw)
	_ = bw.Flush()
	return b.Bytes()
}

// SegmentDownloads reports how many spooled segments clients downloaded from the
// coordinator and from its storage, and how many they acknowledged.
func (c *Coordinator) SegmentDownloads() (fromCoordinator, fromStorage, acked int64) {
	if c.spool == nil {
		return 0, 0, 0
	}
	return c.spool.downloads.Load(), c.spool.storageDownloads.Load(), c.spool.acks.Load()
}
