package coordinator

import (
	"fmt"
	"html"
	"net/http"
)

// refuse answers a request the servers turn down without a message of their own (a path no
// resource serves, a token out of turn, a parameter JAX-RS cannot convert): Trino's airlift
// writes the status as text/plain, PrestoDB 0.287 leaves the answer to Jetty, whose error
// page is HTML (seen on both: interop/realservers TestDifferentialNotFound and
// TestDifferentialTokenRules). message says why in the simulator's text/plain answers.
func (c *Coordinator) refuse(w http.ResponseWriter, r *http.Request, status int, message string) {
	if c.flavour == Trino {
		writeText(w, status, message)
		return
	}
	writeJettyErrorPage(w, r, status)
}

// writeJettyErrorPage writes Jetty 9's error page for status, as PrestoDB 0.287 sends it
// (org.eclipse.jetty.server.handler.ErrorHandler: text/html in ISO-8859-1, "Problem
// accessing" the path, the reason).
func writeJettyErrorPage(w http.ResponseWriter, r *http.Request, status int) {
	h := w.Header()
	h.Set("Content-Type", "text/html;charset=iso-8859-1")
	h.Set("Cache-Control", "must-revalidate,no-cache,no-store")
	w.WriteHeader(status)
	reason := http.StatusText(status)
	_, _ = fmt.Fprintf(w, "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=utf-8\"/>\n"+
		"<title>Error %d %s</title>\n</head>\n<body><h2>HTTP ERROR %d</h2>\n<p>Problem accessing %s. Reason:\n"+
		"<pre>    %s</pre></p>\n</body>\n</html>\n", status, reason, status, html.EscapeString(r.URL.Path), reason)
}
