package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trinodb/trino-go-client/trino"

	"github.com/zkpresto/zkpresto/discovery"
	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// emptyGroupGateway is a gateway whose one group, "etl", discovers its
// coordinators in f's namespace, where none is registered yet.
func emptyGroupGateway(t *testing.T, grace time.Duration) (*fleet.Fleet, *gatewayServer) {
	t.Helper()
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	cfg, err := zkdriver.ParseDSN(f.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	group, err := gateway.DSNGroup("etl", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := gateway.NewGroups([]*gateway.Group{group}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Groups: groups, Keys: testKeys, NoCoordinatorGrace: grace})
	if err != nil {
		groups.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	return f, serveGateway(t, gw)
}

// wantNoNodes checks that msg names the failure, the group and where the
// group looked.
func wantNoNodes(t *testing.T, f *fleet.Fleet, msg string) {
	t.Helper()
	for _, want := range []string{"NO_NODES_AVAILABLE", `group "etl"`, f.Ensemble() + "/" + f.Namespace} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure %q does not say %q", msg, want)
		}
	}
}

func TestNoCoordinatorFailsTheQueryForPrestoGoClientAfterTheGrace(t *testing.T) {
	f, srv := emptyGroupGateway(t, -1) // no grace: the first statement fails
	db, err := sql.Open("presto", "presto://alice@"+strings.TrimPrefix(srv.URL, "http://")+"/hive")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A 503 would be retried until the deadline: the failure must come first.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var n int
	err = db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("got %v (context: %v), want the query failure at once", err, ctx.Err())
	}
	wantNoNodes(t, f, err.Error())
}

func TestNoCoordinatorFailsTheQueryForTrinoGoClientAfterTheGrace(t *testing.T) {
	f, srv := emptyGroupGateway(t, -1)
	db, err := sql.Open("trino", "http://alice@"+strings.TrimPrefix(srv.URL, "http://")+"?catalog=hive&schema=default")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var n int
	err = db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
	var te *trino.ErrTrino
	if !errors.As(err, &te) || ctx.Err() != nil {
		t.Fatalf("got %T %v (context: %v), want a *trino.ErrTrino at once", err, err, ctx.Err())
	}
	if te.ErrorName != "NO_NODES_AVAILABLE" || te.ErrorType != "INTERNAL_ERROR" || te.ErrorCode != 65541 {
		t.Errorf("the error is %+v, want Presto's NO_NODES_AVAILABLE", te)
	}
	wantNoNodes(t, f, te.ErrorName+": "+te.Message)
}

// rawPage is what submitRaw reads of an answer.
type rawPage struct {
	ID      string `json:"id"`
	NextURI string `json:"nextUri"`
	Stats   struct {
		State string `json:"state"`
	} `json:"stats"`
	Error *struct {
		ErrorName string `json:"errorName"`
		Message   string `json:"message"`
	} `json:"error"`
}

// getRaw sends method to url and returns the status and the decoded page.
func getRaw(t *testing.T, method, url string) (int, rawPage) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var page rawPage
	if len(b) > 0 {
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, page
}

// submitRaw posts a statement and returns the status and the decoded
// answer's state and error name; a queued answer is followed, as clients
// do, to its next page.
func submitRaw(t *testing.T, url string) (status int, state, errorName, message string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var page rawPage
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
	}
	if resp.StatusCode == http.StatusOK && page.Error != nil {
		t.Errorf("a failure in the submission's own answer, which trino-client (npm) shows no one: %s", b)
	}
	if resp.StatusCode == http.StatusOK && page.Stats.State == "QUEUED" && strings.Contains(page.NextURI, "/zkgw/failed/") {
		id := page.ID
		if status, page = getRaw(t, http.MethodGet, page.NextURI); status != http.StatusOK || page.ID != id {
			t.Fatalf("the failed query's page: %d, id %q, want 200 for %q", status, page.ID, id)
		}
	}
	if page.Error != nil {
		errorName, message = page.Error.ErrorName, page.Error.Message
	}
	if resp.StatusCode == http.StatusOK && page.Error != nil && page.ID == "" {
		t.Errorf("a failed query without an id: %s", b)
	}
	return resp.StatusCode, page.Stats.State, errorName, message
}

func TestNoCoordinatorIsA503WithinTheGrace(t *testing.T) {
	_, srv := emptyGroupGateway(t, time.Hour)
	for range 3 {
		if status, _, name, _ := submitRaw(t, srv.URL); status != http.StatusServiceUnavailable || name != "NO_NODES_AVAILABLE" {
			t.Fatalf("within the grace: %d %s, want 503 NO_NODES_AVAILABLE, which clients retry", status, name)
		}
	}
}

// The outage starts with the first statement nobody took and ends with the
// first one a coordinator took: the next outage has its grace again.
func TestNoCoordinatorGraceEndsAndStartsAgain(t *testing.T) {
	f, srv := emptyGroupGateway(t, 100*time.Millisecond)
	if status, _, _, _ := submitRaw(t, srv.URL); status != http.StatusServiceUnavailable {
		t.Fatalf("the first statement of an outage got %d, want 503", status)
	}
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, "the query failure after the grace", func() bool {
		status, state, name, msg := submitRaw(t, srv.URL)
		if status == http.StatusOK {
			if state != "FAILED" || name != "NO_NODES_AVAILABLE" {
				t.Fatalf("after the grace: %s %s", state, name)
			}
			wantNoNodes(t, f, name+": "+msg)
			return true
		}
		return false
	})
	c := f.Coordinators[0]
	if _, err := f.Register(c, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, "a statement the new coordinator takes", func() bool {
		status, _, name, _ := submitRaw(t, srv.URL)
		return status == http.StatusOK && name == ""
	})
	if err := f.Deregister(c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, "a 503 again in the next outage", func() bool {
		status, _, _, _ := submitRaw(t, srv.URL)
		return status == http.StatusServiceUnavailable
	})
}

// The failed query's URI is signed like every URI the gateway hands out:
// another replica with the same keys answers it, a DELETE of it is a
// coordinator's 204, and a URI whose failure was altered is 404.
func TestNoCoordinatorFailedQueryIsReadAnywhere(t *testing.T) {
	_, srv := emptyGroupGateway(t, -1)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT 1"))
	req.Header.Set("X-Presto-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var queued rawPage
	err = json.NewDecoder(resp.Body).Decode(&queued)
	resp.Body.Close()
	if err != nil || queued.Stats.State != "QUEUED" || queued.NextURI == "" {
		t.Fatalf("the submission's answer: %+v, %v; want QUEUED with a nextUri", queued, err)
	}
	g, _ := staticGateway(t, gateway.Config{}, "127.0.0.1:1")
	other := serveGateway(t, g)
	uri := other.URL + strings.TrimPrefix(queued.NextURI, srv.URL)
	if status, page := do(t, http.MethodGet, uri); failedPageError(status, page) != "NO_NODES_AVAILABLE" {
		t.Fatalf("another replica's answer: %d %+v", status, page)
	}
	if status, _ := getRaw(t, http.MethodDelete, uri); status != http.StatusNoContent {
		t.Fatalf("DELETE of the failed query: %d, want 204", status)
	}
	forged := uri[:strings.Index(uri, "?m=")+3] + "c29tZXRoaW5nIGVsc2U" // "something else"
	if status, _ := getRaw(t, http.MethodGet, forged); status != http.StatusNotFound {
		t.Fatalf("a failure the gateway did not sign: %d, want 404", status)
	}
}
