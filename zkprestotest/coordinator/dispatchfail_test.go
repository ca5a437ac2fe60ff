package coordinator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A statement that does not parse fails at dispatch: the first GET of its
// queued nextUri answers FAILED with the SYNTAX_ERROR and its location, no
// nextUri, and a repeat of that GET answers the same, as the real servers
// did for a missing table (interop/node TestRealServerFailure).
func TestSyntaxErrorFailsAtDispatch(t *testing.T) {
	for _, flavour := range []Flavour{Presto, Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: flavour, QueuedPolls: 2})
			log := runLogged(t, c, nil, "SELECT syntax(1, 8)", false)
			if len(log) != 2 || !strings.Contains(log[1].uri, "/v1/statement/queued/") {
				var uris []string
				for _, a := range log {
					uris = append(uris, a.uri)
				}
				t.Fatalf("answers from %v; want the POST's, then the failure at the first GET of the queued resource", uris)
			}
			var qe struct {
				ErrorName     string          `json:"errorName"`
				ErrorLocation json.RawMessage `json:"errorLocation"`
			}
			if err := json.Unmarshal(log[1].body["error"], &qe); err != nil || qe.ErrorName != "SYNTAX_ERROR" ||
				string(qe.ErrorLocation) != `{"lineNumber":1,"columnNumber":8}` {
				t.Fatalf("the queued resource's answer: error %s", log[1].body["error"])
			}
			_, first := exchange(t, http.MethodGet, log[1].uri, nil, "")
			_, again := exchange(t, http.MethodGet, log[1].uri, nil, "")
			if !bytes.Equal(first, again) || !bytes.Contains(first, []byte("SYNTAX_ERROR")) {
				t.Fatalf("the repeated GET answered %s, then %s; want the failure each time", first, again)
			}
		})
	}
}
