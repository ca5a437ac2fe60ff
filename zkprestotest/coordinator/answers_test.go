package coordinator

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// answerLog is each answer of a statement, in order, with its headers.
type answerLog struct {
	uri    string
	header http.Header
	body   map[string]json.RawMessage
}

// executingAnswer reports whether a is the executing resource's: an answer to a GET of an
// executing link, or PrestoDB's queued link once the query is dispatched, which answers the
// executing resource's first page (pollQueued).
func (a answerLog) executingAnswer() bool {
	if strings.Contains(a.uri, "/executing/") {
		return true
	}
	var stats struct{ State string }
	_ = json.Unmarshal(a.body["stats"], &stats)
	return strings.Contains(a.uri, "/queued/") && stats.State != "QUEUED"
}

// runLogged submits stmt and polls it to the end, keeping every answer; with replay, each
// executing answer is fetched twice, the second a retry of the last token.
func runLogged(t *testing.T, c *Coordinator, header http.Header, stmt string, replay bool) []answerLog {
	t.Helper()
	resp, body := exchange(t, http.MethodPost, c.URL()+"/v1/statement", header, stmt)
	var log []answerLog
	add := func(uri string, resp *http.Response, body []byte) string {
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", uri, resp.StatusCode, body)
		}
		m := map[string]json.RawMessage{}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		log = append(log, answerLog{uri: uri, header: resp.Header, body: m})
		var next string
		_ = json.Unmarshal(m["nextUri"], &next)
		return next
	}
	next := add("POST", resp, body)
	for next != "" {
		uri := next
		resp, body = exchange(t, http.MethodGet, uri, header, "")
		next = add(uri, resp, body)
		if replay && log[len(log)-1].executingAnswer() {
			resp, body = exchange(t, http.MethodGet, uri, header, "")
			add(uri, resp, body)
		}
	}
	return log
}

// Session headers come on every executing answer once the statement's task has run, retries
// included, in the flavour's spelling; the queued resource's answers carry none.
func TestSessionHeadersOnEveryAnswer(t *testing.T) {
	for _, flavour := range []Flavour{Presto, Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: flavour, QueuedPolls: 1, Latency: 30 * time.Millisecond})
			prefix, other := "X-Presto-", "X-Trino-"
			if flavour == Trino {
				prefix, other = other, prefix
			}
			user := hdr(prefix+"User", "u", prefix+"Catalog", "hive", prefix+"Transaction-Id", "NONE")
			log := runLogged(t, c, user, "START TRANSACTION", true)
			txn := ""
			for _, a := range log {
				if a.executingAnswer() {
					if txn == "" {
						txn = a.header.Get(prefix + "Started-Transaction-Id")
					}
					if got := a.header.Get(prefix + "Started-Transaction-Id"); got == "" || got != txn {
						t.Errorf("%s: Started-Transaction-Id %q, want %q on every executing answer", a.uri, got, txn)
					}
				} else if got := a.header.Get(prefix + "Started-Transaction-Id"); got != "" {
					t.Errorf("%s: a queued answer carries Started-Transaction-Id %q", a.uri, got)
				}
				if got := a.header.Get(other + "Started-Transaction-Id"); got != "" {
					t.Errorf("%s: %sStarted-Transaction-Id on a %s coordinator", a.uri, other, flavour)
				}
			}
			// The one executing answer, the last, and its retry.
			executing := 0
			for _, a := range log {
				if a.executingAnswer() {
					executing++
				}
			}
			if executing < 2 {
				t.Fatalf("START TRANSACTION took %d executing answers, want at least the last and its retry", executing)
			}
			for _, tc := range [][2]string{
				{"SET SESSION a.b = 'v'", "Set-Session"},
				{"RESET SESSION a.b", "Clear-Session"},
				{"USE hive.web", "Set-Schema"},
				{"SET PATH hive.web", "Set-Path"},
				{"SET ROLE admin IN hive", "Set-Role"},
				{"PREPARE p FROM SELECT 1", "Added-Prepare"},
				{"DEALLOCATE PREPARE p", "Deallocated-Prepare"},
				{"COMMIT", "Clear-Transaction-Id"},
			} {
				stmt, want := tc[0], tc[1]
				h := hdr(prefix+"User", "u", prefix+"Catalog", "hive", prefix+"Prepared-Statement", "p=SELECT+1")
				if stmt == "COMMIT" {
					h.Set(prefix+"Transaction-Id", txn)
				}
				log := runLogged(t, c, h, stmt, false)
				seen := 0
				for _, a := range log {
					if a.executingAnswer() {
						seen++
						if a.header.Get(prefix+want) == "" {
							t.Errorf("%s: answer %s has no %s%s", stmt, a.uri, prefix, want)
						}
					}
				}
				if seen < 1 {
					t.Errorf("%s: %d executing answers, want the last", stmt, seen)
				}
			}
		})
	}
}

// DML answers carry updateType on every executing page and the count as updateCount from
// the page of its row on, the last one included; warn('m') puts a warning on every answer
// after dispatch; syntax(L, C) fails with SYNTAX_ERROR and an errorLocation; every executing
// answer has a progressPercentage and a rootStage.
func TestAnswersCarryWhatServersSend(t *testing.T) {
	for _, flavour := range []Flavour{Presto, Trino} {
		t.Run(string(flavour), func(t *testing.T) {
			c := start(t, Options{Flavour: flavour, Latency: 30 * time.Millisecond})
			for stmt, wantType := range map[string]string{
				"INSERT INTO t SELECT * FROM rows(7)":              "INSERT",
				"CREATE TABLE t2 AS SELECT * FROM rows(7)":         "CREATE TABLE",
				"delete from t where n in (select * from rows(7))": "DELETE",
			} {
				log := runLogged(t, c, nil, stmt, true)
				last := log[len(log)-1].body
				var count int64
				if err := json.Unmarshal(last["updateCount"], &count); err != nil || count != 7 {
					t.Errorf("%s: last answer's updateCount %s, want 7", stmt, last["updateCount"])
				}
				counted := false
				for _, a := range log {
					var typ string
					_ = json.Unmarshal(a.body["updateType"], &typ)
					executing := a.executingAnswer()
					if executing && typ != wantType {
						t.Errorf("%s: %s has updateType %q, want %q", stmt, a.uri, typ, wantType)
					}
					if _, ok := a.body["data"]; ok {
						if string(a.body["data"]) != "[[7]]" {
							t.Errorf("%s: data %s, want [[7]]", stmt, a.body["data"])
						}
						counted = true
					}
					if _, has := a.body["updateCount"]; counted && !has {
						t.Errorf("%s: %s lost the updateCount", stmt, a.uri)
					}
				}
				if !counted {
					t.Errorf("%s: no answer carried the count row", stmt)
				}
			}

			log := runLogged(t, c, nil, "SELECT * FROM rows(3) WHERE warn('it''s slow')", false)
			for i, a := range log {
				var ws []struct {
					WarningCode struct {
						Code int    `json:"code"`
						Name string `json:"name"`
					} `json:"warningCode"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(a.body["warnings"], &ws); err != nil {
					t.Fatalf("warnings %s: %v", a.body["warnings"], err)
				}
				if i == 0 {
					if len(ws) != 0 {
						t.Errorf("the POST's answer has warnings %s, before analysis", a.body["warnings"])
					}
					continue
				}
				if len(ws) != 1 || ws[0].Message != "it's slow" || ws[0].WarningCode.Code != 1 || ws[0].WarningCode.Name != "TOO_MANY_STAGES" {
					t.Errorf("%s: warnings %s", a.uri, a.body["warnings"])
				}
			}
			for _, a := range log {
				if !a.executingAnswer() {
					continue
				}
				var st struct {
					State              string   `json:"state"`
					ProgressPercentage *float64 `json:"progressPercentage"`
					RootStage          *struct {
						StageID         string            `json:"stageId"`
						State           string            `json:"state"`
						Done            bool              `json:"done"`
						Nodes           int               `json:"nodes"`
						TotalSplits     int               `json:"totalSplits"`
						CompletedSplits int               `json:"completedSplits"`
						SubStages       []json.RawMessage `json:"subStages"`
					} `json:"rootStage"`
				}
				if err := json.Unmarshal(a.body["stats"], &st); err != nil {
					t.Fatal(err)
				}
				rs := st.RootStage
				if st.ProgressPercentage == nil || rs == nil || rs.StageID != "0" || rs.Nodes != 1 || rs.TotalSplits < 1 || rs.SubStages == nil ||
					rs.Done != (st.State == "FINISHED") || (st.State == "FINISHED" && (*st.ProgressPercentage != 100 || rs.CompletedSplits != rs.TotalSplits)) {
					t.Errorf("%s: stats %s", a.uri, a.body["stats"])
				}
			}

			log = runLogged(t, c, nil, "SELECT syntax(2, 8)", false)
			var qe struct {
				ErrorName     string `json:"errorName"`
				ErrorCode     int    `json:"errorCode"`
				Message       string `json:"message"`
				ErrorLocation *struct {
					LineNumber   int `json:"lineNumber"`
					ColumnNumber int `json:"columnNumber"`
				} `json:"errorLocation"`
			}
			if err := json.Unmarshal(log[len(log)-1].body["error"], &qe); err != nil {
				t.Fatal(err)
			}
			if qe.ErrorName != "SYNTAX_ERROR" || qe.ErrorCode != 1 || !strings.HasPrefix(qe.Message, "line 2:8: ") ||
				qe.ErrorLocation == nil || qe.ErrorLocation.LineNumber != 2 || qe.ErrorLocation.ColumnNumber != 8 {
				t.Errorf("syntax(2, 8): error %s", log[len(log)-1].body["error"])
			}
		})
	}
}
