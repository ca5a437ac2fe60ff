package discovery

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

// TestChangeLinesAreRateLimited flaps past the limit: the lines over it are
// dropped within the window and counted in the first line after it.
func TestChangeLinesAreRateLimited(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLogLimiter(3, time.Minute)
	l.now = func() time.Time { return now }
	logs := &testutil.Buffer{}
	log := logs.Logger()
	for range 10 {
		l.log(log, slog.LevelInfo, "coordinator joined")
	}
	if n := strings.Count(logs.String(), "coordinator joined"); n != 3 {
		t.Fatalf("%d lines within the window, want the limit 3:\n%s", n, logs.String())
	}
	now = now.Add(time.Minute)
	l.log(log, slog.LevelInfo, "coordinator left")
	if !strings.Contains(logs.String(), `msg="coordinator left" suppressed_before=7`) {
		t.Fatalf("the first line after the window does not count the 7 dropped:\n%s", logs.String())
	}
}

// A lasting outage is said again once a window; a session ends it.
func TestOutageLogSaysALastingOutageOnceAWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	o := &outageLog{logged: map[string]time.Time{}, now: func() time.Time { return now }}
	if !o.first("zk1:2181/presto") || o.first("zk1:2181/presto") {
		t.Fatal("the first report is news, the second within the window is not")
	}
	if !o.first("zk2:2181/presto") {
		t.Fatal("another ensemble's outage is news of its own")
	}
	now = now.Add(changeLimitWindow)
	if !o.first("zk1:2181/presto") {
		t.Fatal("a window later the lasting outage is said again")
	}
	o.ended("zk1:2181/presto")
	if !o.first("zk1:2181/presto") {
		t.Fatal("after a session, the next outage is news")
	}
}
