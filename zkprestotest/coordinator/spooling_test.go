package coordinator

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

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
			c, err := Start(Options{Flavour: Trino, Spooling: tc.mode, NoInlining: true, BatchRows: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := RunSpooled(c.URL(), "SELECT * FROM rows(10)")
			if err != nil {
				t.Fatal(err)
			}
			rows := res.Rows
			var uris []string
			for _, seg := range res.Segments {
				uris = append(uris, seg.URI)
				if seg.Downloaded != seg.SegmentSize {
					t.Fatalf("segment %s: %d bytes, metadata says %d", seg.URI, seg.Downloaded, seg.SegmentSize)
				}
			}
			for _, seg := range res.Segments {
				if seg.Inline {
					t.Fatalf("an inline segment with NoInlining: %+v", seg)
				}
				if exp, err := time.Parse(time.RFC3339Nano, seg.ExpiresAt); err != nil || !exp.After(time.Now()) {
					t.Fatalf("segment %s expiresAt %q (%v), want a time to come", seg.URI, seg.ExpiresAt, err)
				}
			}
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
	c, err := Start(Options{Flavour: Trino, Spooling: SpoolingStorage, NoInlining: true})
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

// By default a page of at most 1000 rows and 128 kB goes inline, its rows base64 in the
// answer, as Trino's spooling protocol inlines them; larger ones are spooled.
func TestSpoolingInlinesSmallPages(t *testing.T) {
	for _, mode := range []SpoolingMode{SpoolingCoordinator, SpoolingStorage, SpoolingRedirect} {
		t.Run(string(mode), func(t *testing.T) {
			c, err := Start(Options{Flavour: Trino, Spooling: mode, BatchRows: 1200})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Pages of 1200, 1200 and 100 rows: two spooled, then one inline.
			res, err := RunSpooled(c.URL(), "SELECT * FROM rows(2500)")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != 2500 || len(res.Segments) != 3 {
				t.Fatalf("%d rows in %d segments, want 2500 in 3", len(res.Rows), len(res.Segments))
			}
			for i, seg := range res.Segments {
				if seg.Inline != (i == 2) {
					t.Errorf("segment %d (%d rows): inline %v", i, seg.RowsCount, seg.Inline)
				}
				if seg.Inline && (seg.URI != "" || seg.ExpiresAt != "" || seg.Downloaded != seg.SegmentSize) {
					t.Errorf("inline segment %+v", seg)
				}
			}
			for i, row := range res.Rows {
				if n, _ := row[0].(float64); int(n) != i+1 {
					t.Fatalf("row %d is %v", i, row)
				}
			}
			coord, storage, acked := c.SegmentDownloads()
			if coord+storage != 2 || acked != 2 {
				t.Errorf("%d downloads, %d acks; want 2 of the spooled segments", coord+storage, acked)
			}
			// bigrows of 200 kB a row: too large to inline, though one row.
			res, err = RunSpooled(c.URL(), "SELECT * FROM bigrows(1, 204800)")
			if err != nil || len(res.Segments) != 1 || res.Segments[0].Inline {
				t.Fatalf("a 200 kB page: %+v, %v; want one spooled segment", res, err)
			}
		})
	}
}
