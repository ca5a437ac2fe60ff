package coordinator

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// info is the part of the query resource the tests read.
type info struct {
	QueryID string `json:"queryId"`
	State   string `json:"state"`
	Self    string `json:"self"`
	Query   string `json:"query"`
	Session struct {
		User string `json:"user"`
	} `json:"session"`
	QueryStats struct {
		EndTime *time.Time `json:"endTime"`
	} `json:"queryStats"`
	ErrorCode *struct {
		Name string `json:"name"`
	} `json:"errorCode"`
}

func queryInfoOf(t *testing.T, c *Coordinator, id string) info {
	t.Helper()
	var i info
	getJSON(t, c.URL()+"/v1/query/"+id, http.StatusOK, &i)
	return i
}

func TestQueryResource(t *testing.T) {
	c := start(t, Options{})
	first := submit(t, c, "SELECT 1", http.StatusOK)
	// Not dispatched until its queued nextUri is fetched: unknown, 410 (trino:
	// QueryResource.getQueryInfo).
	if status, body := rawStatus(t, http.MethodGet, c.URL()+"/v1/query/"+first.ID); status != http.StatusGone || strings.HasPrefix(body, "{") {
		t.Fatalf("info of a submitted query before its first GET: %d %q, want 410 without a JSON body", status, body)
	}
	// Trino's query is QUEUED until the executing resource's first GET; PrestoDB's queued
	// resource answers that page itself, the last of SELECT 1.
	exec := dispatch(t, first)
	if i := queryInfoOf(t, c, first.ID); i.State != map[Flavour]string{Trino: "QUEUED", Presto: "FINISHED"}[c.flavour] || i.Query != "SELECT 1" || i.Session.User != "raw" || i.Self != c.URL()+"/v1/query/"+first.ID {
		t.Fatalf("info of a queued query = %+v", i)
	}
	getJSON(t, exec, http.StatusOK, nil)
	if i := queryInfoOf(t, c, first.ID); i.State != "FINISHED" || i.QueryStats.EndTime == nil || i.ErrorCode != nil {
		t.Fatalf("info of a finished query = %+v", i)
	}
	getJSON(t, c.URL()+"/v1/query/nosuchquery", http.StatusGone, nil)
}

func TestCancelByQueryID(t *testing.T) {
	c := start(t, Options{Latency: time.Hour})
	first := submit(t, c, "SELECT 1", http.StatusOK)
	var page wireResults
	getJSON(t, dispatch(t, first), http.StatusOK, &page) // waits a second, answers RUNNING
	if i := queryInfoOf(t, c, first.ID); i.State != "RUNNING" {
		t.Fatalf("info of a running query = %+v", i)
	}
	resp, _ := exchange(t, http.MethodDelete, c.URL()+"/v1/query/"+first.ID, nil, "")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /v1/query: status %d, want 204", resp.StatusCode)
	}
	if r := c.Running(); r != 0 {
		t.Fatalf("Running() = %d after the cancel, want 0", r)
	}
	var after wireResults
	getJSON(t, page.NextURI, http.StatusOK, &after)
	if after.Error == nil || after.Error.ErrorName != "USER_CANCELED" {
		t.Fatalf("poll after the cancel = %+v", after)
	}
	if i := queryInfoOf(t, c, first.ID); i.State != "FAILED" || i.ErrorCode == nil || i.ErrorCode.Name != "USER_CANCELED" {
		t.Fatalf("info of the canceled query = %+v", i)
	}
	// Like Presto and Trino: cancelling an unknown or ended query is not an error.
	for _, id := range []string{"nosuchquery", first.ID} {
		if resp, _ := exchange(t, http.MethodDelete, c.URL()+"/v1/query/"+id, nil, ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE /v1/query/%s: status %d", id, resp.StatusCode)
		}
	}
}

// HEAD on a nextUri runs as the GET would and drops the body, as on PrestoDB: it consumes
// the page, and the GET of the same token that follows replays it, so a client that sends
// HEAD as a heartbeat loses no rows. Trino 476 answers a HEAD of an executing link 404 until
// the query's first executing GET, then 200, and consumes nothing.
func TestHeadRunsAsGet(t *testing.T) {
	t.Run("trino", func(t *testing.T) {
		c := start(t, Options{Flavour: Trino, BatchRows: 5})
		exec := dispatch(t, submit(t, c, "SELECT * FROM rows(12)", http.StatusOK))
		if resp, body := exchange(t, http.MethodHead, exec, nil, ""); resp.StatusCode != http.StatusNotFound || len(body) != 0 {
			t.Fatalf("HEAD before the first executing GET: %d, want 404", resp.StatusCode)
		}
		var page, again wireResults
		getJSON(t, exec, http.StatusOK, &page)
		for range 2 {
			if resp, body := exchange(t, http.MethodHead, page.NextURI, nil, ""); resp.StatusCode != http.StatusOK || len(body) != 0 {
				t.Fatalf("HEAD of the next link: %d %q, want 200 without a body", resp.StatusCode, body)
			}
		}
		// Nothing consumed: the last token is still current, the next one has rows 6..10.
		getJSON(t, exec, http.StatusOK, &again)
		if len(again.Data) != 5 || again.Data[0][0] != float64(1) {
			t.Fatalf("the last token again after HEADs = %v, want rows 1..5", again.Data)
		}
		getJSON(t, page.NextURI, http.StatusOK, &page)
		if len(page.Data) != 5 || page.Data[0][0] != float64(6) {
			t.Fatalf("GET after HEADs = %v, want rows 6..10", page.Data)
		}
		drain(t, page)
	})
	for _, flavour := range []Flavour{Presto} {
		t.Run(string(flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: flavour, BatchRows: 5})
			head := func(uri string) (int, int64) {
				resp, body := exchange(t, http.MethodHead, uri, nil, "")
				if len(body) != 0 {
					t.Fatalf("HEAD %s has a body: %q", uri, body)
				}
				return resp.StatusCode, resp.ContentLength
			}
			exec := dispatch(t, submit(t, c, "SELECT * FROM rows(12)", http.StatusOK))
			if s, _ := head(exec); s != http.StatusOK {
				t.Fatalf("HEAD of the current link: %d", s)
			}
			var page wireResults
			getJSON(t, exec, http.StatusOK, &page) // the same token: the HEAD's page again
			if len(page.Data) != 5 || page.Data[0][0] != float64(1) {
				t.Fatalf("GET after HEAD = %v, want rows 1..5", page.Data)
			}
			if s, _ := head(page.NextURI); s != http.StatusOK {
				t.Fatalf("HEAD of the next link: %d", s)
			}
			// The HEAD advanced the query: the first link is now stale.
			if s, _ := head(exec); s != http.StatusGone {
				t.Fatalf("HEAD of a link two tokens old: %d, want 410", s)
			}
			var second wireResults
			getJSON(t, page.NextURI, http.StatusOK, &second)
			if len(second.Data) != 5 || second.Data[0][0] != float64(6) {
				t.Fatalf("GET after the second HEAD = %v, want rows 6..10", second.Data)
			}
			unknown := c.URL() + "/v1/statement/executing/nope/1?slug=x"
			if s, _ := head(unknown); s != http.StatusNotFound {
				t.Fatalf("HEAD of an unknown query: %d, want 404", s)
			}
			last := drain(t, second)
			if last.Stats.State != "FINISHED" {
				t.Fatalf("last answer %+v", last)
			}
			heads := 0
			for _, call := range c.Calls() {
				if call.Method == http.MethodHead {
					heads++
				}
			}
			if heads != 4 {
				t.Errorf("Calls lists %d HEADs, want 4", heads)
			}
		})
	}
}

func TestPartialCancelEndsOutput(t *testing.T) {
	c := start(t, Options{BatchRows: 10})
	first := submit(t, c, "SELECT * FROM rows(100)", http.StatusOK)
	var page struct {
		wireResults
		PartialCancelURI string `json:"partialCancelUri"`
	}
	getJSON(t, dispatch(t, first), http.StatusOK, &page)
	if len(page.Data) != 10 || page.PartialCancelURI == "" || !strings.HasPrefix(page.PartialCancelURI, c.URL()+"/v1/statement/executing/partialCancel/"+first.ID+"/") {
		t.Fatalf("first page: %d rows, partialCancelUri %q", len(page.Data), page.PartialCancelURI)
	}
	resp, _ := exchange(t, http.MethodDelete, page.PartialCancelURI, nil, "")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE partialCancelUri: status %d", resp.StatusCode)
	}
	var last wireResults
	getJSON(t, page.NextURI, http.StatusOK, &last)
	if last.Stats.State != "FINISHED" || len(last.Data) != 0 || last.NextURI != "" || last.Error != nil {
		t.Fatalf("page after the partial cancel = %+v", last)
	}
}

func TestForwardedURIs(t *testing.T) {
	presto := hdr("X-Presto-User", "u", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "gw.example:8443",
		"X-Forwarded-Prefix", "/_zk/t0k", "X-Presto-Prefix-Url", "https://gw.example/_zk/t0k/")
	trino := hdr("X-Trino-User", "u", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "gw.example:8443, inner:1",
		"X-Forwarded-Port", "9443", "X-Forwarded-Prefix", "/_zk/t0k/")
	for _, tc := range []struct {
		name   string
		opts   Options
		header http.Header
		// want maps a link path (/v1/statement/...) to the URI expected for it.
		want func(c *Coordinator, path string) string
	}{
		{"ignored by default", Options{Flavour: Trino}, trino, func(c *Coordinator, path string) string { return c.URL() + path }},
		{"trino", Options{Flavour: Trino, HonourForwarded: true}, trino, func(_ *Coordinator, path string) string {
			return "https://gw.example:9443/_zk/t0k" + path
		}},
		{"trino without port", Options{Flavour: Trino, HonourForwarded: true}, hdr("X-Forwarded-Proto", "https", "X-Forwarded-Host", "gw.example"),
			func(_ *Coordinator, path string) string { return "https://gw.example" + path }},
		{"presto", Options{HonourForwarded: true}, presto, func(c *Coordinator, path string) string {
			return "https://gw.example/_zk/t0k/" + url.QueryEscape("https://"+c.Addr()+path)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, tc.opts)
			// sleep(ms) answers polls while it runs, with a partialCancelUri.
			resp, body := exchange(t, http.MethodPost, c.URL()+"/v1/statement", tc.header, "SELECT sleep(60000)")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("submit: %d %s", resp.StatusCode, body)
			}
			var first struct {
				ID      string `json:"id"`
				InfoURI string `json:"infoUri"`
				NextURI string `json:"nextUri"`
			}
			if err := json.Unmarshal(body, &first); err != nil {
				t.Fatal(err)
			}
			if want := tc.want(c, "/v1/statement/queued/"+first.ID+"/"); !strings.HasPrefix(first.NextURI, strings.TrimSuffix(want, url.QueryEscape("/"))) {
				t.Fatalf("nextUri = %q, want it to start %q", first.NextURI, want)
			}
			if want := tc.want(c, "/ui/query.html?"+first.ID); first.InfoURI != want {
				t.Fatalf("infoUri = %q, want %q", first.InfoURI, want)
			}
			// The proxy strips its prefix and sends the polls on with the same headers: the
			// queued one, then the executing one.
			var queued struct {
				NextURI string `json:"nextUri"`
			}
			poll := pathOfLink(t, c, first.NextURI)
			resp, body = exchange(t, http.MethodGet, c.URL()+poll, tc.header, "")
			if err := json.Unmarshal(body, &queued); err != nil || resp.StatusCode != http.StatusOK || tc.want(c, pathOfLink(t, c, queued.NextURI)) != queued.NextURI {
				t.Fatalf("poll %s: %d %s", poll, resp.StatusCode, body)
			}
			poll = pathOfLink(t, c, queued.NextURI)
			resp, body = exchange(t, http.MethodGet, c.URL()+poll, tc.header, "")
			var running struct {
				NextURI          string `json:"nextUri"`
				PartialCancelURI string `json:"partialCancelUri"`
			}
			if err := json.Unmarshal(body, &running); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("poll %s: %d %s", poll, resp.StatusCode, body)
			}
			if running.PartialCancelURI == "" || tc.want(c, pathOfLink(t, c, running.PartialCancelURI)) != running.PartialCancelURI {
				t.Fatalf("partialCancelUri = %q", running.PartialCancelURI)
			}
			r := lastRequest(t, c)
			if r.Forwarded.Get("X-Forwarded-Host") != tc.header.Get("X-Forwarded-Host") {
				t.Fatalf("Forwarded = %v", r.Forwarded)
			}
			calls := c.Calls()
			if path, _, _ := strings.Cut(poll, "?"); len(calls) != 3 || calls[2].Method != http.MethodGet || calls[2].Path != path || calls[2].QueryID != first.ID ||
				calls[2].Status != http.StatusOK || calls[2].Forwarded.Get("X-Forwarded-Proto") != "https" {
				t.Fatalf("Calls() = %+v", calls)
			}
		})
	}
}

// pathOfLink returns the coordinator path a link stands for, undoing the Presto prefix URL
// the way a proxy would.
func pathOfLink(t *testing.T, c *Coordinator, link string) string {
	t.Helper()
	if i := strings.Index(link, "/_zk/t0k/"); i >= 0 {
		rest := link[i+len("/_zk/t0k"):]
		if decoded, err := url.QueryUnescape(rest[1:]); err == nil && strings.HasPrefix(decoded, "http") {
			u, err := url.Parse(decoded)
			if err != nil {
				t.Fatal(err)
			}
			return u.RequestURI()
		}
		return rest
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI() // PrestoDB's links carry the slug in the query string
}

func TestCallsRecordEveryRequest(t *testing.T) {
	c := start(t, Options{RecordLimit: 4})
	first := submit(t, c, "SELECT 1", http.StatusOK)
	getJSON(t, first.NextURI, http.StatusOK, nil)
	getJSON(t, c.URL()+"/v1/query/"+first.ID, http.StatusOK, nil)
	submit(t, c, " ", http.StatusBadRequest)
	exchange(t, http.MethodDelete, c.URL()+"/v1/query/"+first.ID, nil, "")
	getJSON(t, c.URL()+"/v1/info", http.StatusOK, nil) // not a statement or query call
	calls := c.Calls()
	var got []string
	for _, call := range calls {
		got = append(got, call.Method+" "+http.StatusText(call.Status)+" "+call.QueryID)
	}
	want := []string{
		"GET OK " + first.ID,
		"GET OK " + first.ID,
		"POST Bad Request ",
		"DELETE No Content " + first.ID,
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Calls() = %q, want %q", got, want)
	}
	if calls[0].PrestoHeaders != 0 || calls[0].HeaderBytes == 0 || calls[0].Time.IsZero() {
		t.Fatalf("poll call = %+v", calls[0])
	}
}
