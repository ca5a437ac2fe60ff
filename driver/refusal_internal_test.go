package driver

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Jetty's sendError puts PrestoDB's reason into the status line too
// ("HTTP/1.1 401 Access Denied: Invalid credentials", seen on PrestoDB
// 0.287), which net/http's test servers cannot write: the explanation
// gives the status's own text, once, and the reason once.
func TestExplainRefusalOfAReasonInTheStatusLine(t *testing.T) {
	resp := &http.Response{
		Status:     "401 Access Denied: Invalid credentials",
		StatusCode: http.StatusUnauthorized,
		Header:     http.Header{"Content-Type": {"text/html;charset=iso-8859-1"}},
		Body:       io.NopCloser(strings.NewReader("<html><head><title>Error 401 Access Denied: Invalid credentials</title></head></html>")),
	}
	req, err := http.NewRequest(http.MethodPost, "https://c1:8443/v1/statement", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("alice", "s3cret")
	explainRefusal(resp, req, "https://c1:8443")
	body, _ := io.ReadAll(resp.Body)
	want := `driver: coordinator https://c1:8443 refused the request of user "alice" (401 Unauthorized): Access Denied: Invalid credentials`
	if string(body) != want {
		t.Fatalf("explained as %q, want %q", body, want)
	}
}
