package coordinator

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// spooledStatement runs sql on c as a Trino client that accepts the json
// spooling encoding, downloads and acknowledges every segment with its
// headers (following redirects, as clients do), and returns the rows and
// the segment URIs.
func spooledStatement(t *testing.T, base, sql string) (rows [][]any, uris []string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader(sql))
	for {
		req.Header.Set("X-Trino-User", "alice")
		req.Header.Set("X-Trino-Query-Data-Encoding", "json+zstd,json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			NextURI string          `json:"nextUri"`
			Data    json.RawMessage `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s, %v", req.Method, req.URL, resp.Status, err)
		}
		if len(answer.Data) > 0 {
			var data segmentData
			if err := json.Unmarshal(answer.Data, &data); err != nil || data.Encoding != "json" {
				t.Fatalf("data %s is not spooled json segments: %v", answer.Data, err)
			}
			for _, seg := range data.Segments {
				uris = append(uris, seg.URI)
				get, _ := http.NewRequest(http.MethodGet, seg.URI, nil)
				for k, v := range seg.Headers {
					get.Header[k] = v
				}
				resp, err := http.DefaultClient.Do(get)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || len(b) != seg.Metadata.SegmentSize {
					t.Fatalf("segment %s: %s, %d bytes, metadata says %d", seg.URI, resp.Status, len(b), seg.Metadata.SegmentSize)
				}
				var part [][]any
				if err := json.Unmarshal(b, &part); err != nil || int64(len(part)) != seg.Metadata.RowsCount || seg.Metadata.RowOffset != int64(len(rows)) {
					t.Fatalf("segment %s: %d rows at %d (%v), metadata %+v", seg.URI, len(part), len(rows), err, seg.Metadata)
				}
				rows = append(rows, part...)
				ack, err := http.Get(seg.AckURI)
				if err != nil {
					t.Fatal(err)
				}
				ack.Body.Close()
				if ack.StatusCode != http.StatusOK {
					t.Fatalf("ack %s: %s", seg.AckURI, ack.Status)
				}
			}
		}
		if answer.NextURI == "" {
			return rows, uris
		}
		req, _ = http.NewRequest(http.MethodGet, answer.NextURI, nil)
	}
}

// Each spooling mode hands out every row once, in order, in segments
// whose metadata is right, from where the mode says; acknowledged
// segments are gone.
func TestSpooling(t *testing.T) {
	for _, tc := range []struct {
		mode                         SpoolingMode
		fromCoordinator, fromStorage int64
	}{
		{SpoolingCoordinator, 3, 0},
		{SpoolingStorage, 0, 3},
		{SpoolingRedirect, 0, 3},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			c, err := Start(Options{Flavour: Trino, Spooling: tc.mode, BatchRows: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rows, uris := spooledStatement(t, c.URL(), "SELECT * FROM rows(10)")
			if len(rows) != 10 {
				t.Fatalf("%d rows, want 10", len(rows))
			}
			for i, row := range rows {
				if n, _ := row[0].(float64); int(n) != i+1 {
					t.Fatalf("row %d is %v", i, row)
				}
			}
			onCoordinator := strings.HasPrefix(uris[0], c.URL()+"/v1/spooled/download/")
			if onCoordinator != (tc.mode != SpoolingStorage) {
				t.Errorf("segment URI %s (coordinator %s)", uris[0], c.URL())
			}
			coord, storage, acked := c.SegmentDownloads()
			if coord != tc.fromCoordinator || storage != tc.fromStorage || acked != 3 {
				t.Errorf("downloads from the coordinator %d, from storage %d, acks %d; want %d, %d, 3", coord, storage, acked, tc.fromCoordinator, tc.fromStorage)
			}
			if resp, err := http.Get(strings.Replace(uris[0], "download", "ack", 1)); err == nil {
				resp.Body.Close()
				if tc.mode != SpoolingStorage && resp.StatusCode != http.StatusNotFound {
					t.Errorf("second ack of a segment: %s, want 404", resp.Status)
				}
			}
		})
	}
}

// Without "json" among the client's encodings, or on a coordinator that
// does not spool, the rows are inline; the storage refuses a download
// without the segment's header.
func TestSpoolingOnlyWhenAsked(t *testing.T) {
	c, err := Start(Options{Flavour: Trino, Spooling: SpoolingStorage})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.spool.spools("json") || c.spool.spools("json+zstd") || c.spool.spools("") {
		t.Error("spools() does not go by the json encoding")
	}
	var none *spooler
	if none.spools("json") {
		t.Error("a coordinator without spooling spools")
	}
	p := &page{first: 1, count: 2}
	c.spool.spool(linker{base: c.URL()}, p)
	resp, err := http.Get(c.spool.storageURI("seg1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("download without the storage key: %s, want 403", resp.Status)
	}
}
