package gateway_test

import (
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Trino's spooling protocol through two replicas, in each of the
// coordinator's retrieval modes: segment URIs on the coordinator go
// through the gateway under a routing token, presigned storage URIs are
// kept byte for byte with their headers (the client fetches them itself),
// a coordinator's redirect to storage reaches the client, the segments'
// data passes unchanged, and every row arrives once, in order, with every
// segment acknowledged.
func TestSpoolingThroughTheGateway(t *testing.T) {
	for _, mode := range []coordinator.SpoolingMode{coordinator.SpoolingCoordinator, coordinator.SpoolingStorage, coordinator.SpoolingRedirect} {
		t.Run(string(mode), func(t *testing.T) {
			s := newSetupFor(t, 2, coordinator.Options{Flavour: coordinator.Trino, Spooling: mode, NoInlining: true, BatchRows: 4}, gateway.Trino, nil)
			viaGateway := s.front.URL + "/_zk/"
			res, err := coordinator.RunSpooled(s.front.URL, "SELECT * FROM rows(10)")
			if err != nil {
				t.Fatal(err)
			}
			for _, seg := range res.Segments {
				onGateway := strings.HasPrefix(seg.URI, viaGateway)
				if onGateway == (mode == coordinator.SpoolingStorage) {
					t.Errorf("segment uri %s: through the gateway %v in mode %s", seg.URI, onGateway, mode)
				}
				if mode == coordinator.SpoolingStorage && (!strings.Contains(seg.URI, "?X-Sim-Signature=sig-") || seg.Headers[coordinator.StorageKeyHeader] == nil) {
					t.Errorf("storage segment %s with headers %v: not as the coordinator wrote it", seg.URI, seg.Headers)
				}
				if !strings.HasPrefix(seg.AckURI, viaGateway) {
					t.Errorf("ackUri %s is not the gateway's", seg.AckURI)
				}
			}
			if len(res.Rows) != 10 || len(res.Segments) != 3 {
				t.Fatalf("%d rows in %d segments, want 10 in 3", len(res.Rows), len(res.Segments))
			}
			for i, row := range res.Rows {
				if n, _ := row[0].(float64); int(n) != i+1 {
					t.Fatalf("row %d is %v", i, row)
				}
			}
			var acked int64
			for _, c := range s.coords {
				_, _, n := c.SegmentDownloads()
				acked += n
			}
			if acked != 3 {
				t.Errorf("%d segments acknowledged, want 3", acked)
			}
		})
	}
}

// Small pages come inline (Trino's default below its inlining limits): the segments' base64
// data passes through the gateway unchanged, with nothing to download or acknowledge.
func TestInlineSegmentsThroughTheGateway(t *testing.T) {
	s := newSetupFor(t, 2, coordinator.Options{Flavour: coordinator.Trino, Spooling: coordinator.SpoolingCoordinator, BatchRows: 4}, gateway.Trino, nil)
	res, err := coordinator.RunSpooled(s.front.URL, "SELECT * FROM rows(10)")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 10 || len(res.Segments) != 3 {
		t.Fatalf("%d rows in %d segments, want 10 in 3", len(res.Rows), len(res.Segments))
	}
	for _, seg := range res.Segments {
		if !seg.Inline || seg.URI != "" || seg.Downloaded != seg.SegmentSize {
			t.Errorf("segment %+v, want inline with its data whole", seg)
		}
	}
	for i, row := range res.Rows {
		if n, _ := row[0].(float64); int(n) != i+1 {
			t.Fatalf("row %d is %v", i, row)
		}
	}
}
