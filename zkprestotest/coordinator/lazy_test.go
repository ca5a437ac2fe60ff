package coordinator

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// linkParts splits a statement link of either flavour into phase, slug and token.
func linkParts(t *testing.T, f Flavour, link string) (phase, slug string, token int64) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/v1/statement/"), "/")
	want := 3 // phase/id/token?slug=
	if f == Trino {
		want = 4 // phase/id/slug/token
	}
	if len(parts) != want {
		t.Fatalf("link %s: path has %d parts, want %d for %s", link, len(parts), want, f)
	}
	token, err = strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if err != nil {
		t.Fatalf("link %s: token: %v", link, err)
	}
	slug = u.Query().Get("slug")
	if f == Trino {
		slug = parts[2]
		if u.RawQuery != "" {
			t.Fatalf("Trino link %s has a query string", link)
		}
	}
	return parts[0], slug, token
}

// withSlug returns link with its slug replaced.
func withSlug(f Flavour, link, slug string) string {
	u, _ := url.Parse(link)
	if f == Trino {
		parts := strings.Split(u.Path, "/")
		parts[len(parts)-2] = slug
		u.Path = strings.Join(parts, "/")
	} else {
		u.RawQuery = "slug=" + slug
	}
	return u.String()
}

// withToken returns link with its token replaced.
func withToken(link string, token int64) string {
	u, _ := url.Parse(link)
	i := strings.LastIndex(u.Path, "/")
	u.Path = u.Path[:i+1] + strconv.FormatInt(token, 10)
	return u.String()
}

func TestLazySubmission(t *testing.T) {
	for _, f := range []Flavour{Presto, Trino} {
		t.Run(string(f), func(t *testing.T) {
			c := start(t, Options{Flavour: f, BatchRows: 5})
			first := submit(t, c, "SELECT * FROM rows(10)", http.StatusOK)
			if phase, _, token := linkParts(t, f, first.NextURI); first.Stats.State != "QUEUED" || phase != phaseQueued || token != 1 {
				t.Fatalf("POST answered %+v, want QUEUED with nextUri queued token 1", first)
			}
			// Not yet dispatched: it runs nowhere, and the query resource does not know it.
			if r, q := c.Load(); r != 0 || q != 0 {
				t.Fatalf("Load() = %d, %d before the first GET, want 0, 0", r, q)
			}
			info := c.URL() + "/v1/query/" + first.ID
			// 410, the body text/plain on Trino, Jetty's HTML page on PrestoDB.
			resp, body := exchange(t, http.MethodGet, info, nil, "")
			wantType := map[Flavour]string{Trino: "text/plain", Presto: "text/html"}[f]
			if resp.StatusCode != http.StatusGone || !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType) || !strings.Contains(string(body), "410") {
				t.Fatalf("GET /v1/query before dispatch: %d %q %q, want 410 %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, wantType)
			}
			// DELETE answers 204 and does nothing: the query still runs at its first GET.
			if status, body := rawStatus(t, http.MethodDelete, info); status != http.StatusNoContent || body != "" {
				t.Fatalf("DELETE /v1/query before dispatch: %d %q, want 204 without a body", status, body)
			}
			exec := dispatch(t, first)
			if r, _ := c.Load(); r != 1 {
				t.Fatalf("Load() running = %d after the first GET, want 1", r)
			}
			getJSON(t, info, http.StatusOK, nil)
			last := drain(t, wireResults{NextURI: exec})
			if last.Stats.State != "FINISHED" || last.Error != nil {
				t.Fatalf("the query after a DELETE of /v1/query before dispatch ended %+v, want FINISHED", last)
			}
		})
	}
}

func TestTwoPhasesAndSlugs(t *testing.T) {
	for _, f := range []Flavour{Presto, Trino} {
		t.Run(string(f), func(t *testing.T) {
			c := start(t, Options{Flavour: f, BatchRows: 1, QueuedPolls: 2})
			first := submit(t, c, "SELECT * FROM rows(3)", http.StatusOK)
			var links []string
			page := first
			for page.NextURI != "" {
				links = append(links, page.NextURI)
				uri := page.NextURI
				page = wireResults{}
				getJSON(t, uri, http.StatusOK, &page)
			}
			// POST → queued 1; two QUEUED polls → queued 2, 3; then executing 0..2. PrestoDB's
			// third queued GET answers the executing resource's page of token 0 itself, so its
			// executing links count from 1 (pollQueued).
			want := []struct {
				phase string
				token int64
			}{{phaseQueued, 1}, {phaseQueued, 2}, {phaseQueued, 3}, {phaseExecuting, 0}, {phaseExecuting, 1}, {phaseExecuting, 2}}
			if f == Presto {
				want = append(want[:3], want[4:]...)
			}
			if len(links) != len(want) {
				t.Fatalf("links = %v, want %d", links, len(want))
			}
			slugs := map[string]bool{}
			for i, link := range links {
				phase, slug, token := linkParts(t, f, link)
				if phase != want[i].phase || token != want[i].token {
					t.Fatalf("link %d = %s, want %s token %d", i, link, want[i].phase, want[i].token)
				}
				slugs[slug] = true
			}
			// Trino: a slug per token and phase; PrestoDB: one per query.
			if wantSlugs := map[Flavour]int{Presto: 1, Trino: len(links)}[f]; len(slugs) != wantSlugs {
				t.Fatalf("%d distinct slugs over %d links, want %d", len(slugs), len(links), wantSlugs)
			}
			// A wrong slug is 404 with a text/plain body, whatever the method.
			for _, method := range []string{http.MethodGet, http.MethodDelete} {
				resp, body := exchange(t, method, withSlug(f, links[len(links)-1], "xwrong"), nil, "")
				if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
					t.Fatalf("%s with a wrong slug: %d %q %s, want 404 text/plain", method, resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
			}
			if f == Trino {
				// A slug is valid for its own token only.
				exec0 := links[3]
				if status, _ := rawStatus(t, http.MethodGet, withToken(exec0, 1)); status != http.StatusNotFound {
					t.Fatalf("executing token 0's slug with token 1: %d, want 404", status)
				}
			}
		})
	}
}

func TestTokenRules(t *testing.T) {
	for _, f := range []Flavour{Presto, Trino} {
		t.Run(string(f), func(t *testing.T) {
			c := start(t, Options{Flavour: f, BatchRows: 1})
			p0 := dispatch(t, submit(t, c, "SELECT * FROM rows(4)", http.StatusOK))
			var page0 wireResults
			body0 := getJSON(t, p0, http.StatusOK, &page0)
			p1 := page0.NextURI
			var page1 wireResults
			body1 := getJSON(t, p1, http.StatusOK, &page1)
			// The last token again: the same page, byte for byte, no row lost or repeated.
			if again := getJSON(t, p1, http.StatusOK, nil); string(again) != string(body1) {
				t.Fatalf("repeated token 1 answered %s, want %s", again, body1)
			}
			// An older token: 410 Gone.
			if status, _ := rawStatus(t, http.MethodGet, p0); status != http.StatusGone {
				t.Fatalf("older token 0 after token 1 was answered: %d, want 410 (page 0 was %s)", status, body0)
			}
			// Token + 2 (skipping the next): 404. Only on PrestoDB can a test forge it: a
			// Trino slug is bound to its token.
			if f == Presto {
				if status, _ := rawStatus(t, http.MethodGet, withToken(page1.NextURI, 3)); status != http.StatusNotFound {
					t.Fatalf("token 3 when 2 is next: %d, want 404", status)
				}
			}
			last := drain(t, page1)
			if last.Stats.State != "FINISHED" {
				t.Fatalf("ended %+v", last)
			}
			// Past the end: 404 (PrestoDB, where the link can be forged).
			if f == Presto {
				if status, _ := rawStatus(t, http.MethodGet, withToken(page1.NextURI, 9)); status != http.StatusNotFound {
					t.Fatalf("token past the end: %d, want 404", status)
				}
			}
		})
	}
}

func TestCancelBeforeDispatch(t *testing.T) {
	for _, f := range []Flavour{Presto, Trino} {
		t.Run(string(f), func(t *testing.T) {
			c := start(t, Options{Flavour: f})
			first := submit(t, c, "SELECT 1", http.StatusOK)
			// DELETE on the queued nextUri: 204 without a body, and the query never runs.
			if status, body := rawStatus(t, http.MethodDelete, first.NextURI); status != http.StatusNoContent || body != "" {
				t.Fatalf("DELETE of the queued nextUri: %d %q, want 204 without a body", status, body)
			}
			if n := c.Running(); n != 0 {
				t.Fatalf("Running() = %d after the cancel, want 0", n)
			}
			var after wireResults
			getJSON(t, first.NextURI, http.StatusOK, &after)
			if after.Error == nil || after.Error.ErrorName != "USER_CANCELED" || after.NextURI != "" {
				t.Fatalf("GET after the cancel = %+v, want USER_CANCELED without a nextUri", after)
			}
			if r, q := c.Load(); r != 0 || q != 0 {
				t.Fatalf("Load() = %d, %d: the canceled query was dispatched", r, q)
			}
			// Cancelling again is a no-op, still 204.
			if status, _ := rawStatus(t, http.MethodDelete, first.NextURI); status != http.StatusNoContent {
				t.Fatalf("second DELETE: %d, want 204", status)
			}
		})
	}
}
