package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/strategy"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestDemoBalancesAndFollowsMembership(t *testing.T) {
	zk := zkserver.StartT(t)
	var out bytes.Buffer
	if err := runDemo(context.Background(), &out, demoOptions{statements: 42, ensemble: zk.Addr()}); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"format hive", "format curator", "format zkpresto", "user_hash", "membership: c2 removed"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Every built-in strategy is at work, as the README says: a row of
	// its own, or a table per user for the hashing ones.
	for _, name := range strategy.Names() {
		if !regexp.MustCompile(`(?m)^\s+` + name + `\s+\d+\s+\d+\s+\d+\s|^` + name + `: `).MatchString(text) {
			t.Errorf("the demo does not run strategy %s:\n%s", name, text)
		}
	}
	// global_poll takes turns, as poll.
	if !regexp.MustCompile(`(?m)^\s+global_poll\s+14\s+14\s+14\s`).MatchString(text) {
		t.Errorf("global_poll row is not 14/14/14:\n%s", text)
	}
	// poll over 42 statements and three coordinators: 14 each.
	if !regexp.MustCompile(`(?m)^\s+poll\s+14\s+14\s+14\s`).MatchString(text) {
		t.Errorf("poll row is not 14/14/14:\n%s", text)
	}
	// After c2 left, poll splits the 42 statements between c1 and c3.
	if !regexp.MustCompile(`(?m)^\s+after\s+21\s+0\s+21\s*$`).MatchString(text) {
		t.Errorf("after row is not 21/0/21:\n%s", text)
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	if _, _, err := run([]string{"demo", "--statements", "0"}, ""); err == nil || !strings.Contains(err.Error(), "--statements must be positive") {
		t.Fatalf("got %v", err)
	}
}
