package driver

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dsnScaleKinds are the parts of a DSN that can grow long, each with a DSN
// of n entries and a check that all n were read.
var dsnScaleKinds = []struct {
	name  string
	dsn   func(n int) string
	count func(c *Config) int
}{
	{"hosts", func(n int) string {
		return "presto://" + dsnScaleList(n, ",", func(i int) string { return "h" + strconv.Itoa(i) + ".example" })
	}, func(c *Config) int { return len(c.Hosts) }},
	{"weights", func(n int) string {
		return "presto://c1;weights=" + dsnScaleList(n, ",", func(i int) string { return "h" + strconv.Itoa(i) + "=2" })
	}, func(c *Config) int { return len(c.Weights) }},
	{"session properties", func(n int) string {
		return "presto://c1?" + dsnScaleList(n, "&", func(i int) string { return "p" + strconv.Itoa(i) + "=v" })
	}, func(c *Config) int { return len(c.SessionProperties) }},
}

// dsnScaleList joins entry(0) to entry(n-1) with sep.
func dsnScaleList(n int, sep string, entry func(i int) string) string {
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
	for _, kind := range dsnScaleKinds {
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
// the machine and the race detector, it compares 2,000 entries with
// 100,000: fifty times the work for a linear (or n log n) parse, 2,500
// times for a quadratic one. The bound, 250, leaves a factor of five for
// noise on a loaded machine (the best of three runs of each is taken) and
// for the garbage collector working harder on the larger DSN, and still
// catches a quadratic parse by a factor of ten.
func TestParseDSNLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("parses DSNs of 100,000 entries")
	}
	const small, large, maxRatio = 2_000, 100_000, 250
	for _, kind := range dsnScaleKinds {
		t.Run(kind.name, func(t *testing.T) {
			smallTime := dsnBestParseTime(t, kind.dsn(small), small, kind.count, 0)
			// One run far past the bound is enough to fail: a quadratic
			// parse need not be timed three times.
			largeTime := dsnBestParseTime(t, kind.dsn(large), large, kind.count, 3*maxRatio*smallTime)
			ratio := float64(largeTime) / float64(max(smallTime, time.Microsecond))
			t.Logf("%d entries: %v, %d entries: %v, ratio %.1f", small, smallTime, large, largeTime, ratio)
			if ratio > maxRatio {
				t.Errorf("parsing %d %s took %.0f times as long as %d (%v vs %v): want at most %d, as for a linear parse",
					large, kind.name, ratio, small, largeTime, smallTime, maxRatio)
			}
		})
	}
}

// dsnBestParseTime parses dsn three times, or once when that takes longer
// than a positive limit, checks that it has n entries, and returns the
// shortest time.
func dsnBestParseTime(t *testing.T, dsn string, n int, count func(*Config) int, limit time.Duration) time.Duration {
	t.Helper()
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		cfg, err := ParseDSN(dsn)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("ParseDSN of %d entries: %v", n, err)
		}
		if got := count(cfg); got != n {
			t.Fatalf("ParseDSN read %d entries, want %d", got, n)
		}
		best = min(best, elapsed)
		if limit > 0 && best > limit {
			break
		}
	}
	return best
}
