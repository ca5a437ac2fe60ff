package dsn

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scaleKinds are the parts of a DSN that can grow long, each with a DSN
// of n entries and a check that all n were read.
var scaleKinds = []struct {
	name  string
	dsn   func(n int) string
	count func(c *Config) int
}{
	{"hosts", func(n int) string {
		return "presto://" + scaleList(n, ",", func(i int) string { return "h" + strconv.Itoa(i) + ".example" })
	}, func(c *Config) int { return len(c.Hosts) }},
	{"weights", func(n int) string {
		return "presto://c1;weights=" + scaleList(n, ",", func(i int) string { return "h" + strconv.Itoa(i) + "=2" })
	}, func(c *Config) int { return len(c.Weights) }},
	{"session properties", func(n int) string {
		return "presto://c1?" + scaleList(n, "&", func(i int) string { return "p" + strconv.Itoa(i) + "=v" })
	}, func(c *Config) int { return len(c.SessionProperties) }},
}

// scaleList joins entry(0) to entry(n-1) with sep.
func scaleList(n int, sep string, entry func(i int) string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(entry(i))
	}
	return b.String()
}

func BenchmarkParseDSNScale(b *testing.B) {
	for _, kind := range scaleKinds {
		for _, n := range []int{1_000, 10_000, 100_000} {
			dsn := kind.dsn(n)
			b.Run(fmt.Sprintf("%s/%d", kind.name, n), func(b *testing.B) {
				b.SetBytes(int64(len(dsn)))
				for b.Loop() {
					if _, err := ParseDSN(dsn); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestParseDSNLinear checks that parsing grows linearly with the DSN: a
// duplicate check that compares every entry with every other took tens of
// seconds for 100,000 hosts. Rather than bound the time, which depends on
// the machine and the race detector, it compares 10,000 entries with
// 100,000: ten times the work for a linear (or n log n) parse, a hundred
// times for a quadratic one. What it compares is the CPU time of the thread
// that parses (threadCPUTime), with the garbage collector off, so that other
// processes on a shared machine and the collector's work for the rest of
// the process do not count; the two sizes are parsed in turn, three times
// each, and the best of each is taken. The bound, 40, leaves a factor of
// four for what noise remains and still catches a quadratic parse.
func TestParseDSNLinear(t *testing.T) {
	const small, large, maxRatio, rounds = 10_000, 100_000, 40, 3
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, kind := range scaleKinds {
		t.Run(kind.name, func(t *testing.T) {
			smallDSN, largeDSN := kind.dsn(small), kind.dsn(large)
			smallTime, largeTime := time.Duration(1<<63-1), time.Duration(1<<63-1)
			for range rounds {
				smallTime = min(smallTime, parseTime(t, smallDSN, small, kind.count))
				largeTime = min(largeTime, parseTime(t, largeDSN, large, kind.count))
				if largeTime > 3*maxRatio*smallTime {
					break // far past the bound: a quadratic parse need not be timed again
				}
			}
			ratio := float64(largeTime) / float64(max(smallTime, time.Microsecond))
			t.Logf("%d entries: %v, %d entries: %v, ratio %.1f", small, smallTime, large, largeTime, ratio)
			if ratio > maxRatio {
				t.Errorf("parsing %d %s took %.0f times the CPU of %d (%v vs %v): want at most %d, as for a linear parse",
					large, kind.name, ratio, small, largeTime, smallTime, maxRatio)
			}
		})
	}
}

// parseTime parses dsn on the calling goroutine's locked thread, checks
// that it has n entries, and returns the CPU time the parse took.
func parseTime(t *testing.T, dsn string, n int, count func(*Config) int) time.Duration {
	t.Helper()
	runtime.LockOSThread() // t.Run's goroutine: the parse stays on one thread
	defer runtime.UnlockOSThread()
	start := threadCPUTime()
	cfg, err := ParseDSN(dsn)
	elapsed := threadCPUTime() - start
	if err != nil {
		t.Fatalf("ParseDSN of %d entries: %v", n, err)
	}
	if got := count(cfg); got != n {
		t.Fatalf("ParseDSN read %d entries, want %d", got, n)
	}
	return elapsed
}
