package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionPrintsName(t *testing.T) {
	out, _, err := run([]string{"version"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "zkpresto ") {
		t.Fatalf("version printed %q", out)
	}
}

// make dist stamps the release into the binary; --version and the version
// command print it.
func TestVersionIsWhatTheBuildStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "zkpresto")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v0.0.0-stamped", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("zkpresto %v: %v", args, err)
		}
		if !strings.HasPrefix(string(out), "zkpresto v0.0.0-stamped (go") {
			t.Errorf("zkpresto %v printed %q", args, out)
		}
	}
	// Unstamped, a build says it is no release.
	if out, _, err := run([]string{"--version"}, ""); err != nil || !strings.HasPrefix(out, "zkpresto (devel)") {
		t.Errorf("an unstamped --version printed %q (%v)", out, err)
	}
}

// make dist builds the four platforms with the version stamped.
func TestMakeDistStampsEachPlatform(t *testing.T) {
	out, err := exec.Command("make", "-C", "../..", "-n", "dist", "VERSION=v0.0.0-dry").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n dist: %v\n%s", err, out)
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "-X main.version=v0.0.0-dry", "CGO_ENABLED=0", "SHA256SUMS"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make -n dist does not say %q:\n%s", want, out)
		}
	}
}
