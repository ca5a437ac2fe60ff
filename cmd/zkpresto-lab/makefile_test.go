package main

import (
	"os/exec"
	"regexp"
	"slices"
	"testing"
)

// installScripts returns the install and fetch scripts that `make -n target` would
// run, in order.
func installScripts(t *testing.T, target string) []string {
	t.Helper()
	cmd := exec.Command("make", "-n", target)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n %s: %v", target, err)
	}
	var scripts []string
	for _, m := range regexp.MustCompile(`scripts/((?:install|fetch)-[a-z-]+\.sh)`).FindAllStringSubmatch(string(out), -1) {
		scripts = append(scripts, m[1])
	}
	return scripts
}

// make demo installs what the demo needs, ZooKeeper, and nothing that only
// the tests use; make test installs everything the tests need.
func TestMakeInstallsWhatEachTargetNeeds(t *testing.T) {
	if got, want := installScripts(t, "demo"), []string{"install-zookeeper.sh"}; !slices.Equal(got, want) {
		t.Errorf("make demo runs %v, want %v", got, want)
	}
	test := []string{"install-zookeeper.sh", "install-nginx.sh", "install-tmux.sh", "install-chromium.sh", "install-npmclients.sh", "fetch-real-servers.sh", "install-python-clients.sh"}
	if got := installScripts(t, "test"); !slices.Equal(got, test) {
		t.Errorf("make test runs %v, want %v", got, test)
	}
}
