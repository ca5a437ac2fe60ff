package coordinator

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// maxWaitParam is the query string that adds maxWait=d to link.
func maxWaitParam(link, d string) string {
	if strings.Contains(link, "?") {
		return "&maxWait=" + d
	}
	return "?maxWait=" + d
}

// clusterStats is what /v1/cluster reports, as PrestoDB's ClusterStats.
type clusterStats struct {
	Running int64 `json:"runningQueries"`
	Queued  int64 `json:"queuedQueries"`
}

// With MaxRunning, the statements beyond it wait in order of submission
// and start as slots free up; /v1/cluster (Presto) and the QueryManager
// mbean (Trino) report the true counts.
func TestMaxRunningQueuesInOrder(t *testing.T) {
	for _, flavour := range []Flavour{Presto, Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: flavour, MaxRunning: 2, Latency: time.Hour})
			var ids []string
			var waitingLinks []string
			for i := range 4 {
				first := submit(t, c, "SELECT 1", http.StatusOK)
				ids = append(ids, first.ID)
				if i < 2 {
					dispatch(t, first) // a query takes a slot once dispatched
					continue
				}
				// No slot: it stays on the queued resource, QUEUED, as in a resource
				// group's queue; maxWait bounds the wait for a slot.
				var r wireResults
				getJSON(t, first.NextURI+maxWaitParam(first.NextURI, "20ms"), http.StatusOK, &r)
				if r.Stats.State != "QUEUED" || !strings.Contains(r.NextURI, "/v1/statement/queued/") {
					t.Fatalf("first GET without a slot = %+v, want QUEUED on the queued resource", r)
				}
				waitingLinks = append(waitingLinks, r.NextURI)
			}
			figures := func() (int64, int64) {
				if flavour == Presto {
					var s clusterStats
					getJSON(t, c.URL()+"/v1/cluster", http.StatusOK, &s)
					return s.Running, s.Queued
				}
				var mbean struct {
					Attributes []struct {
						Name  string `json:"name"`
						Value int64  `json:"value"`
					} `json:"attributes"`
				}
				mbeanURL := c.URL() + "/v1/jmx/mbean/trino.execution:name=QueryManager"
				// Trino wants a user named, as the real 476 does
				// (InsecureAuthenticator).
				getJSON(t, mbeanURL, http.StatusUnauthorized, nil)
				req, err := http.NewRequest(http.MethodGet, mbeanURL, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("X-Trino-User", "monitor")
				resp, err := rawClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s as monitor: %s", mbeanURL, resp.Status)
				}
				if err := json.NewDecoder(resp.Body).Decode(&mbean); err != nil {
					t.Fatal(err)
				}
				got := map[string]int64{}
				for _, a := range mbean.Attributes {
					got[a.Name] = a.Value
				}
				return got["RunningQueries"], got["QueuedQueries"]
			}
			if r, q := figures(); r != 2 || q != 2 {
				t.Fatalf("4 statements, 2 slots: reports %d running, %d queued", r, q)
			}
			queued := func(id string) bool {
				qq, _ := c.lookup(id)
				return qq != nil && qq.ready.Load() == queuedNanos
			}
			if queued(ids[0]) || queued(ids[1]) || !queued(ids[2]) || !queued(ids[3]) {
				t.Fatal("the first two do not run and the last two wait")
			}
			// The first ends: the oldest waiting one gets its slot.
			req, _ := http.NewRequest(http.MethodDelete, c.URL()+"/v1/query/"+ids[0], nil)
			resp, err := rawClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if queued(ids[2]) || !queued(ids[3]) {
				t.Error("the slot went to the wrong statement")
			}
			var r wireResults
			getJSON(t, waitingLinks[0], http.StatusOK, &r)
			if !strings.Contains(r.NextURI, "/v1/statement/executing/") || (flavour == Trino) != (r.Stats.State == "QUEUED") {
				// PrestoDB's queued resource answers the executing resource's first page.
				t.Errorf("poll once it has a slot = %+v, want the redirect to the executing resource", r)
			}
			getJSON(t, waitingLinks[1]+maxWaitParam(waitingLinks[1], "10ms"), http.StatusOK, &r)
			if !strings.Contains(r.NextURI, "/v1/statement/queued/") {
				t.Errorf("poll still without a slot = %+v, want the queued resource", r)
			}
			if r, q := figures(); r != 2 || q != 1 {
				t.Errorf("after one ended: %d running, %d queued", r, q)
			}
			if flavour == Trino {
				// Authentication first, as on the real server.
				getJSON(t, c.URL()+"/v1/jmx/mbean/java.lang:type=Memory", http.StatusUnauthorized, nil)
				req, err := http.NewRequest(http.MethodGet, c.URL()+"/v1/jmx/mbean/java.lang:type=Memory", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("X-Trino-User", "monitor")
				resp, err := rawClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("an mbean not simulated: %s, want 404", resp.Status)
				}
			}
		})
	}
	// Without MaxRunning everything runs, and the counts say so.
	c := start(t, Options{Latency: time.Hour})
	first := submit(t, c, "SELECT 1", http.StatusOK)
	if r, q := c.Load(); r != 0 || q != 0 {
		t.Errorf("submitted, not dispatched: %d running, %d queued", r, q)
	}
	dispatch(t, first)
	if r, q := c.Load(); r != 1 || q != 0 {
		t.Errorf("no limit: %d running, %d queued", r, q)
	}
}

// With MaxQueued, a statement that finds the slots taken and the queue
// full is accepted at the POST and fails with QUERY_QUEUE_FULL at its
// first GET (PrestoDB: its second), never having run; once the queue has room again the
// next one waits as before.
func TestMaxQueuedRefusesAtDispatch(t *testing.T) {
	for _, flavour := range []Flavour{Presto, Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: flavour, MaxRunning: 1, MaxQueued: 1, Latency: time.Hour})
			dispatch(t, submit(t, c, "SELECT 1", http.StatusOK)) // runs
			waiting := submit(t, c, "SELECT 2", http.StatusOK)
			var r wireResults
			getJSON(t, waiting.NextURI+maxWaitParam(waiting.NextURI, "20ms"), http.StatusOK, &r)
			if r.Stats.State != "QUEUED" || r.Error != nil {
				t.Fatalf("the second statement = %+v, want it QUEUED", r)
			}
			refused := submit(t, c, "SELECT 3", http.StatusOK)
			if refused.Error != nil || !strings.Contains(refused.NextURI, "/v1/statement/queued/") {
				t.Fatalf("the POST of the third = %+v, want it accepted", refused)
			}
			r = wireResults{}
			getJSON(t, refused.NextURI, http.StatusOK, &r)
			if flavour == Presto {
				// PrestoDB answers its first GET QUEUED while the dispatch runs.
				if r.Stats.State != "QUEUED" || r.Error != nil || !strings.Contains(r.NextURI, "/v1/statement/queued/") {
					t.Fatalf("PrestoDB's first GET of the third = %+v, want QUEUED on the queued resource", r)
				}
				next := r.NextURI
				r = wireResults{}
				getJSON(t, next, http.StatusOK, &r)
			}
			if r.Stats.State != "FAILED" || r.NextURI != "" || r.Error == nil ||
				r.Error.ErrorName != "QUERY_QUEUE_FULL" || r.Error.ErrorCode != 131074 || r.Error.ErrorType != "INSUFFICIENT_RESOURCES" {
				t.Fatalf("the first GET of the third = %+v, want FAILED with QUERY_QUEUE_FULL 131074 INSUFFICIENT_RESOURCES", r)
			}
			var rejected bool
			for _, req := range c.Requests() {
				if req.QueryID == refused.ID {
					rejected = req.Rejected
				}
			}
			if !rejected {
				t.Error("the refused statement is not recorded as never run")
			}
			// The queue's one place frees: the next statement waits again.
			del, err := http.NewRequest(http.MethodDelete, waiting.NextURI, nil)
			if err != nil {
				t.Fatal(err)
			}
			do(t, del, http.StatusNoContent)
			next := submit(t, c, "SELECT 4", http.StatusOK)
			r = wireResults{}
			getJSON(t, next.NextURI+maxWaitParam(next.NextURI, "20ms"), http.StatusOK, &r)
			if r.Stats.State != "QUEUED" || r.Error != nil {
				t.Fatalf("a statement after the queue freed = %+v, want it QUEUED", r)
			}
		})
	}
}
