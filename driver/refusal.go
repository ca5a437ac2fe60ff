package driver

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"strings"
)

// refusalMaxBody bounds what is read of a refusal's body; the reason is in
// its first lines.
const refusalMaxBody = 8 << 10

// refusalMaxReason bounds the reason quoted from a refusal.
const refusalMaxReason = 300

// explainRefusal replaces the body of a coordinator's 401 or 403, which
// the Presto client puts whole into its error, with one line that names
// the coordinator (its base URL), the user and the coordinator's reason. PrestoDB's
// answer is Jetty's error page (airlift's AuthenticationFilter calls
// sendError: "<title>Error 401 Access Denied: Invalid credentials</title>"
// and ten lines of HTML); Trino's is the reason in plain text. The
// request's password never appears: only the user name is read from it.
func explainRefusal(resp *http.Response, req *http.Request, coordinator string) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, refusalMaxBody))
	resp.Body.Close()
	user, _, _ := req.BasicAuth()
	who := ""
	if user != "" {
		who = fmt.Sprintf(" of user %q", user)
	}
	// The status's own text, not the answer's reason phrase: Jetty puts
	// PrestoDB's reason there ("401 Access Denied: Invalid credentials").
	msg := fmt.Sprintf("zkpresto: coordinator %s refused the request%s (%d %s)", coordinator, who, resp.StatusCode, http.StatusText(resp.StatusCode))
	if reason := refusalReason(resp.Header.Get("Content-Type"), body); reason != "" {
		msg += ": " + reason
	}
	resp.Body = io.NopCloser(strings.NewReader(msg))
	resp.ContentLength = int64(len(msg))
	resp.Header.Del("Content-Encoding")
	resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp.Header.Set("Content-Length", fmt.Sprint(len(msg)))
}

// refusalReason is the reason a refusal's body gives: an HTML page's title
// without its "Error 401 " prefix, else the first line of the text.
func refusalReason(contentType string, body []byte) string {
	reason := ""
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/html" {
		lower := bytes.ToLower(body)
		if i := bytes.Index(lower, []byte("<title>")); i >= 0 {
			if j := bytes.Index(lower[i:], []byte("</title>")); j >= 0 {
				reason = html.UnescapeString(string(body[i+len("<title>") : i+j]))
				if f := strings.Fields(reason); len(f) >= 2 && f[0] == "Error" {
					reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(reason, "Error"), " "+f[1]))
				}
			}
		}
	} else {
		reason, _, _ = strings.Cut(string(body), "\n")
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if r := []rune(reason); len(r) > refusalMaxReason {
		reason = string(r[:refusalMaxReason]) + "…"
	}
	return reason
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
