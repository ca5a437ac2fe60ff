package realserver_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// endingTB records how a test was ended (Skipf or Fatalf) and ends it as
// testing does, with runtime.Goexit.
type endingTB struct {
	testing.TB
	how, msg string
}

func (e *endingTB) Helper() {}
func (e *endingTB) Skipf(format string, args ...any) {
	e.how, e.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (e *endingTB) Fatalf(format string, args ...any) {
	e.how, e.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// server calls s.Server with a recording TB and says how it ended it.
func server(t *testing.T, s *realserver.Shared) *endingTB {
	e := &endingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Server(e)
	}()
	<-done
	return e
}

// A shared server missing from the cache skips its tests, but fails them
// under CI; neither starts anything, and Close then has nothing to stop.
func TestSharedMissingSkipsButFailsUnderCI(t *testing.T) {
	t.Setenv("ZKPRESTO_REAL_SERVERS", t.TempDir())
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		s := &realserver.Shared{Options: realserver.Options{Flavour: coordinator.Presto}}
		want := map[string]string{"": "skip", "true": "fatal"}[ci]
		if e := server(t, s); e.how != want || !strings.Contains(e.msg, "scripts/fetch-real-servers.sh") {
			t.Errorf("CI=%q: the test ended by %s %q; want %s naming the fetch script", ci, e.how, e.msg, want)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close of a server never started: %v", err)
		}
	}
}

// A shared server closed before its first use is not started by a later
// test, which fails saying so.
func TestSharedClosedBeforeUse(t *testing.T) {
	if err := realserver.Available(coordinator.Presto); err != nil {
		t.Skipf("no PrestoDB here (%v): the missing case is TestSharedMissingSkipsButFailsUnderCI's", err)
	}
	s := &realserver.Shared{Options: realserver.Options{Flavour: coordinator.Presto}}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if e := server(t, s); e.how != "fatal" || !strings.Contains(e.msg, "closed before its first use") {
		t.Errorf("the test ended by %s %q; want a failure saying the server was closed", e.how, e.msg)
	}
}
