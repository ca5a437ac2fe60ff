package realservers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// The differential tests send the same raw exchange to the real server of
// each flavour and to the simulator of that flavour, and compare what a
// client reads of the answers: status codes, content types, the headers,
// the JSON keys, the shapes of the links. The simulator has no SQL, so each
// side gets the statement that behaves alike: a scan of a tpch table on the
// server, rows(N) on the simulator. Each row of docs/development.md's "What
// the simulator follows" has its test here or elsewhere: TestDifferentialNoWorkers
// (no workers), TestDifferentialQueueFull (a full queue),
// TestDifferentialStartTransactionNeedsTheHeader and
// TestDifferentialAbortedTransaction (transactions).

// sides runs exchange on the flavour's first real server and on a
// simulator of the flavour, and returns what each saw.
func sides[T any](t *testing.T, f *flavourFleet, opts coordinator.Options, exchange func(t *testing.T, baseURL string, real bool) T) (real, simulated T) {
	t.Helper()
	opts.Flavour = f.flavour
	sim, err := coordinator.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return exchange(t, f.servers[0].URL(), true), exchange(t, sim.URL(), false)
}

// compare fails t when the simulator saw other than the real server.
func compare[T any](t *testing.T, f *flavourFleet, real, simulated T) {
	t.Helper()
	r, _ := json.Marshal(real)
	s, _ := json.Marshal(simulated)
	if !bytes.Equal(r, s) {
		t.Errorf("%s %s and its simulator differ:\n real      %s\n simulator %s", f.flavour, f.servers[0].Version(), r, s)
	}
}

// scan is a statement of a few pages: a tpch scan on the real server,
// rows(N) on the simulator.
func scan(real bool) string {
	if real {
		return "SELECT * FROM tpch.tiny.lineitem"
	}
	return "SELECT * FROM rows(1000)"
}

// toExecuting follows a submission to its first answer that points to the
// executing resource.
func toExecuting(t *testing.T, first rawAnswer) []rawAnswer {
	t.Helper()
	all := follow(t, first, func(a rawAnswer) bool { return executing(a.next()) })
	if !executing(all[len(all)-1].next()) {
		t.Fatalf("the statement ended on the queued resource: %s", all[len(all)-1].Body)
	}
	return all
}

// Lazy submission: the POST answers at once with a queued link; until its
// first GET the query resource does not know the query (410) and its
// DELETE is a no-op 204; the first GET runs it (trino:
// QueuedStatementResource.Query.submitIfNeeded, QueryResource.getQueryInfo
// and cancelQuery; prestodb: the same classes).
func TestDifferentialLazySubmission(t *testing.T) {
	type facts struct {
		PostLink                  string
		InfoBefore                int
		InfoBeforeType            string
		DeleteBefore, DeleteBytes int
		Ended                     string
		InfoAfter                 int
		InfoAfterType             string
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		user := []string{f.flavour.HeaderPrefix() + "User", "test"}
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) facts {
			post := rawSubmit(t, base, f.flavour, "SELECT 1")
			id := post.str("id")
			var fs facts
			fs.PostLink = parseLink(t, f.flavour, id, post.next()).Shape
			info := rawDo(t, http.MethodGet, base+"/v1/query/"+id, "", user...)
			fs.InfoBefore, fs.InfoBeforeType = info.Status, info.ContentType
			del := rawDo(t, http.MethodDelete, base+"/v1/query/"+id, "", user...)
			fs.DeleteBefore, fs.DeleteBytes = del.Status, len(del.Body)
			all := follow(t, post, nil)
			last := all[len(all)-1]
			fs.Ended = last.state() + " " + last.errorName()
			info = rawDo(t, http.MethodGet, base+"/v1/query/"+id, "", user...)
			fs.InfoAfter, fs.InfoAfterType = info.Status, info.ContentType
			return fs
		})
		compare(t, f, real, simulated)
		if real.InfoBefore != http.StatusGone || real.DeleteBefore != http.StatusNoContent || real.Ended != "FINISHED " {
			t.Errorf("%s no longer submits lazily: %+v", f.flavour, real)
		}
	})
}

// Two phases and slugs: the queued resource's links, tokens from 1, then
// the executing resource's, tokens counted on; Trino's slug changes with
// every link, PrestoDB's is one per query (trino: QueuedStatementResource
// getQueuedUri and getRedirectUri, Slug.java; prestodb: QueryResourceUtil,
// QueuedStatementResource.Query.slug).
func TestDifferentialTwoPhasesAndSlugs(t *testing.T) {
	type facts struct {
		Shapes          []string // distinct shapes, in order, tokens left out
		QueuedTokens    string   // "1.." when they count from 1 without a gap
		ExecutingTokens string   // the first and whether they count on without a gap
		SlugsPerLink    bool     // no two links share a slug
		OneSlug         bool     // every link has the same slug
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) facts {
			all := follow(t, rawSubmit(t, base, f.flavour, scan(real)), nil)
			id := all[0].str("id")
			var fs facts
			slugs := map[string]int{}
			var queued, exec []int64
			for _, a := range all {
				if a.next() == "" {
					continue
				}
				l := parseLink(t, f.flavour, id, a.next())
				shape := l.Shape[:strings.LastIndex(l.Shape, "/")]
				if i := strings.Index(l.Shape, "?"); i >= 0 {
					shape = l.Shape[:strings.LastIndex(l.Shape[:i], "/")] + l.Shape[i:]
				}
				if !slices.Contains(fs.Shapes, shape) {
					fs.Shapes = append(fs.Shapes, shape)
				}
				slugs[l.Slug]++
				if l.Phase == "queued" {
					queued = append(queued, l.Token)
				} else {
					exec = append(exec, l.Token)
				}
			}
			fs.QueuedTokens = counting(queued)
			fs.ExecutingTokens = counting(exec)
			fs.OneSlug = len(slugs) == 1
			fs.SlugsPerLink = len(slugs) == len(all)-1
			return fs
		})
		// PrestoDB 0.287's queued resource answers the executing resource's
		// first page itself, so its executing links count from 1
		// (TestDifferentialFirstGetCarriesRows).
		if want := map[coordinator.Flavour]string{coordinator.Trino: "from 0, +1", coordinator.Presto: "from 1, +1"}[f.flavour]; real.ExecutingTokens != want {
			t.Errorf("%s's executing tokens %s, want %s", f.flavour, real.ExecutingTokens, want)
		}
		compare(t, f, real, simulated)
	})
}

// counting describes a run of tokens: its first, and "+1" when each is one
// more than the one before.
func counting(tokens []int64) string {
	if len(tokens) == 0 {
		return "none"
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] != tokens[i-1]+1 {
			return fmt.Sprintf("from %d with gaps %v", tokens[0], tokens)
		}
	}
	return fmt.Sprintf("from %d, +1", tokens[0])
}

// Token rules of the executing resource: the last token again is the same
// page, byte for byte; an older one 410; one past the next 404. The last
// queued link again, once the executing resource has answered: Trino
// answers it, PrestoDB 0.287 410 (trino: server/protocol/Query.java
// getNextResult, QueuedStatementResource.Query.getQueryResults; prestodb:
// the same classes).
func TestDifferentialTokenRules(t *testing.T) {
	type facts struct {
		SamePage         bool
		Older, OlderType string
		PastNext         string // PrestoDB only: a Trino link cannot be forged
		QueuedAgain      int
		ExecNext         string
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) facts {
			var fs facts
			first := rawSubmit(t, base, f.flavour, scan(real))
			queued := toExecuting(t, first)
			lastQueued := queued[len(queued)-1]
			t0 := lastQueued.next()
			p0 := rawDo(t, http.MethodGet, t0, "")
			again := rawDo(t, http.MethodGet, t0, "")
			fs.SamePage = p0.Status == http.StatusOK && bytes.Equal(p0.Body, again.Body)
			// The queued link that led here, again.
			fs.QueuedAgain = rawDo(t, http.MethodGet, queued[len(queued)-2].next(), "").Status
			t1 := p0.next()
			p1 := rawDo(t, http.MethodGet, t1, "")
			if p1.Status != http.StatusOK || p1.next() == "" {
				t.Fatalf("the second executing page: %d %s", p1.Status, p1.Body)
			}
			older := rawDo(t, http.MethodGet, t0, "")
			fs.Older, fs.OlderType = fmt.Sprint(older.Status), older.ContentType
			if f.flavour == coordinator.Presto {
				l := parseLink(t, f.flavour, first.str("id"), p1.next())
				fs.PastNext = fmt.Sprint(rawDo(t, http.MethodGet, withToken(p1.next(), l.Token+1), "").Status)
			}
			fs.ExecNext = fmt.Sprint(rawDo(t, http.MethodDelete, p1.next(), "").Status)
			return fs
		})
		compare(t, f, real, simulated)
		if !real.SamePage || real.Older != "410" {
			t.Errorf("%s changed its token rules: %+v", f.flavour, real)
		}
	})
}

// Cancel: DELETE on a nextUri answers 204 without a body and the query
// ends USER_CANCELED; before the first GET Trino cancels the query, which
// then never runs, and PrestoDB 0.287 fails the DELETE with a 500 and runs
// the query at the GET (trino: QueuedStatementResource.cancelQuery,
// ExecutingStatementResource.cancelQuery; prestodb:
// QueuedStatementResource.Query.cancel reads querySubmissionFuture, null
// until the first GET).
func TestDifferentialCancel(t *testing.T) {
	type facts struct {
		QueuedDelete, QueuedDeleteType string
		QueuedDeleteBytes              int
		AfterQueuedDelete              string
		Delete, DeleteBytes            int
		AfterDelete                    string
		AgainDelete                    int
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) facts {
			var fs facts
			post := rawSubmit(t, base, f.flavour, "SELECT 1")
			del := rawDo(t, http.MethodDelete, post.next(), "")
			fs.QueuedDelete, fs.QueuedDeleteType, fs.QueuedDeleteBytes = fmt.Sprint(del.Status), del.ContentType, len(del.Body)
			if del.Status != http.StatusNoContent {
				fs.QueuedDeleteBytes = 0 // a stack trace, whose length is the JVM's
			}
			all := follow(t, post, nil)
			fs.AfterQueuedDelete = all[len(all)-1].state() + " " + all[len(all)-1].errorName()

			slow := "SELECT sleep(60000)"
			if real {
				slow = "SELECT count(*) FROM tpch.sf1000.lineitem"
			}
			running := toExecuting(t, rawSubmit(t, base, f.flavour, slow))
			link := running[len(running)-1].next()
			d := rawDo(t, http.MethodDelete, link, "")
			fs.Delete, fs.DeleteBytes = d.Status, len(d.Body)
			end := follow(t, rawDo(t, http.MethodGet, link, ""), nil)
			fs.AfterDelete = end[len(end)-1].state() + " " + end[len(end)-1].errorName()
			fs.AgainDelete = rawDo(t, http.MethodDelete, link, "").Status
			return fs
		})
		if f.flavour == coordinator.Presto {
			// A deliberate difference: the simulator cancels a query DELETEd
			// before its first GET on PrestoDB too, since the driver's and
			// the gateway's tests count what is left with Running, and such a
			// query is never run on 0.287 either unless fetched.
			if real.QueuedDelete != "500" || real.AfterQueuedDelete != "FINISHED " {
				t.Errorf("PrestoDB's DELETE before the first GET: %s, then %s; want 500, then the query run", real.QueuedDelete, real.AfterQueuedDelete)
			}
			real.QueuedDelete, real.QueuedDeleteType, real.AfterQueuedDelete = "", "", ""
			simulated.QueuedDelete, simulated.QueuedDeleteType, simulated.AfterQueuedDelete = "", "", ""
		}
		compare(t, f, real, simulated)
		if real.Delete != http.StatusNoContent || real.DeleteBytes != 0 || real.AfterDelete != "FAILED USER_CANCELED" {
			t.Errorf("%s cancels otherwise now: %+v", f.flavour, real)
		}
	})
}

// HEAD on a nextUri runs as the GET (JAX-RS serves HEAD with the @GET
// method) and drops the body: the GET of the same token then replays the
// page, and the token before it is gone (trino:
// ExecutingStatementResource.getQueryResults is @GET only; prestodb: the
// same).
func TestDifferentialHeadRunsAsGet(t *testing.T) {
	type facts struct {
		Head, HeadBytes    int
		HeadType           string
		GetAfter           int
		Older              int
		SecondHead, GetTwo int
		SameAsHeadAdvanced bool
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) facts {
			var fs facts
			queued := toExecuting(t, rawSubmit(t, base, f.flavour, scan(real)))
			t0 := queued[len(queued)-1].next()
			h := rawDo(t, http.MethodHead, t0, "")
			fs.Head, fs.HeadBytes, fs.HeadType = h.Status, len(h.Body), h.ContentType
			p0 := rawDo(t, http.MethodGet, t0, "")
			fs.GetAfter = p0.Status
			t1 := p0.next()
			fs.SecondHead = rawDo(t, http.MethodHead, t1, "").Status
			// The HEAD of t1 advanced the query: t0 is now two tokens old.
			fs.Older = rawDo(t, http.MethodGet, t0, "").Status
			p1 := rawDo(t, http.MethodGet, t1, "")
			fs.GetTwo = p1.Status
			fs.SameAsHeadAdvanced = p1.next() != "" && p1.next() != t1
			rawDo(t, http.MethodDelete, p1.next(), "")
			return fs
		})
		compare(t, f, real, simulated)
	})
}

// maxWait and targetResultSize: readable values are taken; unreadable ones
// are ignored by Trino and refused 404 by PrestoDB, as JAX-RS refuses a
// @QueryParam it cannot convert (trino and prestodb:
// ExecutingStatementResource.getQueryResults, QueuedStatementResource
// getStatus).
func TestDifferentialMaxWaitAndTargetResultSize(t *testing.T) {
	params := [][2]string{
		{"maxWait", "10ms"}, {"maxWait", "2s"}, {"maxWait", "soon"}, {"maxWait", "-1s"},
		{"targetResultSize", "1kB"}, {"targetResultSize", "0B"}, {"targetResultSize", "lots"},
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) []string {
			var got []string
			sql := scan(real)
			if real {
				sql = "SELECT * FROM tpch.sf1.lineitem" // pages enough for every parameter
			}
			post := rawSubmit(t, base, f.flavour, sql)
			// Each parameter on the first queued link: the queued resource
			// answers its last token again.
			link := post.next()
			for _, p := range params {
				a := rawDo(t, http.MethodGet, withParam(post.next(), p[0], p[1]), "")
				got = append(got, fmt.Sprintf("queued %s=%s: %d %s", p[0], p[1], a.Status, a.ContentType))
				if a.Status == http.StatusOK {
					link = a.next()
				}
			}
			// On to the executing resource.
			for !executing(link) {
				link = rawDo(t, http.MethodGet, link, "").next()
			}
			for _, p := range params {
				a := rawDo(t, http.MethodGet, withParam(link, p[0], p[1]), "")
				got = append(got, fmt.Sprintf("executing %s=%s: %d %s", p[0], p[1], a.Status, a.ContentType))
				if a.Status == http.StatusOK {
					if a.next() == "" {
						t.Fatalf("the statement ended before every parameter was tried: %s", a.Body)
					}
					link = a.next()
				}
			}
			rawDo(t, http.MethodDelete, link, "")
			return got
		})
		compare(t, f, real, simulated)
	})
}

// A statement waiting for a slot stays on the queued resource, QUEUED,
// each poll answered with the next queued link (trino:
// QueuedStatementResource.getStatus waits on Query.waitForDispatched;
// prestodb: the same). The real servers' slot is the tight resource
// group's (queueSource), the simulator's Options.MaxRunning.
func TestDifferentialWaitingForSlot(t *testing.T) {
	type facts struct {
		States, Links []string
	}
	observe := func(t *testing.T, f coordinator.Flavour, running, waiting *rawStatement) facts {
		running.advanceUntil("RUNNING")
		waiting.advanceUntil("QUEUED")
		var fs facts
		for range 3 {
			p := waiting.advance()
			l := parseLink(t, f, p.ID, p.NextURI)
			fs.States = append(fs.States, p.Stats.State)
			fs.Links = append(fs.Links, l.Phase+" "+l.Shape[:strings.LastIndex(l.Shape, "/")])
		}
		return fs
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		s := f.servers[0]
		slow := "SELECT count(*) FROM " + slowTable(t, s, 100000)
		real := observe(t, f.flavour, submitRaw(t, s.URL(), f.flavour, queueSource, slow), submitRaw(t, s.URL(), f.flavour, queueSource, slow))

		sim, err := coordinator.Start(coordinator.Options{Flavour: f.flavour, MaxRunning: 1, Latency: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sim.Close() })
		simulated := observe(t, f.flavour, submitRaw(t, sim.URL(), f.flavour, queueSource, "SELECT 1"), submitRaw(t, sim.URL(), f.flavour, queueSource, "SELECT 2"))
		compare(t, f, real, simulated)
		if !slices.Equal(real.States, []string{"QUEUED", "QUEUED", "QUEUED"}) {
			t.Errorf("%s: a statement waiting for its slot answered %v, want QUEUED", f.flavour, real.States)
		}
	})
}

// Session headers: every executing answer of a session statement carries
// its change, retries included, in the flavour's spelling, and the answers
// that only say QUEUED carry none (trino: Query.getNextResult copies them
// from QueryInfo, ExecutingStatementResource.toResponse writes them;
// prestodb: the same).
func TestDifferentialSessionHeaders(t *testing.T) {
	type answer struct {
		State   string
		Headers []string
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		prefix := f.flavour.HeaderPrefix()
		for _, tc := range []struct{ sql, header string }{
			{"SET SESSION query_max_run_time = '1h'", "Set-Session"},
			{"USE tpch.tiny", "Set-Schema"},
		} {
			real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) []answer {
				all := follow(t, rawSubmit(t, base, f.flavour, tc.sql), nil)
				// The last answer again, as a retry gets it.
				all = append(all, rawDo(t, http.MethodGet, all[len(all)-1].URI, ""))
				var got []answer
				for _, a := range all {
					var hs []string
					for name := range a.Header {
						if strings.HasPrefix(name, "X-Trino-") || strings.HasPrefix(name, "X-Presto-") {
							hs = append(hs, name+": "+a.Header.Get(name))
						}
					}
					slices.Sort(hs)
					// Only a statement's QUEUED answers are told apart from
					// the others: how many a server gives is its timing.
					if a.state() == "QUEUED" || a.state() == "WAITING_FOR_PREREQUISITES" {
						if len(got) > 0 && got[len(got)-1].State == "QUEUED" && slices.Equal(got[len(got)-1].Headers, hs) {
							continue
						}
						got = append(got, answer{State: "QUEUED", Headers: hs})
						continue
					}
					got = append(got, answer{State: a.state(), Headers: hs})
				}
				return got
			})
			compare(t, f, real, simulated)
			last := real[len(real)-1]
			if !slices.ContainsFunc(last.Headers, func(h string) bool { return strings.HasPrefix(h, prefix+tc.header) }) {
				t.Errorf("%s: the real server's retried answer has no %s%s: %+v", tc.sql, prefix, tc.header, real)
			}
		}
	})
}

// The JSON of real answers: DML's updateType and updateCount on the
// memory connector, a syntax error's errorLocation, the keys of stats and
// of its rootStage, and of the answers themselves (trino:
// Query.getNextResult, ProtocolUtil.toStageStats, client QueryResults,
// StatementStats, StageStats, ErrorLocation; prestodb: the same classes).
func TestDifferentialAnswersJSON(t *testing.T) {
	type dml struct {
		Types     []string // updateType of the executing answers, repeats left out
		CountKept bool     // once an answer has updateCount, every later one has
		Final     string   // the last answer's updateCount
		Data      []string
		Columns   string
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		table := "memory.default.diff_" + string(f.flavour)
		t.Cleanup(func() { _, _ = f.servers[0].Query(context.Background(), "DROP TABLE IF EXISTS "+table) })
		for _, stmt := range [][2]string{
			{"CREATE TABLE " + table + " AS SELECT * FROM tpch.tiny.nation", "CREATE TABLE t AS SELECT * FROM rows(25)"},
			{"INSERT INTO " + table + " SELECT * FROM tpch.tiny.nation", "INSERT INTO t SELECT * FROM rows(25)"},
		} {
			real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) dml {
				sql := stmt[1]
				if real {
					sql = stmt[0]
				}
				var d dml
				for _, a := range follow(t, rawSubmit(t, base, f.flavour, sql), nil) {
					if a.URI == "POST" || (a.state() == "QUEUED" || a.state() == "WAITING_FOR_PREREQUISITES") {
						continue
					}
					d.Types = append(d.Types, a.str("updateType"))
					raw, counted := a.JSON["updateCount"]
					switch {
					case counted && d.Final == "":
						d.CountKept = true
					case !counted && d.Final != "":
						d.CountKept = false
					}
					d.Final = string(raw)
					if raw, ok := a.JSON["data"]; ok {
						d.Data = append(d.Data, string(raw))
					}
					if raw, ok := a.JSON["columns"]; ok && d.Columns == "" {
						var cols []struct{ Name, Type string }
						_ = json.Unmarshal(raw, &cols)
						d.Columns = fmt.Sprint(cols)
					}
				}
				d.Types = slices.Compact(d.Types)
				return d
			})
			compare(t, f, real, simulated)
		}

		// The keys of every answer past the queued ones, of their stats, of
		// the root stage and of the error, taken together: which answer has
		// which depends on the servers' timing.
		type shape struct {
			Keys, StatsKeys, RootStageKeys, ErrorKeys []string
			Location                                  string
			ProgressOnEvery                           bool
		}
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) shape {
			sqls := []string{"SELECT * FROM tpch.tiny.nation", "SELECT 1 FROM\nWHERE"}
			if !real {
				sqls = []string{"SELECT * FROM rows(250)", "SELECT syntax(2, 1)"}
			}
			union := func(to []string, raw json.RawMessage) []string {
				to = append(to, keysOf(raw)...)
				slices.Sort(to)
				return slices.Compact(to)
			}
			sh := shape{ProgressOnEvery: true}
			for _, sql := range sqls {
				for _, a := range follow(t, rawSubmit(t, base, f.flavour, sql), nil) {
					if a.state() == "QUEUED" || a.state() == "WAITING_FOR_PREREQUISITES" {
						continue
					}
					st := a.stats()
					sh.Keys = union(sh.Keys, a.Body)
					sh.StatsKeys = union(sh.StatsKeys, a.JSON["stats"])
					sh.RootStageKeys = union(sh.RootStageKeys, st["rootStage"])
					sh.ErrorKeys = union(sh.ErrorKeys, a.JSON["error"])
					sh.ProgressOnEvery = sh.ProgressOnEvery && st["progressPercentage"] != nil
					var e struct {
						ErrorLocation json.RawMessage `json:"errorLocation"`
					}
					if a.field("error", &e) {
						sh.Location = string(e.ErrorLocation)
					}
				}
			}
			return sh
		})
		compare(t, f, real, simulated)
	})
}

// "Not found": a path no resource serves, a statement link of a query the
// server does not know and one whose slug is wrong are 404 (trino:
// ExecutingStatementResource.queryNotFound, text/plain; prestodb: the same
// for a statement link, Jetty's HTML page for a path nothing serves).
func TestDifferentialNotFound(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		real, simulated := sides(t, f, coordinator.Options{}, func(t *testing.T, base string, real bool) []string {
			unknown := "/v1/statement/executing/20260101_000000_00000_nosuch/" + map[coordinator.Flavour]string{
				coordinator.Trino:  "y0000000000000000000000000000000000000000/1",
				coordinator.Presto: "1?slug=x00000000000000000000000000000000",
			}[f.flavour]
			post := rawSubmit(t, base, f.flavour, "SELECT 1")
			wrong := post.next()
			if f.flavour == coordinator.Trino {
				wrong = strings.Replace(wrong, "/y", "/y0", 1)
			} else {
				wrong = strings.Replace(wrong, "slug=x", "slug=x0", 1)
			}
			var got []string
			for _, r := range [][3]string{
				{http.MethodGet, base + "/v1/nothing/here", "a path nothing serves"},
				{http.MethodGet, base + unknown, "an unknown query"},
				{http.MethodDelete, base + unknown, "an unknown query"},
				{http.MethodGet, wrong, "a wrong slug"},
				{http.MethodDelete, wrong, "a wrong slug"},
			} {
				a := rawDo(t, r[0], r[1], "")
				got = append(got, fmt.Sprintf("%s %s: %d %s", r[0], r[2], a.Status, a.ContentType))
			}
			rawDo(t, http.MethodDelete, post.next(), "")
			return got
		})
		compare(t, f, real, simulated)
	})
}

// The first GET may carry rows: PrestoDB's queued resource, once the query
// is dispatched, answers the executing resource's first page itself, rows
// included when the query has them within the wait, pointing to the
// executing link of token 1; the queued link again is that page again,
// until the executing resource has answered, then 410. Trino's queued
// resource never carries rows (prestodb: QueuedStatementResource.getStatus
// and Query.toResponse, LocalExecutingQueryResponseProvider
// .waitForExecutingResponse, server/protocol/Query.waitForResults of token
// 0; trino: QueuedStatementResource.Query.getQueryResults).
func TestDifferentialFirstGetCarriesRows(t *testing.T) {
	type facts struct {
		QueuedRows      bool   // the last answer to a queued link carries rows
		LastQueuedState string // its state; the ones before may be QUEUED or WAITING_FOR_PREREQUISITES while the dispatch runs
		FirstExecuting  string // the first executing link's token, "none" without one
		QueuedAgain     int    // the last queued link again, before the executing resource answered
		SameRowsAgain   bool   // with the same rows
		AllRows         bool   // the rows of the queued answer and the executing pages are the statement's 3
		QueuedAfterward int    // the last queued link again once the executing resource answered
	}
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		// BatchRows 2: the simulator's page of rows points on, as the server's does.
		real, simulated := sides(t, f, coordinator.Options{BatchRows: 2}, func(t *testing.T, base string, real bool) facts {
			stmt := "SELECT * FROM rows(3)"
			if real {
				stmt = "SELECT * FROM (VALUES 1, 2, 3) AS t (n)"
			}
			follow(t, rawSubmit(t, base, f.flavour, stmt), nil) // warm: the first run of a statement plans slowly
			first := rawSubmit(t, base, f.flavour, stmt)
			id := first.str("id")
			var fs facts
			a := first
			var lastQueued string
			var queuedRows [][]any
			for a.next() != "" && !executing(a.next()) {
				lastQueued = a.next()
				a = rawDo(t, http.MethodGet, lastQueued, "")
				if a.Status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", lastQueued, a.Status, a.Body)
				}
				queuedRows = nil
				a.field("data", &queuedRows)
			}
			fs.QueuedRows, fs.LastQueuedState = len(queuedRows) > 0, a.state()
			fs.FirstExecuting = "none"
			if a.next() != "" {
				fs.FirstExecuting = fmt.Sprint(parseLink(t, f.flavour, id, a.next()).Token)
			}
			again := rawDo(t, http.MethodGet, lastQueued, "")
			var againRows [][]any
			again.field("data", &againRows)
			fs.QueuedAgain, fs.SameRowsAgain = again.Status, fmt.Sprint(againRows) == fmt.Sprint(queuedRows)
			n := len(queuedRows)
			if a.next() != "" {
				for _, p := range follow(t, a, nil)[1:] {
					var rows [][]any
					p.field("data", &rows)
					n += len(rows)
				}
				fs.QueuedAfterward = rawDo(t, http.MethodGet, lastQueued, "").Status
			}
			fs.AllRows = n == 3
			return fs
		})
		compare(t, f, real, simulated)
		if f.flavour == coordinator.Presto && !real.QueuedRows {
			t.Errorf("PrestoDB's queued resource no longer answers the first page: %+v", real)
		}
	})
}
