package gateway

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// The query id, state and error come from the start of an answer, plain
// or gzipped, also when the kept start cuts the answer short.
func TestAnswerHead(t *testing.T) {
	answer := `{"id":"q1","infoUri":"http://c/ui/q1","columns":[{"name":"id"}],"stats":{"state":"FAILED","nodes":1},"error":{"message":"line 1:1: boom","errorName":"SYNTAX_ERROR"},"data":[` + strings.Repeat(`[1],`, 5000) + `[1]]}`
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(answer))
	w.Close()
	for _, c := range []struct {
		name    string
		head    []byte
		gzipped bool
	}{
		{"plain", []byte(answer)[:headBytes], false},
		{"gzip", gz.Bytes()[:min(gz.Len(), 200)], true},
	} {
		id, state, msg := answerHead(c.head, c.gzipped)
		if id != "q1" || state != "FAILED" || msg != "SYNTAX_ERROR: line 1:1: boom" {
			t.Errorf("%s: %q %q %q", c.name, id, state, msg)
		}
	}
	if id, _, _ := answerHead([]byte(`{"id":"q2","data":[[1],[2`), false); id != "q2" {
		t.Errorf("a cut answer: id %q", id)
	}
	if id, _, _ := answerHead([]byte(`not json`), false); id != "" {
		t.Errorf("not JSON: id %q", id)
	}
}
