package verdict_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/attemptcases"
	"github.com/zkpresto/zkpresto/internal/verdict"
	"github.com/zkpresto/zkpresto/routing"
)

// The rule itself, on the one table of cases the driver and the gateway
// also run.
func TestOf(t *testing.T) {
	met := attemptcases.Check(t, func(f verdict.Facts) (verdict.Kind, routing.Outcome, error, bool) {
		v := verdict.Of(f)
		return v.Kind, v.Kind.Routing(), v.Err, true
	})
	if len(met) != len(verdict.Kinds()) {
		t.Errorf("the table meets %d kinds of %d", len(met), len(verdict.Kinds()))
	}
}

// Every kind has a case in the table, and a name: a kind added to the
// rule without a case, or a name, fails here.
func TestEveryKindHasACase(t *testing.T) {
	seen := map[verdict.Kind]bool{}
	for _, c := range attemptcases.Cases {
		seen[c.Want] = true
	}
	for _, k := range verdict.Kinds() {
		if !seen[k] {
			t.Errorf("no case of %v", k)
		}
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("kind %d has no name", int(k))
		}
	}
	if got := verdict.Kind(len(verdict.Kinds())).String(); got != "Kind(11)" {
		t.Errorf("an unknown kind is named %q", got)
	}
}

// Only an answer carries no error: the routing core takes an attempt
// without one for a success.
func TestOnlyAnAnswerMayHaveNoError(t *testing.T) {
	for _, c := range attemptcases.Cases {
		if v := verdict.Of(c.Facts); v.Err == nil && v.Kind != verdict.Answered {
			t.Errorf("%s: %v without an error", c.Name, v.Kind)
		}
	}
}

// HeadBytes counts the request line, Host and every header field.
func TestHeadBytes(t *testing.T) {
	req, err := http.NewRequest(http.MethodPost, "http://c1:8080/v1/statement", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := verdict.HeadBytes(req)
	// About the size: the space after the method is not counted.
	if want := len("POST /v1/statement HTTP/1.1\r\nHost: c1:8080\r\n\r\n"); base != want-1 {
		t.Errorf("bare head %d bytes, want %d", base, want-1)
	}
	req.Header.Set("X-Trino-User", strings.Repeat("a", 100))
	if got, want := verdict.HeadBytes(req)-base, len("X-Trino-User: \r\n")+100; got != want {
		t.Errorf("a header adds %d bytes, want %d", got, want)
	}
}

// Dependencies point one way: the verdict imports the routing core, never
// the driver or the gateway, which import it.
func TestVerdictImportsNeitherCaller(t *testing.T) {
	const module = "github.com/zkpresto/zkpresto/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps named nothing")
	}
	for _, dep := range deps {
		switch dep {
		case module + "driver", module + "gateway", module + "dsn", module + "internal/gateway":
			t.Errorf("verdict imports %s", dep)
		}
	}
}
