package driver

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// explainRefusal replaces the body of a coordinator's 401 or 403, which
// the Presto client puts whole into its error, with one line that names
// the coordinator (its base URL), the user and the coordinator's reason. PrestoDB's
// answer is Jetty's error page (airlift's AuthenticationFilter calls
// sendError: "<title>Error 401 Access Denied: Invalid credentials</title>"
// and ten lines of HTML); Trino's is the reason in plain text. The
// request's password never appears: only the user name is read from it.
func explainRefusal(resp *http.Response, req *http.Request, coordinator string) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, wire.ReasonScan))
	resp.Body.Close()
	user, _, _ := req.BasicAuth()
	who := ""
	if user != "" {
		who = fmt.Sprintf(" of user %q", user)
	}
	// The status's own text, not the answer's reason phrase: Jetty puts
	// PrestoDB's reason there ("401 Access Denied: Invalid credentials").
	msg := fmt.Sprintf("driver: coordinator %s refused the request%s (%d %s)", coordinator, who, resp.StatusCode, http.StatusText(resp.StatusCode))
	if reason := wire.Reason(resp.Header.Get("Content-Type"), body); reason != "" {
		msg += ": " + reason
	}
	resp.Body = io.NopCloser(strings.NewReader(msg))
	resp.ContentLength = int64(len(msg))
	resp.Header.Del("Content-Encoding")
	resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp.Header.Set("Content-Length", fmt.Sprint(len(msg)))
}

// coordinatorURL is the base URL the statement of a goes to, for errors.
func (t *routingTransport) coordinatorURL(a *attempt, req *http.Request) string {
	if a == nil || a.Node == nil {
		return req.URL.Scheme + "://" + req.URL.Host
	}
	if t.forceTLS || a.Node.Scheme == "https" {
		return "https://" + a.Node.Addr
	}
	return "http://" + a.Node.Addr
}
