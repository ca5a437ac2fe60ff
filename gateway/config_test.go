package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// startCoordinators starts n coordinators, named c1..cn.
func startCoordinators(t *testing.T, n int) []*coordinator.Coordinator {
	t.Helper()
	var cs []*coordinator.Coordinator
	for i := range n {
		c, err := coordinator.Start(coordinator.Options{Name: fmt.Sprintf("c%d", i+1), BatchRows: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// writeConfig writes a router-config.json (a new one when file is empty)
// and returns its path.
func writeConfig(t *testing.T, file, text string) string {
	t.Helper()
	if file == "" {
		file = filepath.Join(t.TempDir(), "router-config.json")
	}
	// Written aside and renamed, as deployment tools do: the watcher never
	// reads half a file.
	if err := os.WriteFile(file+".new", []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	return file
}

// configGateway serves a gateway routing by the config in file.
func configGateway(t *testing.T, file string, log *slog.Logger) (*gateway.Gateway, *gatewayServer) {
	t.Helper()
	gs, err := gateway.LoadConfig(file, gateway.BuildOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Groups: gs, Keys: testKeys, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveGateway(t, gw)
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
	})
	return gw, srv
}

// runStatement sends sql through the gateway with header and pages to the
// end, calling each after every page; it returns the number of rows.
func runStatement(t *testing.T, base, sql string, header map[string]string, each func()) int {
	t.Helper()
	rows, err := statementRows(base, sql, header, each)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// statementRows is runStatement for any goroutine: an error instead of
// failing the test.
func statementRows(base, sql string, header map[string]string, each func()) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader(sql))
	req.Header.Set("X-Presto-User", "nobody")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rows := 0
	for {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return rows, err
		}
		var page struct {
			NextURI string `json:"nextUri"`
			Columns []struct{ Name string }
			Data    [][]any `json:"data"`
			Error   *struct{ Message string }
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return rows, fmt.Errorf("%s: status %d, %v", sql, resp.StatusCode, err)
		}
		if page.Error != nil {
			return rows, fmt.Errorf("%s: %s", sql, page.Error.Message)
		}
		rows += len(page.Data)
		if page.NextURI == "" {
			return rows, nil
		}
		if each != nil {
			each()
		}
		req, _ = http.NewRequest(http.MethodGet, page.NextURI, nil)
		req.Header.Set("X-Presto-User", "nobody")
		for k, v := range header {
			req.Header.Set(k, v)
		}
	}
}

// statements returns how many statements each coordinator accepted.
func statements(cs []*coordinator.Coordinator) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.Statements()
	}
	return out
}

// A router-config.json as Presto Router's documentation shows it, with a
// predictor the gateway ignores: groups, weights, selectors, scheduler.
func TestRouterConfigRoutesBySelectors(t *testing.T) {
	cs := startCoordinators(t, 4)
	var logs testutil.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	file := writeConfig(t, "", `{
  "groups": [
    {"name": "etl", "members": ["`+cs[0].URL()+`", "`+cs[1].URL()+`"], "weights": [1, 3]},
    {"name": "bi", "members": ["`+cs[2].URL()+`"]},
    {"name": "adhoc", "members": ["`+cs[3].URL()+`"]}
  ],
  "selectors": [
    {"user": "etl_.*", "targetGroup": "etl"},
    {"source": "superset|tableau", "targetGroup": "bi"},
    {"clientTags": ["adhoc", "small"], "targetGroup": "adhoc"}
  ],
  "scheduler": "WEIGHTED_ROUND_ROBIN",
  "predictor": "http://127.0.0.1:8000/v1"
}`)
	_, srv := configGateway(t, file, log)
	if !strings.Contains(logs.String(), "predictor") {
		t.Errorf("ignoring predictor was not logged:\n%s", logs.String())
	}
	for _, tc := range []struct {
		header map[string]string
		want   []int64
	}{
		// 1:3 weighted round robin inside etl.
		{map[string]string{"X-Presto-User": "etl_nightly"}, []int64{1, 3, 0, 0}},
		// The whole user must match: not etl.
		{map[string]string{"X-Presto-User": "my_etl_job", "X-Trino-Source": "tableau"}, []int64{0, 0, 4, 0}},
		{map[string]string{"X-Presto-Source": "superset"}, []int64{0, 0, 4, 0}},
		{map[string]string{"X-Presto-Client-Tags": "small, x,adhoc"}, []int64{0, 0, 0, 4}},
	} {
		before := statements(cs)
		for range 4 {
			runStatement(t, srv.URL, "SELECT 1", tc.header, nil)
		}
		got := statements(cs)
		for i := range got {
			got[i] -= before[i]
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: statements per coordinator %v, want %v", tc.header, got, tc.want)
		}
	}
}

// Statements no selector claims split between groups by weight, exactly
// with weighted round robin across groups.
func TestRouterConfigGroupWeights(t *testing.T) {
	cs := startCoordinators(t, 3)
	file := writeConfig(t, "", `{
  "groups": [
    {"name": "big", "weight": 3, "members": ["`+cs[0].URL()+`", "`+cs[1].URL()+`"]},
    {"name": "small", "weight": 1, "members": ["`+cs[2].URL()+`"]},
    {"name": "special", "weight": 0, "members": ["`+cs[2].URL()+`"]}
  ],
  "selectors": [{"user": "vip", "targetGroup": "special"}],
  "scheduler": "ROUND_ROBIN"
}`)
	_, srv := configGateway(t, file, nil)
	for range 200 {
		runStatement(t, srv.URL, "SELECT 1", nil, nil)
	}
	if got := fmt.Sprint(statements(cs)); got != "[75 75 50]" {
		t.Errorf("statements per coordinator %s, want [75 75 50] (3:1 across groups, round robin inside)", got)
	}
}

// A group whose member is a ZooKeeper namespace routes to what the
// namespace lists.
func TestRouterConfigZooKeeperMember(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	for _, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
	}
	static := startCoordinators(t, 1)
	file := writeConfig(t, "", `{
  "groups": [
    {"name": "zk", "members": ["zk://`+f.Ensemble()+`/`+f.Namespace+`"]},
    {"name": "static", "members": ["`+static[0].URL()+`"]}
  ],
  "selectors": [{"user": "alice", "targetGroup": "zk"}],
  "scheduler": "ROUND_ROBIN"
}`)
	_, srv := configGateway(t, file, nil)
	for range 4 {
		runStatement(t, srv.URL, "SELECT * FROM rows(3)", map[string]string{"X-Presto-User": "alice"}, nil)
	}
	if got := fmt.Sprint(statements(f.Coordinators)); got != "[2 2]" {
		t.Errorf("statements per registered coordinator %s, want [2 2]", got)
	}
	if n := static[0].Statements(); n != 0 {
		t.Errorf("the static group got %d of alice's statements", n)
	}
}

// Changing the file while a query pages through results: the query
// finishes on its coordinator, new statements follow the new config; a bad
// file keeps the config in use and says why.
func TestRouterConfigReload(t *testing.T) {
	cs := startCoordinators(t, 2)
	var logs testutil.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	config := func(c *coordinator.Coordinator) string {
		return `{"groups": [{"name": "all", "members": ["` + c.URL() + `"]}], "scheduler": "RANDOM_CHOICE"}`
	}
	file := writeConfig(t, "", config(cs[0]))
	gw, srv := configGateway(t, file, log)
	hup := watchConfig(t, gw, file, log)

	pages := 0
	n := runStatement(t, srv.URL, "SELECT * FROM rows(10)", nil, func() {
		pages++
		if pages == 2 {
			writeConfig(t, file, config(cs[1]))
			waitForLog(t, &logs, "router config reloaded")
			// A new statement follows the new config while the old
			// query still pages.
			runStatement(t, srv.URL, "SELECT 1", nil, nil)
		}
	})
	if n != 10 {
		t.Fatalf("the query running across the reload returned %d rows, want 10", n)
	}
	// c1 ran the query from start to end, c2 the statement sent after.
	if got := fmt.Sprint(statements(cs)); got != "[1 1]" {
		t.Errorf("statements per coordinator %s, want [1 1]", got)
	}

	writeConfig(t, file, `{"groups": [{"name": "all", "members": ["`+cs[0].URL()+`"], "weights": ["heavy"]}]}`)
	hup <- os.Interrupt
	waitForLog(t, &logs, "not reloaded")
	if s := logs.String(); !strings.Contains(s, file) || !strings.Contains(s, "groups.weights") {
		t.Errorf("the bad file's log names neither it nor the field:\n%s", s)
	}
	runStatement(t, srv.URL, "SELECT 1", nil, nil)
	if got := fmt.Sprint(statements(cs)); got != "[1 2]" {
		t.Errorf("after a bad file, statements per coordinator %s, want [1 2]", got)
	}
}

func TestParseRouterConfigNamesTheField(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{"groups": []}`, "f.json: groups: no groups"},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"], "weights": [1, 2]}]}`, "groups[0].weights: 2 weights for 1 members"},
		{`{"groups": [{"name": "a", "members": ["c1:8080"]}]}`, "groups[0].members[0]"},
		{`{"groups": [{"name": "a", "members": ["zk://z1:2181/presto", "http://c1:8080"]}]}`, "groups[0].members[0]: a ZooKeeper namespace must be the group's only member"},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"targetGroup": "b"}]}`, `selectors[0].targetGroup: no group named "b"`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"user": "(", "targetGroup": "a"}]}`, "selectors[0].user"},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "scheduler": "FASTEST"}`, "scheduler"},
		{"{\n  \"groups\": [{\"name\": 1}]}", "f.json:2:"},
		// A mistyped field is refused, never dropped, naming the nearest
		// known one, at every level and in every case.
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"usr": "etl_.*", "targetGroup": "a"}]}`,
			`f.json: selectors[0].usr: unknown field (the nearest known one is "user"`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"user": "etl", "TargetGroup": "a"}]}`,
			`selectors[0].TargetGroup: unknown field (the nearest known one is "targetGroup"`},
		{`{"groups": [{"name": "a", "member": ["http://c1:8080"]}]}`, `groups[0].member: unknown field (the nearest known one is "members"`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selector": []}`, `f.json: selector: unknown field (the nearest known one is "selectors"`},
		// A selector after a catch-all is never reached.
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"targetGroup": "a"}, {"user": "x", "targetGroup": "a"}]}`,
			`f.json: selectors[1]: unreachable: selectors[0] before it has no condition`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"user": "x", "targetGroup": "a"}, {"clientTags": [], "targetGroup": "a"}, {"targetGroup": "a"}]}`,
			`selectors[2]: unreachable: selectors[1] before it`},
		{`[]`, "f.json"},
		// The selectors and settings of ours.
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"statementKind": ["SELECT", "DLL"], "targetGroup": "a"}]}`,
			`selectors[0].statementKind[1]: "DLL" is not one of SELECT`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"table": "(", "targetGroup": "a"}]}`, "selectors[0].table: error parsing regexp"},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"resourceEstimates": {"PEAK_MEMORY": "10GB"}, "targetGroup": "a"}]}`,
			`selectors[0].resourceEstimates.PEAK_MEMORY: "10GB": want an operator`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"resourceEstimates": {"PEAK_MEMORY": ">10GiB"}, "targetGroup": "a"}]}`,
			`selectors[0].resourceEstimates.PEAK_MEMORY: ">10GiB": unit "GIB"`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"resourceEstimates": {"MEMORY": ">1GB"}, "targetGroup": "a"}]}`,
			`selectors[0].resourceEstimates.MEMORY: unknown resource estimate`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"timeOfDay": "22-6", "targetGroup": "a"}]}`, `selectors[0].timeOfDay: "22-6": want HH:MM-HH:MM`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"timeOfDay": "22:00-06:00", "timeZone": "Mars/Base", "targetGroup": "a"}]}`, `selectors[0].timeOfDay: timeZone "Mars/Base"`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"user": "x", "timeZone": "UTC", "targetGroup": "a"}]}`, `selectors[0].timeZone: without a timeOfDay`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "routingGroupHeader": {}}`, `routingGroupHeader: neither user nor source`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "routingGroupHeader": {"users": "x"}}`, `routingGroupHeader.users: unknown field (the nearest known one is "user"`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "routingKeyHeader": "X Key"}`, `routingKeyHeader: "X Key" is no header name`},
		{`{"groups": [{"name": "a", "members": ["http://c1:8080"]}], "selectors": [{"timeOfDay": "22:00-06:00", "targetGroup": "a"}, {"targetGroup": "a"}, {"user": "x", "targetGroup": "a"}]}`,
			`selectors[2]: unreachable: selectors[1]`},
	} {
		_, err := gateway.ParseRouterConfig("f.json", []byte(tc.text), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.text, err, tc.want)
		}
	}
}

// A typo in the file keeps the config in use, says where it is, and the
// file loads once it is right.
func TestRouterConfigWithATypoKeepsTheConfigInUse(t *testing.T) {
	cs := startCoordinators(t, 2)
	var logs testutil.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	withSelector := func(field string) string {
		return `{"groups": [{"name": "all", "members": ["` + cs[0].URL() + `"]}, {"name": "etl", "members": ["` + cs[1].URL() + `"], "weight": 0}],
  "selectors": [{"` + field + `": "etl_.*", "targetGroup": "etl"}]}`
	}
	file := writeConfig(t, "", `{"groups": [{"name": "all", "members": ["`+cs[0].URL()+`"]}]}`)
	gw, srv := configGateway(t, file, log)
	// SIGHUP after each write: the watcher may start after the write, and
	// would then take the new file for the one it started with.
	hup := watchConfig(t, gw, file, log)
	etl := map[string]string{"X-Presto-User": "etl_nightly"}

	writeConfig(t, file, withSelector("usr"))
	hup <- os.Interrupt
	waitForLog(t, &logs, "not reloaded")
	if s := logs.String(); !strings.Contains(s, "selectors[0].usr") || !strings.Contains(s, `\"user\"`) {
		t.Errorf("the log of the bad file names neither the field nor the nearest known one:\n%s", s)
	}
	runStatement(t, srv.URL, "SELECT 1", etl, nil)
	if got := fmt.Sprint(statements(cs)); got != "[1 0]" {
		t.Errorf("with the bad file, statements per coordinator %s, want [1 0] (the config in use)", got)
	}

	writeConfig(t, file, withSelector("user"))
	hup <- os.Interrupt
	waitForLog(t, &logs, "router config reloaded")
	runStatement(t, srv.URL, "SELECT 1", etl, nil)
	if got := fmt.Sprint(statements(cs)); got != "[1 1]" {
		t.Errorf("once the file is right, statements per coordinator %s, want [1 1]", got)
	}
}

// watchConfig runs WatchConfig on gw's file until the test ends, polling
// every 10 ms, and returns its SIGHUP channel.
func watchConfig(t *testing.T, gw *gateway.Gateway, file string, log *slog.Logger) chan os.Signal {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		gateway.WatchConfig(ctx, gw, file, gateway.BuildOptions{Logger: log}, hup, 10*time.Millisecond)
	}()
	t.Cleanup(func() { cancel(); <-watched })
	return hup
}

// waitForLog waits, at most 5 s, until logs hold what. If they never do,
// it shows them: Eventually's failure names only what it waited for.
func waitForLog(t *testing.T, logs *testutil.Buffer, what string) {
	t.Helper()
	found := false
	defer func() {
		if !found { // Eventually's Fatalf ends the goroutine through here
			t.Logf("the logs:\n%s", logs.String())
		}
	}()
	testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, fmt.Sprintf("%q in the logs", what), func() bool {
		return strings.Contains(logs.String(), what)
	})
	found = true
}

func TestParseRouterConfigZooKeeperEnsemble(t *testing.T) {
	c, err := gateway.ParseRouterConfig("f.json", []byte(`{"groups": [{"name": "a", "members": ["zk://zk1:2181,zk2:2181,[::1]:2181/presto"]}], "scheduler": "USER_HASH"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := gateway.BuildGroups(c, gateway.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()
	if got := gs.Groups()[0].Router.StrategyName(); got != "user_hash" {
		t.Errorf("USER_HASH is strategy %s, want user_hash", got)
	}
}

// Groups of both flavours behind one gateway ("flavour" in the config):
// a Trino client's session reaches a PrestoDB group as X-Presto-* and a
// Trino group as X-Trino-*, a Presto client's the reverse, and the
// session changes answered come back in the prefix each client used,
// from either group.
func TestGroupFlavours(t *testing.T) {
	presto, err := coordinator.Start(coordinator.Options{Name: "p1", StrictPrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { presto.Close() })
	trino, err := coordinator.Start(coordinator.Options{Name: "t1", Flavour: coordinator.Trino})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trino.Close() })
	file := writeConfig(t, "", `{
  "groups": [
    {"name": "presto", "members": ["`+presto.URL()+`"], "flavour": "presto"},
    {"name": "trino", "members": ["`+trino.URL()+`"], "flavour": "trino", "weight": 0}
  ],
  "selectors": [{"source": "to-trino", "targetGroup": "trino"}]
}`)
	_, srv := configGateway(t, file, nil)
	for _, client := range []string{"X-Trino-", "X-Presto-"} {
		for _, target := range []*coordinator.Coordinator{presto, trino} {
			source := "to-presto"
			if target == trino {
				source = "to-trino"
			}
			h := session(client, "User", "bob", "Catalog", "hive", "Source", source)
			before := len(target.Requests())
			got, _ := run(t, srv.URL, "USE other.s2", h)
			if v := got.Get(client + "Set-Catalog"); v != "other" {
				t.Errorf("%s client, group %s: %sSet-Catalog %q (answer headers %v)", client, source, client, v, got)
			}
			reqs := target.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("%s client, group %s: the coordinator got %d statements, want 1", client, source, len(reqs)-before)
			}
			r := reqs[len(reqs)-1]
			if r.User != "bob" || r.Catalog != "hive" || r.Trino != (target == trino) {
				t.Errorf("%s client, group %s: the coordinator read user %q, catalog %q, X-Trino-* %v", client, source, r.User, r.Catalog, r.Trino)
			}
		}
	}
}

// A flavour that is neither presto nor trino is refused, naming the group.
func TestGroupFlavourTypo(t *testing.T) {
	_, err := gateway.ParseRouterConfig("router-config.json", []byte(`{"groups": [{"name": "a", "members": ["http://c1:8080"], "flavour": "trinodb"}]}`), nil)
	if err == nil || !strings.Contains(err.Error(), "groups[0].flavour") || !strings.Contains(err.Error(), `"trinodb"`) {
		t.Fatalf("error %v: want one naming groups[0].flavour and the value", err)
	}
}

// A group's own scheduler wins over the config's: round robin spreads one
// user's statements over the group, where the config's USER_HASH would
// keep them on one coordinator; a scheduler name that is none of the five
// is refused, naming the group.
func TestGroupScheduler(t *testing.T) {
	cs := startCoordinators(t, 2)
	file := writeConfig(t, "", `{
  "scheduler": "USER_HASH",
  "groups": [{"name": "rr", "members": ["`+cs[0].URL()+`", "`+cs[1].URL()+`"], "scheduler": "ROUND_ROBIN"}]
}`)
	_, srv := configGateway(t, file, nil)
	for range 4 {
		runStatement(t, srv.URL, "SELECT 1", map[string]string{"X-Presto-User": "alice"}, nil)
	}
	if got := statements(cs); got[0] != 2 || got[1] != 2 {
		t.Errorf("statements per coordinator %v, want 2 and 2", got)
	}
	_, err := gateway.ParseRouterConfig("router-config.json", []byte(`{"groups": [{"name": "a", "members": ["http://c1:8080"], "scheduler": "LEAST_LOADED"}]}`), nil)
	if err == nil || !strings.Contains(err.Error(), "groups[0].scheduler") {
		t.Fatalf("error %v: want one naming groups[0].scheduler", err)
	}
}

// zkSecret is the ZooKeeper password of the DSN member tests; it must
// appear in no error, log line or status answer.
const zkSecret = "zk-S3cret;pw&x"

// dsnMemberFleet is a ZooKeeper with a TLS client port whose namespace
// /secure only alice (zkSecret) may read, listing two Trino coordinators
// that serve https with a certificate of a private CA.
type dsnMemberFleet struct {
	coords []*coordinator.Coordinator
	dsn    string // the member DSN, with a poll strategy
	noAuth string // the same without the ZooKeeper credentials
}

func startDSNMemberFleet(t *testing.T) *dsnMemberFleet {
	t.Helper()
	f, port := fleet.StartTLST(t, fleet.Options{})
	if err := f.SecureNamespace("secure", "alice", zkSecret, zk.DigestACL(zk.PermAll, "alice", zkSecret)); err != nil {
		t.Fatal(err)
	}
	certs, err := testtls.Generate(t.TempDir(), "coordinators")
	if err != nil {
		t.Fatal(err)
	}
	serve, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	m := &dsnMemberFleet{}
	for i := range 2 {
		c, err := coordinator.Start(coordinator.Options{
			Name: fmt.Sprintf("s%d", i+1), Flavour: coordinator.Trino, BatchRows: 2, TLS: serve,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := f.Register(c, discovery.FormatZkpresto, 1); err != nil {
			t.Fatal(err)
		}
		m.coords = append(m.coords, c)
	}
	zkTLS := ";zooKeeperSSLCAFile=" + port.Files.CAFile + ";zooKeeperSSLCertFile=" + port.Files.ClientCertFile +
		";zooKeeperSSLKeyFile=" + port.Files.ClientKeyFile
	base := "trino://" + port.Addr + "/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=secure;zooKeeperConnectTimeout=3s" +
		zkTLS + ";ssl_ca=" + certs.CAFile
	m.dsn = base + ";zooKeeperAuth=digest:alice:" + url.QueryEscape(zkSecret) + ";zooKeeperStrategy=poll"
	m.noAuth = base
	return m
}

// A group whose member is a DSN: discovery through ZooKeeper over TLS with
// credentials, https with a private CA to the coordinators, the DSN's
// strategy and flavour. Its statements page to the end, a second replica
// cancels one of them by query id through the group's transport, and a
// query running while a reload drops the group finishes on it. No password
// shows anywhere.
func TestRouterConfigDSNMember(t *testing.T) {
	m := startDSNMemberFleet(t)
	plain := startCoordinators(t, 1)
	var logs testutil.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	config := `{
  "groups": [
    {"name": "secure", "members": [` + strconv.Quote(m.dsn) + `], "weight": 0},
    {"name": "plain", "members": ["` + plain[0].URL() + `"]}
  ],
  "selectors": [{"user": "alice", "targetGroup": "secure"}]
}`
	file := writeConfig(t, "", config)
	gw, srv := configGateway(t, file, log)
	_, other := configGateway(t, file, log)
	alice := map[string]string{"X-Presto-User": "alice"}
	for range 4 {
		if n := runStatement(t, srv.URL, "SELECT * FROM rows(5)", alice, nil); n != 5 {
			t.Fatalf("alice's statement returned %d rows, want 5", n)
		}
	}
	if got := fmt.Sprint(statements(m.coords)); got != "[2 2]" {
		t.Errorf("statements per coordinator of the DSN's namespace %s, want [2 2] (its poll strategy)", got)
	}
	for _, r := range m.coords[0].Requests() {
		if r.User != "alice" || !r.Trino {
			t.Errorf("a Trino coordinator read user %q (X-Trino-* %v): the trino:// DSN's flavour was not applied", r.User, r.Trino)
		}
	}
	runStatement(t, srv.URL, "SELECT 1", nil, nil)
	if n := plain[0].Statements(); n != 1 {
		t.Errorf("the static group got %d statements, want 1", n)
	}

	// The other replica never saw the query: it asks every coordinator,
	// over the group's https.
	status, answer := submit(t, srv.URL, "alice", "etl")
	id, _ := answer["id"].(string)
	if status != http.StatusOK || id == "" {
		t.Fatalf("submitting as alice: status %d, answer %v", status, answer)
	}
	// Its first GET dispatches it; until then no coordinator knows it.
	first, _ := http.NewRequest(http.MethodGet, answer["nextUri"].(string), nil)
	first.Header.Set("X-Presto-User", "alice")
	if resp, err := http.DefaultClient.Do(first); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first GET of query %s: %v %v", id, resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ := http.NewRequest(http.MethodDelete, other.URL+"/v1/query/"+id, nil)
	req.Header.Set("X-Presto-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE /v1/query/%s on the other replica: status %d", id, resp.StatusCode)
	}
	cancelled := false
	for _, c := range m.coords {
		for _, call := range c.Calls() {
			cancelled = cancelled || (call.Method == http.MethodDelete && call.QueryID == id)
		}
	}
	if !cancelled {
		t.Errorf("no coordinator saw the cancel of %s", id)
	}

	// A reload that drops the group while one of its queries pages.
	pages := 0
	n := runStatement(t, srv.URL, "SELECT * FROM rows(8)", alice, func() {
		if pages++; pages == 1 {
			gs, err := gateway.LoadConfig(writeConfig(t, file, `{"groups": [{"name": "plain", "members": ["`+plain[0].URL()+`"]}]}`),
				gateway.BuildOptions{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			gw.SetGroups(gs)
		}
	})
	if n != 8 {
		t.Errorf("the query running across the reload returned %d rows, want 8", n)
	}
	runStatement(t, srv.URL, "SELECT 1", alice, nil)
	if n := plain[0].Statements(); n != 2 {
		t.Errorf("after the reload the static group got %d statements, want 2", n)
	}

	// Without the credentials the group lists nothing, and says why.
	writeConfig(t, file, `{"groups": [{"name": "secure", "members": [`+strconv.Quote(m.noAuth)+`]}]}`)
	denied, _ := configGateway(t, file, log)
	err = denied.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/secure") {
		t.Errorf("a namespace the DSN may not read: Open gave %v, want an error naming /secure", err)
	}
	_, page := get(t, srv.URL+"/_zk/status.json")
	for what, text := range map[string]string{"logs": logs.String(), "the status page": string(page)} {
		if strings.Contains(text, zkSecret) || strings.Contains(text, url.QueryEscape(zkSecret)) {
			t.Errorf("%s show the ZooKeeper password", what)
		}
	}
}

// What a group with a DSN member may not also say, and a DSN the driver
// refuses: each error names the field, and none quotes the DSN.
func TestParseRouterConfigDSNMember(t *testing.T) {
	dsn := "trino://zk1:2181/;serviceDiscoveryMode=zooKeeper;zooKeeperAuth=digest:alice:" + url.QueryEscape(zkSecret)
	for _, tc := range []struct{ group, want string }{
		{`"members": ["` + dsn + `", "http://c1:8080"]`, "groups[0].members[0]: a DSN must be the group's only member"},
		{`"members": ["` + dsn + `"], "weights": [2]`, "groups[0].weights: weights are for coordinator URLs"},
		{`"members": ["zk://zk1:2181/presto"], "weights": [2]`, "groups[0].weights: weights are for coordinator URLs"},
		{`"members": ["` + dsn + `;zooKeeperStrategy=p2c"], "scheduler": "ROUND_ROBIN"`, "groups[0].scheduler: a DSN's group picks with the DSN's strategy"},
		{`"members": ["` + dsn + `"], "flavour": "presto"`, `groups[0].flavour: "presto", but the member is a trino:// DSN`},
		{`"members": ["` + dsn + `;zooKeeperStrategie=poll"]`, "groups[0].members[0]: dsn:"},
		{`"members": ["` + strings.Replace(dsn, "serviceDiscoveryMode=zooKeeper", "serviceDiscoveryMode=consul", 1) + `"]`, "groups[0].members[0]: dsn:"},
	} {
		_, err := gateway.ParseRouterConfig("f.json", []byte(`{"groups": [{"name": "a", `+tc.group+`}]}`), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.group, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), url.QueryEscape(zkSecret)) || strings.Contains(err.Error(), zkSecret) {
			t.Errorf("%s: the error %q shows the password", tc.group, err)
		}
	}
	// A DSN's group picks with the DSN's strategy, not the config's
	// scheduler, and its coordinators speak the DSN's flavour.
	for _, tc := range []struct{ text, want string }{
		{`{"groups": [{"name": "a", "members": ["` + dsn + `"]}], "scheduler": "ROUND_ROBIN"}`, "random"},
		{`{"groups": [{"name": "a", "members": ["` + dsn + `;zooKeeperStrategy=p2c"]}], "scheduler": "ROUND_ROBIN"}`, "p2c"},
		{`{"groups": [{"name": "a", "members": ["jdbc:` + dsn + `;serverSelectStrategy=poll"]}], "scheduler": "USER_HASH"}`, "poll"},
	} {
		c, err := gateway.ParseRouterConfig("f.json", []byte(tc.text), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		gs, err := gateway.BuildGroups(c, gateway.BuildOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		gr := gs.Groups()[0]
		if got := gr.Router.StrategyName(); got != tc.want || gr.Flavour != gateway.Trino {
			t.Errorf("%s: strategy %s, flavour %q; want %s, trino", tc.text, got, gr.Flavour, tc.want)
		}
		gs.Close()
	}
}

// A member that is almost a DSN (a typo in the scheme, a space, a missing
// slash) or a URL with credentials: the error, which WatchConfig logs as
// "router config not reloaded", never quotes it.
func TestMemberErrorsHidePasswords(t *testing.T) {
	const pw = "Hunter2pw"
	for _, m := range []string{
		"trno://zk1:2181/;serviceDiscoveryMode=zooKeeper;zooKeeperAuth=digest:alice:" + pw,
		"jdbc:trino:/zk1:2181/;serviceDiscoveryMode=zooKeeper;zooKeeperAuth=digest:alice:" + pw,
		"trino:zk1:2181/;serviceDiscoveryMode=zooKeeper;zooKeeperAuth=digest:alice:" + pw,
		"presto ://zk1:2181/;zooKeeperAuth=digest:alice:" + pw,
		"prestodb://alice:" + pw + "@c1:8080/",
		"jdbc:presto//zk1:2181/;zooKeeperAuth=digest:alice:" + pw,
		"https://alice:" + pw + "@c1:8443",
		"zk://digest:alice:" + pw + "@zk1:2181/presto",
		"trino//zk1:2181/;password=" + pw + "%zz",
		"presto://alice:" + pw + "@c1:8080/;zooKeeperStrategie=poll",
	} {
		_, err := gateway.ParseRouterConfig("f.json", []byte(`{"groups": [{"name": "a", "members": [`+strconv.Quote(m)+`]}]}`), nil)
		if err == nil {
			t.Errorf("%s: accepted", m)
			continue
		}
		if !strings.Contains(err.Error(), "groups[0].members[0]") {
			t.Errorf("%v: names no field", err)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// A DSN that parses but cannot be opened (a TLS file that is not there):
// the error names the file, the group and the key's trouble, and the
// config in use stays.
func TestLoadConfigDSNThatCannotOpen(t *testing.T) {
	file := writeConfig(t, "", `{"groups": [{"name": "secure", "members": ["presto://c1:8080/;ssl_ca=/nonexistent/ca.pem;password=`+url.QueryEscape(zkSecret)+`"]}]}`)
	_, err := gateway.LoadConfig(file, gateway.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), file+": groups[0] (secure): ") || !strings.Contains(err.Error(), "/nonexistent/ca.pem") {
		t.Fatalf("LoadConfig: %v; want an error naming the file, groups[0] and the CA file", err)
	}
	if strings.Contains(err.Error(), zkSecret) || strings.Contains(err.Error(), url.QueryEscape(zkSecret)) {
		t.Errorf("the error shows the password: %v", err)
	}
}

// A DSN's Presto user, catalog, schema, source and session properties are
// the driver's: the gateway passes each client's own.
func TestDSNMemberSessionKeysAreNotUsed(t *testing.T) {
	cs := startCoordinators(t, 1)
	file := writeConfig(t, "", `{"groups": [{"name": "d", "members": ["presto://bob@`+cs[0].Addr()+`/tpch/tiny?source=from-dsn&query_max_run_time=1m"]}]}`)
	_, srv := configGateway(t, file, nil)
	runStatement(t, srv.URL, "SELECT 1", map[string]string{"X-Presto-User": "alice", "X-Presto-Catalog": "hive", "X-Presto-Source": "bi"}, nil)
	reqs := cs[0].Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d statements reached the coordinator, want 1", len(reqs))
	}
	if r := reqs[0]; r.User != "alice" || r.Catalog != "hive" || r.Schema != "" || r.Source != "bi" || len(r.SessionProperties) != 0 {
		t.Errorf("the coordinator read user %q, catalog %q, schema %q, source %q, session %v; want the client's alone",
			r.User, r.Catalog, r.Schema, r.Source, r.SessionProperties)
	}
}

// A config renamed in over the old one is seen as a change even when its
// size and modification time are the old one's (a modification time is
// only as fine as the kernel's clock tick).
func TestWatchConfigSeesARenamedFileOfTheSameTimeAndSize(t *testing.T) {
	cs := startCoordinators(t, 2)
	var logs testutil.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	// Both the same size: the shorter padded with spaces.
	width := max(len(cs[0].URL()), len(cs[1].URL()))
	config := func(c *coordinator.Coordinator) string {
		return `{"groups": [{"name": "all", "members": ["` + c.URL() + `"]}]}` + strings.Repeat(" ", width-len(c.URL()))
	}
	file := writeConfig(t, "", config(cs[0]))
	old, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	gw, srv := configGateway(t, file, log)
	watchConfig(t, gw, file, log)     // no SIGHUP: the rename alone must be seen
	time.Sleep(50 * time.Millisecond) // a few looks at the old file
	if err := os.WriteFile(file+".new", []byte(config(cs[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file+".new", old.ModTime(), old.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, "the reload", func() bool {
		return strings.Contains(logs.String(), "router config reloaded")
	})
	runStatement(t, srv.URL, "SELECT 1", nil, nil)
	if got := fmt.Sprint(statements(cs)); got != "[0 1]" {
		t.Errorf("statements per coordinator %s, want [0 1]: the new config", got)
	}
}
