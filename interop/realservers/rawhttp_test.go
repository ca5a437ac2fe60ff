package realservers

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// rawAnswer is one answer of a raw exchange, as a client reads it.
type rawAnswer struct {
	URI         string // what was asked: "POST" for a submission, else the link
	Status      int
	ContentType string // the media type alone: "application/json", "text/plain"
	Header      http.Header
	Body        []byte
	JSON        map[string]json.RawMessage // nil unless the body is a JSON object
}

// rawDo sends one request with the given headers (name, value pairs) and
// reads the whole answer.
func rawDo(t *testing.T, method, uri, body string, headers ...string) rawAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, uri, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, uri, err)
	}
	a := rawAnswer{URI: uri, Status: resp.StatusCode, Header: resp.Header, Body: b}
	if method == http.MethodPost {
		a.URI = "POST"
	}
	a.ContentType, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if a.ContentType == "application/json" && len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &a.JSON); err != nil {
			t.Fatalf("%s %s: %v in %.300s", method, uri, err, b)
		}
	}
	return a
}

// rawSubmit POSTs sql to baseURL as user "test" with the extra headers,
// and cancels what is left of it when t ends.
func rawSubmit(t *testing.T, baseURL string, flavour coordinator.Flavour, sql string, headers ...string) rawAnswer {
	t.Helper()
	a := rawDo(t, http.MethodPost, baseURL+"/v1/statement", sql, append([]string{flavour.HeaderPrefix() + "User", "test"}, headers...)...)
	if a.Status != http.StatusOK {
		t.Fatalf("POST %q to %s: %d %s", sql, baseURL, a.Status, a.Body)
	}
	return a
}

// field decodes the answer's top-level key into v; false when absent.
func (a rawAnswer) field(key string, v any) bool {
	raw, ok := a.JSON[key]
	return ok && json.Unmarshal(raw, v) == nil
}

// str is the answer's top-level string key, "" when absent.
func (a rawAnswer) str(key string) string {
	var s string
	a.field(key, &s)
	return s
}

// next is the answer's nextUri.
func (a rawAnswer) next() string { return a.str("nextUri") }

// stats is the answer's stats object.
func (a rawAnswer) stats() map[string]json.RawMessage {
	var m map[string]json.RawMessage
	a.field("stats", &m)
	return m
}

// state is stats.state.
func (a rawAnswer) state() string {
	var s string
	_ = json.Unmarshal(a.stats()["state"], &s)
	return s
}

// errorName is error.errorName, "" without an error.
func (a rawAnswer) errorName() string {
	var e struct {
		ErrorName string `json:"errorName"`
	}
	a.field("error", &e)
	return e.ErrorName
}

// follow GETs nextUri from a until an answer has none or stop says so,
// and returns every answer, a included.
func follow(t *testing.T, a rawAnswer, stop func(rawAnswer) bool, headers ...string) []rawAnswer {
	t.Helper()
	all := []rawAnswer{a}
	for a.next() != "" && (stop == nil || !stop(a)) {
		if len(all) > 500 {
			t.Fatalf("more than 500 answers; the last %s", a.Body)
		}
		a = rawDo(t, http.MethodGet, a.next(), "", headers...)
		if a.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", all[len(all)-1].next(), a.Status, a.Body)
		}
		all = append(all, a)
	}
	return all
}

// executing reports whether a link is on the executing resource.
func executing(link string) bool { return strings.Contains(link, "/v1/statement/executing/") }

// keysOf lists an object's keys, sorted; nil for anything else.
func keysOf(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The slugs of the flavours' links (trino: server/protocol/Slug.java, "y"
// and an HMAC-SHA1 in hex; prestodb: QueuedStatementResource.Query, "x"
// and a random UUID without its dashes).
var slugShapes = map[coordinator.Flavour]*regexp.Regexp{
	coordinator.Trino:  regexp.MustCompile(`^y[0-9a-f]{40}$`),
	coordinator.Presto: regexp.MustCompile(`^x[0-9a-f]{32}$`),
}

// statementLink is a statement link taken apart.
type statementLink struct {
	Shape string // the path with the id and the slug as {id} and {slug}, the token as is
	Phase string
	Slug  string
	Token int64
}

// parseLink reads a nextUri of query id the flavour's way: Trino's
// /v1/statement/{phase}/{id}/{slug}/{token}, PrestoDB's
// /v1/statement/{phase}/{id}/{token}?slug={slug}. A slug not of the
// flavour's shape stays in Shape as it is.
func parseLink(t *testing.T, f coordinator.Flavour, id, link string) statementLink {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/v1/statement/"), "/")
	var l statementLink
	slugAt := -1
	if f == coordinator.Trino && len(parts) == 4 {
		l.Slug, slugAt = parts[2], 2
	} else {
		l.Slug = u.Query().Get("slug")
	}
	l.Token, _ = strconv.ParseInt(parts[len(parts)-1], 10, 64)
	l.Phase = parts[0]
	for i, p := range parts {
		switch {
		case p == id:
			parts[i] = "{id}"
		case i == slugAt && slugShapes[f].MatchString(p):
			parts[i] = "{slug}"
		}
	}
	l.Shape = "/v1/statement/" + strings.Join(parts, "/")
	if q := u.Query(); len(q) > 0 {
		slug := q.Get("slug")
		if slugShapes[f].MatchString(slug) {
			slug = "{slug}"
		}
		l.Shape += "?slug=" + slug
	}
	return l
}

// withToken is a PrestoDB link with another token (the slug, in the query
// string, stays valid); Trino's slug is bound to its token, so its links
// cannot be forged.
func withToken(link string, token int64) string {
	u, _ := url.Parse(link)
	i := strings.LastIndex(u.Path, "/")
	u.Path = u.Path[:i+1] + strconv.FormatInt(token, 10)
	return u.String()
}

// withParam adds a query parameter to a link.
func withParam(link, key, value string) string {
	u, _ := url.Parse(link)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
