package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/cli"
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

// The program's name starts an error once: no package's error says it
// too, whether the error is the DSN's, a flag's or the gateway's config.
func TestErrorsNameTheProgramOnce(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := func(name, body string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	badDSNMember := config("dsn-member.json", `{"groups":[{"name":"etl","members":["presto://zk1:99999/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto"]}],"selectors":[]}`)
	unknownGroup := config("unknown-group.json", `{"groups":[{"name":"etl","members":["http://127.0.0.1:1"]}],"selectors":[{"user":"bob","targetGroup":"adhoc"}]}`)
	for _, tc := range []struct {
		name string
		args []string
		want string // what the message says after the program's name
	}{
		{"bad DSN", []string{"nodes", "--dsn", "presto://zk1:99999/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto"}, "99999"},
		{"bad flag", []string{"query", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"gateway DSN", []string{"gateway", "--secret-file", secret, "--dsn", "presto://h:99999/"}, "99999"},
		{"gateway config DSN", []string{"gateway", "--secret-file", secret, "--config", badDSNMember}, "99999"},
		{"gateway config", []string{"gateway", "--secret-file", secret, "--config", unknownGroup}, "adhoc"},
		{"gateway", []string{"gateway", "--secret-file", secret, "--dsn", "presto://127.0.0.1:1/", "--public-url", "ftp://x"}, "gateway: public URL"},
		{"no coordinator", []string{"query", "--dsn", "presto://127.0.0.1:1/;retries=0", "SELECT 1"}, "routing: statement not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ZKPRESTO_DSN", "")
			var stdout, stderr bytes.Buffer
			root := newRootCommand()
			root.SetArgs(tc.args)
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			if code := cli.Execute(root); code != 1 {
				t.Fatalf("exit status %d, want 1; stderr %q", code, stderr.String())
			}
			got := stderr.String()
			if !strings.HasPrefix(got, "zkpresto: ") || strings.Count(got, "zkpresto: ") != 1 || !strings.Contains(got, tc.want) {
				t.Fatalf("stderr %q: want one %q at its start and %q", got, "zkpresto: ", tc.want)
			}
		})
	}
}
