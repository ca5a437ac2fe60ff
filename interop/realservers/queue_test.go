package realservers

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// rawStatement is a statement driven by hand, one request at a time, as a
// client would: what the servers answer at each step is what is under test.
type rawStatement struct {
	t       *testing.T
	flavour coordinator.Flavour
	next    string
	last    rawPage
}

// rawPage is what the tests read of an answer.
type rawPage struct {
	ID      string `json:"id"`
	NextURI string `json:"nextUri"`
	Stats   struct {
		State string `json:"state"`
	} `json:"stats"`
	Error *struct {
		ErrorName string `json:"errorName"`
		ErrorCode int    `json:"errorCode"`
		ErrorType string `json:"errorType"`
		Message   string `json:"message"`
	} `json:"error"`
}

// errorName is the page's error's name, "" for none.
func (p rawPage) errorName() string {
	if p.Error == nil {
		return ""
	}
	return p.Error.ErrorName
}

// submitRaw POSTs sql to baseURL as user "test" from source, and returns
// the statement with the POST's answer as its last page.
func submitRaw(t *testing.T, baseURL string, flavour coordinator.Flavour, source, sql string) *rawStatement {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, baseURL+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(flavour.HeaderPrefix()+"User", "test")
	req.Header.Set(flavour.HeaderPrefix()+"Source", source)
	s := &rawStatement{t: t, flavour: flavour}
	s.do(req)
	// Whatever the test leaves running is cancelled, as a client that
	// gives up does.
	t.Cleanup(s.cancel)
	return s
}

func (s *rawStatement) do(req *http.Request) {
	s.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	s.last = rawPage{}
	if err := json.Unmarshal(body, &s.last); err != nil {
		s.t.Fatalf("%s %s: %v in %s", req.Method, req.URL.Path, err, body)
	}
	s.next = s.last.NextURI
}

// advance GETs the statement's nextUri.
func (s *rawStatement) advance() rawPage {
	s.t.Helper()
	if s.next == "" {
		s.t.Fatalf("statement %s has ended (%s)", s.last.ID, s.last.Stats.State)
	}
	req, err := http.NewRequestWithContext(ctx(s.t), http.MethodGet, s.next, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.do(req)
	return s.last
}

// advanceUntil GETs until the statement's state is one of states, or it
// ends.
func (s *rawStatement) advanceUntil(states ...string) rawPage {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		for _, st := range states {
			if s.last.Stats.State == st {
				return s.last
			}
		}
		if s.next == "" || time.Now().After(deadline) {
			s.t.Fatalf("statement %s is %s, want one of %v", s.last.ID, s.last.Stats.State, states)
		}
		s.advance()
	}
}

// cancel DELETEs the statement's nextUri, if it has one.
func (s *rawStatement) cancel() {
	if s.next == "" {
		return
	}
	c, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	req, err := http.NewRequestWithContext(c, http.MethodDelete, s.next, nil)
	if err != nil {
		return
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	s.next = ""
}

// fillQueue fills the tight resource group of s: one statement running
// (a scan of a blackhole table that delays each of its pages by a second)
// and one queued behind it, both cancelled when t ends.
func fillQueue(t *testing.T, s *realserver.Server) {
	t.Helper()
	slow := "SELECT count(*) FROM " + slowTable(t, s, 100000)
	running := submitRaw(t, s.URL(), s.Flavour(), queueSource, slow)
	running.advanceUntil("RUNNING")
	queued := submitRaw(t, s.URL(), s.Flavour(), queueSource, slow)
	queued.advance()
	// PrestoDB's first GET may answer WAITING_FOR_PREREQUISITES.
	if p := queued.advanceUntil("QUEUED"); p.Error != nil || !strings.Contains(p.NextURI, "/v1/statement/queued/") {
		t.Fatalf("the second statement of the tight group is %s (%s), want QUEUED", p.Stats.State, p.errorName())
	}
}

// queueRefusal is what a client sees of a statement its coordinator's
// full queue refuses.
type queueRefusal struct {
	PostAccepted bool   // the POST answered 200, no error, a queued nextUri
	QueuedBefore bool   // every GET before the failure answered on the queued resource
	Name, Type   string // the error's
	Code         int
	Ended        bool // the failure has no nextUri
}

// refusal submits a statement of the tight group to baseURL, whose queue is
// full, and GETs it until it fails (at most 3 GETs).
func refusal(t *testing.T, baseURL string, flavour coordinator.Flavour) (queueRefusal, int) {
	t.Helper()
	st := submitRaw(t, baseURL, flavour, queueSource, "SELECT 1")
	r := queueRefusal{QueuedBefore: true}
	r.PostAccepted = st.last.Error == nil && strings.Contains(st.last.NextURI, "/v1/statement/queued/")
	gets := 0
	for st.last.Error == nil && st.next != "" && gets < 3 {
		if gets > 0 && !strings.Contains(st.last.NextURI, "/v1/statement/queued/") {
			r.QueuedBefore = false
		}
		st.advance()
		gets++
	}
	if e := st.last.Error; e != nil {
		r.Name, r.Type, r.Code = e.ErrorName, e.ErrorType, e.ErrorCode
	}
	r.Ended = st.last.NextURI == ""
	return r, gets
}

// The simulator's full queue (Options.MaxQueued) refuses a statement as
// the real server of its flavour does: accepted at the POST, failed on the
// queued resource with the same error, at the same GET for Trino (PrestoDB
// refuses at the first or the second; the simulator at the second).
func TestDifferentialQueueFull(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		fillQueue(t, f.servers[0])
		real, realGets := refusal(t, f.servers[0].URL(), f.flavour)

		sim, err := coordinator.Start(coordinator.Options{Flavour: f.flavour, MaxRunning: 1, MaxQueued: 1, Latency: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sim.Close() })
		running := submitRaw(t, sim.URL(), f.flavour, queueSource, "SELECT 1")
		running.advance()
		waiting := submitRaw(t, sim.URL(), f.flavour, queueSource, "SELECT 2")
		waiting.advance()
		simulated, simGets := refusal(t, sim.URL(), f.flavour)

		want := queueRefusal{PostAccepted: true, QueuedBefore: true, Name: "QUERY_QUEUE_FULL", Type: "INSUFFICIENT_RESOURCES", Code: 131074, Ended: true}
		if real != want {
			t.Errorf("%s %s refuses as %+v, want %+v", f.flavour, f.servers[0].Version(), real, want)
		}
		if simulated != real {
			t.Errorf("the simulator refuses as %+v, the real server as %+v", simulated, real)
		}
		switch {
		case f.flavour == coordinator.Trino && (realGets != 1 || simGets != 1):
			t.Errorf("Trino refused at GET %d, the simulator at %d; want both at the first", realGets, simGets)
		case f.flavour == coordinator.Presto && (realGets > 2 || simGets != 2):
			t.Errorf("PrestoDB refused at GET %d, the simulator at %d; want the first or the second, and the second", realGets, simGets)
		}
	})
}

// A resource group whose queue is full accepts the POST and fails the
// statement on the queued resource with QUERY_QUEUE_FULL: Trino at the
// first GET, as its source predicts, PrestoDB 0.287 at the second (the
// first answers QUEUED or WAITING_FOR_PREREQUISITES while the dispatch
// runs). It never ran, so the driver and the gateway send
// it to another coordinator, and no statement fails while one has room.
func TestQueueFullGoesToAnotherCoordinator(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		full, other := f.servers[0], f.servers[1]
		fillQueue(t, full)

		refused := submitRaw(t, full.URL(), f.flavour, queueSource, "SELECT 1")
		// Trino answers QUEUED, PrestoDB WAITING_FOR_PREREQUISITES.
		if p := refused.last; p.Error != nil || !strings.Contains(p.NextURI, "/v1/statement/queued/") {
			t.Fatalf("the POST of a statement for a full queue answered %s (%s), want it accepted", p.Stats.State, p.errorName())
		}
		p := refused.advance()
		gets := 1
		for ; f.flavour == coordinator.Presto && p.Error == nil && gets < 3; gets++ {
			if !strings.Contains(p.NextURI, "/v1/statement/queued/") {
				t.Fatalf("PrestoDB's GET %d answered %s with %s, want it still on the queued resource", gets, p.Stats.State, p.NextURI)
			}
			p = refused.advance()
		}
		t.Logf("%s refused the statement at GET %d", f.flavour, gets)
		if p.errorName() != "QUERY_QUEUE_FULL" || p.NextURI != "" {
			t.Fatalf("the statement's GET answered %s %+v, want the query failed QUERY_QUEUE_FULL", p.Stats.State, p.Error)
		}
		if p.Error.ErrorCode != 131074 || p.Error.ErrorType != "INSUFFICIENT_RESOURCES" {
			t.Errorf("QUERY_QUEUE_FULL is %d %s, want 131074 INSUFFICIENT_RESOURCES", p.Error.ErrorCode, p.Error.ErrorType)
		}

		refusals := func() int64 {
			res, err := full.Query(ctx(t), "SELECT count(*) FROM system.runtime.queries WHERE source = '"+queueSource+"' AND state = 'FAILED'")
			if err != nil {
				t.Fatal(err)
			}
			n, _ := res.Rows[0][0].(float64)
			return int64(n)
		}
		check := func(t *testing.T, db interface {
			QueryRowContext(context.Context, string, ...any) *sql.Row
		}) {
			before := refusals()
			seen := servingNodes(t, ctx(t), db, 6, "statements of the tight group")
			if seen[other.Name()] != 6 {
				t.Fatalf("the statements ran on %v, want all on %s: %s's queue is full", seen, other.Name(), full.Name())
			}
			// poll sends one of the first two to the full server: the
			// failover was tried, not avoided by luck (which the statements
			// alone show too: refused, one would fail). PrestoDB does not
			// list the queries its queue refused in system.runtime.queries.
			if n := refusals() - before; f.flavour == coordinator.Trino && n < 1 {
				t.Fatalf("%s refused %d of the statements, want at least 1", full.Name(), n)
			}
		}
		t.Run("driver", func(t *testing.T) {
			check(t, open(t, f, ";zooKeeperStrategy=poll?user=alice&source="+queueSource))
		})
		t.Run("gateway", func(t *testing.T) {
			check(t, openThroughAs(t, f, startGateway(t, f), queueSource))
		})
	})
}
