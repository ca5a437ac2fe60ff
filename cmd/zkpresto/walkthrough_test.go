package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/lab/devenv"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/internal/testrig/zkserver"
)

// readEnvFile parses the export lines dev writes.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if ok {
			env[k] = strings.Trim(v, "'")
		}
	}
	return env
}

// The README's walkthrough: zkpresto-lab dev, two registrars, nodes, query.
func TestDevWalkthroughRegisterNodesQuery(t *testing.T) {
	zkserver.Require(t)
	envFile := filepath.Join(t.TempDir(), "dev.env")
	devOut := &testutil.Buffer{}
	devCtx, stopDev := context.WithCancel(context.Background())
	devDone := make(chan error, 1)
	go func() { devDone <- devenv.Run(devCtx, devOut, devenv.Options{Coordinators: 2, EnvFile: envFile}) }()
	t.Cleanup(func() { stopDev(); <-devDone; devDone <- nil })
	var env map[string]string
	eventually(t, "dev to write its env file", func() bool { env = readEnvFile(t, envFile); return env["C2"] != "" })
	if !strings.Contains(devOut.String(), "export ZKPRESTO_DSN=") {
		t.Errorf("dev printed:\n%s", devOut.String())
	}
	t.Setenv("ZKPRESTO_ZOOKEEPER", env["ZKPRESTO_ZOOKEEPER"])
	t.Setenv("ZKPRESTO_DSN", env["ZKPRESTO_DSN"])

	registrars := map[string]*running{}
	for _, c := range []string{env["C1"], env["C2"]} {
		registrars[c] = start(t, "register", "--advertise", c, "--interval", "100ms")
	}

	var out string
	eventually(t, "nodes to list both coordinators", func() bool {
		var err error
		out, _, err = run([]string{"nodes", "--probe"}, "")
		return err == nil && strings.Count(out, " up\n") == 2
	})
	for _, c := range []string{env["C1"], env["C2"]} {
		if !strings.Contains(out, c+" ") {
			t.Errorf("nodes lacks %s:\n%s", c, out)
		}
	}

	_, errOut, err := run([]string{"query", "--show-coordinator", "SELECT 'walkthrough'"}, "")
	if err != nil {
		t.Fatal(err)
	}
	served := strings.TrimSpace(strings.TrimPrefix(errOut, "coordinator:"))
	if registrars[served] == nil {
		t.Fatalf("query was served by %q, not one of the registered coordinators", errOut)
	}

	// The coordinator that served it leaves (its registrar drains); the
	// next statement goes to the other one.
	if err := registrars[served].stop(t); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nodes to list one coordinator", func() bool {
		out, _, err := run([]string{"nodes"}, "")
		return err == nil && strings.Count(out, "\n") == 2 && !strings.Contains(out, served+" ")
	})
	_, errOut, err = run([]string{"query", "--show-coordinator", "SELECT 'again'"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if again := strings.TrimSpace(strings.TrimPrefix(errOut, "coordinator:")); again == served || registrars[again] == nil {
		t.Errorf("after %s left, the query went to %q", served, again)
	}

	stopDev()
	if err := <-devDone; err != nil {
		t.Fatalf("dev returned %v when interrupted", err)
	}
	devDone <- nil
}
