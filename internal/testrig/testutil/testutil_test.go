package testutil_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b testutil.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "w%d\n", i)
				_ = b.String() // reads race with the writes
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
}

func TestBufferLoggerWritesDebugRecords(t *testing.T) {
	var b testutil.Buffer
	b.Logger().Debug("hello", "k", "v")
	if got := b.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "msg=hello k=v") {
		t.Fatalf("logged %q", got)
	}
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	testutil.Eventually(t, 10*time.Second, time.Millisecond, "the third call", func() bool { return calls.Add(1) == 3 })
	if n := calls.Load(); n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func TestEventuallyFailsAtTheDeadline(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != rec {
				panic(p)
			}
		}()
		testutil.Eventually(rec, 20*time.Millisecond, time.Millisecond, "never", func() bool { return false })
	}()
	if want := "timed out after 20ms waiting for never"; rec.msg != want {
		t.Fatalf("failure %q, want %q", rec.msg, want)
	}
}
