package wire

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// A header net/http would refuse to send is refused before anything is
// sent; a tab is allowed in a value.
func TestCheckHeaders(t *testing.T) {
	for _, h := range []http.Header{
		{"X-Presto-User": {"a\nb"}},
		{"X-Presto-User": {"a\x7fb"}},
		{"Bad Name": {"x"}},
		{"Bad:Name": {"x"}},
	} {
		var re *RequestError
		if err := CheckHeaders(h); !errors.As(err, &re) {
			t.Errorf("%v: got %v, want a *RequestError", h, err)
		}
	}
	if err := CheckHeaders(http.Header{"X-Presto-Client-Info": {"a\tb"}}); err != nil {
		t.Errorf("tab refused: %v", err)
	}
}

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		uri, addr string
		tls, ok   bool
	}{
		{"http://10.0.0.1:8080/v1/statement/x", "10.0.0.1:8080", false, true},
		{"https://10.0.0.1:8080/v1/statement/x", "10.0.0.1:8080", false, true},
		{"http://10.0.0.1:8080/v1/statement/x", "10.0.0.1:8080", true, false},
		{"http://10.0.0.2:8080/v1/statement/x", "10.0.0.1:8080", false, false},
		{"http://[0:0:0:0:0:0:0:1]:8080/x", "[::1]:8080", false, true},
		{"http://Coord.Example.com:8080/x", "coord.example.com:8080", false, true},
		{"https://coord.example.com/x", "coord.example.com:443", true, true},
		{"http://coord.example.com/x", "coord.example.com:8080", false, false},
		{"ftp://10.0.0.1:8080/x", "10.0.0.1:8080", false, false},
	} {
		u, _ := url.Parse(tc.uri)
		err := CheckTarget(u, tc.addr, tc.tls)
		var fe *ForeignURIError
		if (err == nil) != tc.ok || (err != nil && (!errors.As(err, &fe) || fe.Node != tc.addr)) {
			t.Errorf("CheckTarget(%s, %s, tls=%t) = %v, want ok=%t", tc.uri, tc.addr, tc.tls, err, tc.ok)
		}
	}
}

// Only the failures of a query that provably never ran let a statement go
// elsewhere; GENERIC_INSUFFICIENT_RESOURCES only from the queued resource,
// where it is the wait for workers, never a query that ran.
func TestNeverRan(t *testing.T) {
	for _, c := range []struct {
		name   string
		queued bool
		want   bool
	}{
		{"SERVER_STARTING_UP", false, true},
		{"NO_NODES_AVAILABLE", false, true},
		{"QUERY_QUEUE_FULL", true, true},
		{"GENERIC_INSUFFICIENT_RESOURCES", true, true},
		{"GENERIC_INSUFFICIENT_RESOURCES", false, false},
		{"EXCEEDED_LOCAL_MEMORY_LIMIT", false, false},
		{"SYNTAX_ERROR", true, false},
		{"", true, false},
	} {
		if got := NeverRan(c.name, c.queued); got != c.want {
			t.Errorf("NeverRan(%q, queued %v) = %v, want %v", c.name, c.queued, got, c.want)
		}
	}
	for uri, want := range map[string]bool{
		"http://c:8080/v1/statement/queued/q/s/1":    true,
		"http://c:8080/v1/statement/executing/q/s/0": false,
		"http://c:8080/v1/statement":                 false,
		"http://c:8080/x/v1/statement/queued/q/s/1":  false,
	} {
		u, _ := url.Parse(uri)
		if got := QueuedURI(u); got != want {
			t.Errorf("QueuedURI(%s) = %v, want %v", uri, got, want)
		}
	}
	if QueuedURI(nil) {
		t.Error("QueuedURI(nil) = true")
	}
}

func TestReasonIsOneLineOfWhatTheAnswerSays(t *testing.T) {
	jetty := "<html>\n<head>\n<title>Error 401 Access Denied: Invalid credentials</title>\n</head><body>x</body></html>"
	for _, c := range []struct{ name, contentType, body, want string }{
		{"a gateway's Presto error", "application/json", `{"id":"","stats":{"state":"FAILED"},"error":{"message":"zkpresto gateway is draining; send the statement again","errorName":"ZKPRESTO_GATEWAY"}}`,
			"ZKPRESTO_GATEWAY: zkpresto gateway is draining; send the statement again"},
		{"Jetty's page", "text/html;charset=iso-8859-1", jetty, "Access Denied: Invalid credentials"},
		{"an HTML page without a content type", "", "<html><title>Error 503 Service Unavailable</title></html>", "Service Unavailable"},
		{"text", "text/plain", "Password not allowed for insecure authentication\nmore", "Password not allowed for insecure authentication"},
		{"control characters", "text/plain", "bad\x1b[31m red\x00 \xff end", "bad [31m red end"},
		{"JSON that is no Presto error", "application/json", `{"status":"down"}`, ""},
		{"empty", "text/plain", "", ""},
	} {
		if got := Reason(c.contentType, []byte(c.body)); got != c.want {
			t.Errorf("%s: Reason = %q, want %q", c.name, got, c.want)
		}
	}
	long := Reason("text/plain", []byte(strings.Repeat("é", 1000)))
	if n := utf8.RuneCountInString(long); n != maxReason+1 || !utf8.ValidString(long) || !strings.HasSuffix(long, "…") {
		t.Errorf("a long reason: %d runes, valid %v", n, utf8.ValidString(long))
	}
}

// Bytes whose lower case is longer or shorter than they are (invalid
// UTF-8, the Kelvin sign, 'Ⱥ') before a title do not move where the title
// is read from: a peer's page cannot make Reason read out of range, or
// the wrong text.
func TestReasonOfAPageWithOddBytes(t *testing.T) {
	for _, lead := range []string{strings.Repeat("\xff", 100), strings.Repeat("\u212a", 100), strings.Repeat("Ⱥ", 100), "İİ"} {
		body := "<html>" + lead + "<TITLE>Error 403 Forbidden</TITLE></html>"
		if got := Reason("text/html", []byte(body)); got != "Forbidden" {
			t.Errorf("a title after %q...: Reason = %q, want %q", lead[:3], got, "Forbidden")
		}
	}
}
