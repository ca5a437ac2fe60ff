package routing_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The routing core knows nothing of HTTP, as the package's doc says: no
// package that routing or health pulls in, of this module or not, is
// net/http or one of its own. Health checks reach them as a probe.
func TestRoutingAndHealthImportNoHTTP(t *testing.T) {
	for _, pkg := range []string{"./routing", "./health"} {
		for _, dep := range deps(t, pkg) {
			if dep == "net/http" || strings.HasPrefix(dep, "net/http/") {
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}

// deps is what go list -deps names for pkg, a path from the module's root.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	list := strings.Fields(string(out))
	if len(list) == 0 {
		t.Fatalf("go list -deps %s named nothing", pkg)
	}
	return list
}
