package devenv

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// TestTrinoFlavourSpeaksTrino starts dev with --flavour trino and checks
// that the DSN is a trino:// one and that a coordinator answers a session
// change in Trino's spelling.
func TestTrinoFlavourSpeaksTrino(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &testutil.Buffer{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, out, Options{Coordinators: 1, Flavour: "trino"}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	c1 := regexp.MustCompile(`export C1=(\S+)`)
	testutil.Eventually(t, 30*time.Second, 10*time.Millisecond, "the export lines", func() bool { return c1.MatchString(out.String()) })
	if !strings.Contains(out.String(), "export ZKPRESTO_DSN='trino://") || !strings.Contains(out.String(), "1 trino coordinators") {
		t.Fatalf("the announcement is not Trino's:\n%s", out.String())
	}
	uri := c1.FindStringSubmatch(out.String())[1] + "/v1/statement"
	method, body := http.MethodPost, "USE tpch.tiny"
	var set http.Header
	for uri != "" {
		req, _ := http.NewRequest(method, uri, strings.NewReader(body))
		req.Header.Set("X-Trino-User", "dev")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			NextURI string `json:"nextUri"`
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if resp.Header.Get("X-Trino-Set-Schema") != "" || resp.Header.Get("X-Presto-Set-Schema") != "" {
			set = resp.Header
		}
		uri, method, body = page.NextURI, http.MethodGet, ""
	}
	if set.Get("X-Trino-Set-Schema") != "tiny" || set.Get("X-Presto-Set-Schema") != "" {
		t.Fatalf("USE was answered with %v, want X-Trino-Set-Schema: tiny", set)
	}
}

func TestUnknownFlavourIsRefused(t *testing.T) {
	if err := Run(context.Background(), io.Discard, Options{Coordinators: 1, Flavour: "mysql"}); err == nil || !strings.Contains(err.Error(), `--flavour "mysql"`) {
		t.Fatalf("got %v", err)
	}
}

// Bad --real settings are refused before anything starts.
func TestRealSettingsRefused(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Coordinators: 1, Real: "mysql"}, `--real "mysql": want trino or presto`},
		{Options{Coordinators: 5, Real: "trino"}, "--coordinators 5 with --real: at most 4"},
		{Options{Coordinators: 1, Real: "trino", Flavour: "presto"}, `--flavour "presto" with --real "trino"`},
	} {
		if err := Run(context.Background(), io.Discard, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
}
