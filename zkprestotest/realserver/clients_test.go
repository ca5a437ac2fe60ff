package realserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// Each client jar the fetch script fetches is found in the cache by its
// name; a jar missing from the cache is an error naming the fetch script,
// and an unknown name is refused.
func TestClientJar(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("ZKPRESTO_REAL_SERVERS", cache)
	jars := []string{realserver.TrinoJDBC, realserver.PrestoJDBC, realserver.TrinoCLI, realserver.PrestoCLI}
	for _, name := range jars {
		if _, err := realserver.ClientJar(name); err == nil || !strings.Contains(err.Error(), "scripts/fetch-real-servers.sh") {
			t.Errorf("%s from an empty cache: %v; want an error naming the fetch script", name, err)
		}
	}
	if err := os.Mkdir(filepath.Join(cache, "clients"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range jars {
		if err := os.WriteFile(filepath.Join(cache, "clients", name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := realserver.ClientJar(name); err != nil || got != filepath.Join(cache, "clients", name) {
			t.Errorf("ClientJar(%q) = %q, %v", name, got, err)
		}
	}
	if _, err := realserver.ClientJar("presto-cli.jar"); err == nil || !strings.Contains(err.Error(), realserver.PrestoCLI) {
		t.Errorf("an unknown jar: %v; want an error naming the known ones", err)
	}
}
