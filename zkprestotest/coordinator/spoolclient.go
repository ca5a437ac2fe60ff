package coordinator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// SpooledSegment is a spooled segment as a client read it.
type SpooledSegment struct {
	// URI and AckURI are the segment's, as the answer gave them.
	URI, AckURI string
	// Headers are the headers its download needs, as the answer gave them.
	Headers map[string][]string
	// RowOffset, RowsCount and SegmentSize are its metadata, and ExpiresAt a spooled
	// one's expiry as the metadata gave it.
	RowOffset, RowsCount int64
	SegmentSize          int
	ExpiresAt            string
	// Inline tells that the rows came in the answer (type "inline"), not downloaded.
	Inline bool
	// Downloaded is the number of bytes its download gave, or its inline data had.
	Downloaded int
}

// SpooledResult is what RunSpooled read.
type SpooledResult struct {
	// Rows are the rows of every segment, in order (numbers as float64).
	Rows [][]any
	// Segments are the segments, in order.
	Segments []SpooledSegment
}

// RunSpooled runs sql through base (a coordinator, or a proxy in front of
// one) as a Trino client that accepts the json spooling encoding: it
// follows every nextUri, downloads every segment with its headers
// (following a redirect to the storage, as clients do) and acknowledges
// it. An error names what failed: a status other than 200, an answer or a
// segment that is not what the protocol says, rows that do not match
// their segment's metadata.
func RunSpooled(base, sql string) (*SpooledResult, error) {
	res := &SpooledResult{}
	method, uri, body := http.MethodPost, base+"/v1/statement", sql
	for uri != "" {
		req, err := http.NewRequest(method, uri, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-Trino-User", "alice")
		req.Header.Set("X-Trino-Query-Data-Encoding", "json+zstd,json")
		var answer struct {
			NextURI string          `json:"nextUri"`
			Data    json.RawMessage `json:"data"`
		}
		if err := decodeAnswer(req, &answer); err != nil {
			return nil, err
		}
		if len(answer.Data) > 0 {
			var data segmentData
			if err := json.Unmarshal(answer.Data, &data); err != nil || data.Encoding != "json" {
				return nil, fmt.Errorf("data %s is not spooled json segments: %w", answer.Data, err)
			}
			for _, seg := range data.Segments {
				got, err := res.download(seg)
				if err != nil {
					return nil, err
				}
				res.Segments = append(res.Segments, got)
			}
		}
		method, uri, body = http.MethodGet, answer.NextURI, ""
	}
	return res, nil
}

// download fetches seg, appends its rows and acknowledges it.
func (res *SpooledResult) download(seg segment) (SpooledSegment, error) {
	got := SpooledSegment{URI: seg.URI, AckURI: seg.AckURI, Headers: seg.Headers,
		RowOffset: seg.Metadata.RowOffset, RowsCount: seg.Metadata.RowsCount, SegmentSize: seg.Metadata.SegmentSize,
		ExpiresAt: seg.Metadata.ExpiresAt, Inline: seg.Type == "inline"}
	switch seg.Type {
	case "inline":
		got.Downloaded = len(seg.Data)
		return got, res.appendRows(got, seg.Data)
	case "spooled":
	default:
		return got, fmt.Errorf("segment of type %q", seg.Type)
	}
	req, err := http.NewRequest(http.MethodGet, seg.URI, nil)
	if err != nil {
		return got, err
	}
	for k, v := range seg.Headers {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return got, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return got, fmt.Errorf("segment %s: %s %q, %v", seg.URI, resp.Status, b, err)
	}
	got.Downloaded = len(b)
	if err := res.appendRows(got, b); err != nil {
		return got, err
	}
	ack, err := http.Get(seg.AckURI)
	if err != nil {
		return got, err
	}
	ack.Body.Close()
	if ack.StatusCode != http.StatusOK {
		return got, fmt.Errorf("ack %s: %s", seg.AckURI, ack.Status)
	}
	return got, nil
}

// appendRows appends the rows of seg, b, checking them against its metadata.
func (res *SpooledResult) appendRows(seg SpooledSegment, b []byte) error {
	var part [][]any
	if err := json.Unmarshal(b, &part); err != nil || int64(len(part)) != seg.RowsCount || seg.RowOffset != int64(len(res.Rows)) {
		return fmt.Errorf("segment %s: %d rows after %d (%v), metadata offset %d, count %d", seg.URI, len(part), len(res.Rows), err, seg.RowOffset, seg.RowsCount)
	}
	res.Rows = append(res.Rows, part...)
	return nil
}

// decodeAnswer sends req and decodes its 200 answer into v.
func decodeAnswer(req *http.Request, v any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s %s: %s %s", req.Method, req.URL, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
	}
	return nil
}
