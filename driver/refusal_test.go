package driver_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A coordinator that refuses the credentials (401) or the request (403)
// fails the statement with one line that names the coordinator, the user
// and the coordinator's reason, and never the password: PrestoDB 0.287
// answers Jetty's HTML error page (seen in interop/realservers,
// TestPasswordAuthentication), Trino 476 the reason in plain text. The
// statement is the client's fault, so it goes to no other coordinator.
func TestRefusedCredentialsSayWhoRefusedAndWhy(t *testing.T) {
	quietPrestoClient(t)
	const password = "s3cret-Tr0ub4dor"
	jettyPage := "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=utf-8\"/>\n" +
		"<title>Error 401 Access Denied: Invalid credentials</title>\n</head>\n<body><h2>HTTP ERROR 401</h2>\n" +
		"<p>Problem accessing /v1/statement. Reason:\n<pre>    Access Denied: Invalid credentials</pre></p>\n</body>\n</html>\n"
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		reason                  string
	}{
		{"PrestoDB's Jetty page", "text/html;charset=iso-8859-1", jettyPage, http.StatusUnauthorized, "Access Denied: Invalid credentials"},
		{"Trino's text", "text/plain", "Password not allowed for insecure authentication\n", http.StatusUnauthorized, "Password not allowed for insecure authentication"},
		{"a 403", "text/html", "<html><head><title>Error 403 Forbidden: Authentication over HTTP is not enabled</title></head></html>", http.StatusForbidden, "Forbidden: Authentication over HTTP is not enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refuse := func(h *hostile, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.Header().Set("WWW-Authenticate", `Basic realm="Presto"`)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}
			a, b := startHostile(t, false, refuse), startHostile(t, false, refuse)
			db, _ := openConnector(t, "presto://alice:"+password+"@"+a.addr()+","+b.addr()+"/hive;zooKeeperStrategy=poll;retries=3")
			_, err := db.Exec("SELECT 1")
			if err == nil {
				t.Fatal("a refused statement succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || strings.Contains(msg, "<") {
				t.Errorf("error %q: want one line of text", msg)
			}
			if strings.Contains(msg, password) {
				t.Errorf("error %q carries the password", msg)
			}
			refusedBy := ""
			for _, h := range []*hostile{a, b} {
				if strings.Contains(msg, "http://"+h.addr()) {
					refusedBy = h.addr()
				}
			}
			if refusedBy == "" || !strings.Contains(msg, tc.reason) || !strings.Contains(msg, `"alice"`) || !strings.Contains(msg, fmt.Sprintf("(%d %s)", tc.status, http.StatusText(tc.status))) {
				t.Errorf("error %q: want the coordinator, user \"alice\", %q and the reason %q", msg, http.StatusText(tc.status), tc.reason)
			}
			if got := a.posts.Load() + b.posts.Load(); got != 1 {
				t.Errorf("the refused statement was sent %d times, want once", got)
			}
		})
	}
}

// A gateway that refuses a statement (503: draining, or no coordinator in
// its grace) says why in its answer; the statement's error carries that,
// not only "HTTP 503".
func TestARefusalSaysWhatTheAnswerSaid(t *testing.T) {
	quietPrestoClient(t)
	draining := func(h *hostile, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"id":"","stats":{"state":"FAILED"},"error":{"message":"zkpresto gateway is draining; send the statement again","errorCode":66039,"errorName":"ZKPRESTO_GATEWAY","errorType":"EXTERNAL"}}`))
	}
	gw := startHostile(t, false, draining)
	db, _ := openConnector(t, "presto://"+gw.addr()+"/hive?user=alice")
	_, err := db.Exec("SELECT 1")
	if err == nil {
		t.Fatal("a refused statement succeeded")
	}
	for _, want := range []string{"HTTP 503 Service Unavailable: ZKPRESTO_GATEWAY: zkpresto gateway is draining; send the statement again", gw.addr()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
