package wire

import (
	"os/exec"
	"strings"
	"testing"
)

// The protocol's rules stand alone: wire imports no package of this
// module but the leaf address helper, so neither discovery (nor what it
// pulls in: ZooKeeper) nor the connections of package pool, which import
// wire, come with them.
func TestWireImportsNothingButLeaves(t *testing.T) {
	const module = "github.com/zkpresto/zkpresto"
	allowed := map[string]bool{
		module + "/internal/wire":     true,
		module + "/internal/hostport": true,
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := false
	for _, dep := range strings.Fields(string(out)) {
		if dep == module+"/internal/wire" {
			seen = true
		}
		if strings.HasPrefix(dep, module+"/") && !allowed[dep] {
			t.Errorf("wire imports %s", dep)
		}
	}
	if !seen {
		t.Fatal("go list -deps did not name wire itself")
	}
}
