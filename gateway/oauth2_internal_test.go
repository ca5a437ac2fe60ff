package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/gateway/token"
)

// A token poll's nextUri is rewritten whatever the case of its key: Go's
// encoding/json, as trino-go-client decodes the answer, matches keys
// without regard to case, so a "NextUri" left as the coordinator sent it
// would send the client to the coordinator directly.
func TestRewriteTokenPollAnyCase(t *testing.T) {
	keys, err := token.ParseKeys("k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{keys: keys}
	for _, body := range []string{
		`{"nextUri":"http://10.0.0.7:8080/oauth2/token/abc"}`,
		`{"NextUri":"http://10.0.0.7:8080/oauth2/token/abc"}`,
		`{"NEXTURI":"http://10.0.0.7:8080/oauth2/token/abc"}`,
		`{"nextUri":"http://10.0.0.7:8080/oauth2/token/abc","NextURI":"http://10.0.0.7:8080/v1/query/x"}`,
	} {
		out := string(g.rewriteTokenPoll([]byte(body), "https://gw.example", "http://10.0.0.7:8080"))
		if strings.Contains(out, "10.0.0.7") {
			t.Errorf("%s\nrewritten as %s", body, out)
		}
		var v struct {
			NextURI string `json:"nextUri"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if v.NextURI != "" && !strings.HasPrefix(v.NextURI, "https://gw.example/_zk/k1.") {
			t.Errorf("%s\nrewritten as %s: a client reads nextUri %q", body, out, v.NextURI)
		}
	}
}
