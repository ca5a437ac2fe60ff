package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/coordinator"
)

// spooledSegment is a segment of Trino's spooling protocol, as a client
// reads it.
type spooledSegment struct {
	Type     string              `json:"type"`
	URI      string              `json:"uri"`
	AckURI   string              `json:"ackUri"`
	Headers  map[string][]string `json:"headers"`
	Metadata struct {
		RowOffset int64 `json:"rowOffset"`
		RowsCount int64 `json:"rowsCount"`
	} `json:"metadata"`
}

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
			s := newSetupFor(t, 2, coordinator.Options{Flavour: coordinator.Trino, Spooling: mode, BatchRows: 4}, gateway.Trino, nil)
			viaGateway := s.front.URL + "/_zk/"
			req, _ := http.NewRequest(http.MethodPost, s.front.URL+"/v1/statement", strings.NewReader("SELECT * FROM rows(10)"))
			var rows [][]int64
			segments := 0
			for {
				req.Header.Set("X-Trino-User", "alice")
				req.Header.Set("X-Trino-Query-Data-Encoding", "json+zstd,json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var answer struct {
					NextURI string `json:"nextUri"`
					Data    *struct {
						Encoding string           `json:"encoding"`
						Segments []spooledSegment `json:"segments"`
					} `json:"data"`
				}
				err = json.NewDecoder(resp.Body).Decode(&answer)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s %s: %s, %v", req.Method, req.URL, resp.Status, err)
				}
				for _, seg := range segmentsOf(answer.Data) {
					segments++
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
					get, _ := http.NewRequest(http.MethodGet, seg.URI, nil)
					for k, v := range seg.Headers {
						get.Header[k] = v
					}
					resp, err := http.DefaultClient.Do(get) // follows a redirect to the storage
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					var part [][]int64
					if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &part) != nil ||
						int64(len(part)) != seg.Metadata.RowsCount || seg.Metadata.RowOffset != int64(len(rows)) {
						t.Fatalf("segment %s: %s %q, metadata %+v after %d rows", seg.URI, resp.Status, b, seg.Metadata, len(rows))
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
				if answer.NextURI == "" {
					break
				}
				req, _ = http.NewRequest(http.MethodGet, answer.NextURI, nil)
			}
			if len(rows) != 10 || segments != 3 {
				t.Fatalf("%d rows in %d segments, want 10 in 3", len(rows), segments)
			}
			for i, row := range rows {
				if row[0] != int64(i+1) {
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

func segmentsOf(data *struct {
	Encoding string           `json:"encoding"`
	Segments []spooledSegment `json:"segments"`
}) []spooledSegment {
	if data == nil {
		return nil
	}
	return data.Segments
}
