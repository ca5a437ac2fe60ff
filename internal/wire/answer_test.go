package wire

import (
	"strings"
	"testing"
)

// An answer is decoded once into what the rules read of it: ids, the
// next page, the state, a failed query's error and whether rows came; the
// rows are skipped, and a page that is not a JSON object is an error.
func TestDecodeAnswer(t *testing.T) {
	page := `{"id":"q1","infoUri":"http://c1/ui/q1","nextUri":"http://c1/v1/statement/queued/q1/x/1",` +
		`"data":[[1,"a"],[2,"b"]],"stats":{"state":"QUEUED","queued":true},` +
		`"error":{"message":"starting","errorCode":65544,"errorName":"SERVER_STARTING_UP","errorType":"INTERNAL_ERROR"}}`
	a, err := DecodeAnswer([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if !a.HasRows() || a.ID != "q1" || a.InfoURI != "http://c1/ui/q1" || a.NextURI != "http://c1/v1/statement/queued/q1/x/1" || a.Stats.State != "QUEUED" {
		t.Errorf("ids, next page or state wrong: %+v", a)
	}
	if a.Ended() {
		t.Error("an answer with a nextUri ended")
	}
	if a.Error == nil || a.ErrorName() != "SERVER_STARTING_UP" || a.Error.ErrorCode != 65544 || a.Error.ErrorType != "INTERNAL_ERROR" || a.Error.Message != "starting" {
		t.Errorf("error %+v", a.Error)
	}

	done, err := DecodeAnswer([]byte(`{"id":"q2","stats":{"state":"FINISHED"}}`))
	if err != nil || !done.Ended() || done.ErrorName() != "" || done.Error != nil {
		t.Errorf("a finished answer: %+v %v", done, err)
	}
	for _, bad := range []string{``, `<html>`, `[1]`, `{"id":`} {
		if _, err := DecodeAnswer([]byte(bad)); err == nil || !strings.Contains(err.Error(), "statement answer") {
			t.Errorf("DecodeAnswer(%q) = %v, want an error naming the answer", bad, err)
		}
	}
}

// HasRows says whether an answer's data holds rows: a non-empty array,
// or the spooling protocol's segments; not an absent, null or empty one.
func TestAnswerHasRows(t *testing.T) {
	for page, want := range map[string]bool{
		`{"id":"q"}`:                                         false,
		`{"id":"q","data":null}`:                             false,
		`{"id":"q","data":[]}`:                               false,
		`{"id":"q","data":[ ]}`:                              false,
		`{"id":"q","data": [ ] }`:                            false,
		`{"id":"q","data":[[1]]}`:                            true,
		`{"id":"q","data":[[null]]}`:                         true,
		`{"id":"q","data":[[]]}`:                             true,
		`{"id":"q","data":{"segments":[{"type":"inline"}]}}`: true,
	} {
		a, err := DecodeAnswer([]byte(page))
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		if a.HasRows() != want {
			t.Errorf("%s: HasRows() = %v, want %v", page, a.HasRows(), want)
		}
	}
}
