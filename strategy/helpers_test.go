package strategy

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// builtinNames are the canonical names of the built-in strategies.
var builtinNames = []string{
	"consistent_hash", "global_poll", "least_active", "local_first", "p2c",
	"poll", "random", "shared_p2c", "user_hash", "weighted", "weighted_poll",
}

// loadAwareNames are the built-ins that read Options.Loads.
var loadAwareNames = []string{"least_active", "local_first", "p2c", "shared_p2c"}

// makeNodes returns n nodes sorted by Addr with the given weights (1 when
// weights is shorter than n).
func makeNodes(n int, weights ...int) []discovery.Node {
	nodes := make([]discovery.Node, n)
	for i := range nodes {
		w := 1
		if i < len(weights) {
			w = weights[i]
		}
		nodes[i] = discovery.Node{Addr: fmt.Sprintf("10.0.%d.%d:8080", i/256, i%256), Weight: w, Scheme: "http"}
	}
	return discovery.NewSnapshot("test", 1, nodes).Nodes
}

// nodesByAddr returns nodes with the given addresses, sorted.
func nodesByAddr(addrs ...string) []discovery.Node {
	nodes := make([]discovery.Node, len(addrs))
	for i, a := range addrs {
		nodes[i] = discovery.Node{Addr: a}
	}
	return discovery.NewSnapshot("test", 1, nodes).Nodes
}

// indexOf returns the index of node in nodes by pointer identity, failing the
// test when node does not point into nodes.
func indexOf(t testing.TB, nodes []discovery.Node, node *discovery.Node) int {
	t.Helper()
	for i := range nodes {
		if &nodes[i] == node {
			return i
		}
	}
	t.Fatalf("picked node %v does not point into the node slice", node)
	return -1
}

// mustPick picks once, failing the test on error.
func mustPick(t testing.TB, p Picker, req *Request) *discovery.Node {
	t.Helper()
	node, err := p.Pick(req)
	if err != nil {
		t.Fatalf("Pick: %v", err)
	}
	return node
}

// pickAddrs returns the addresses of k picks.
func pickAddrs(t testing.TB, p Picker, k int) []string {
	t.Helper()
	addrs := make([]string, k)
	for i := range addrs {
		addrs[i] = mustPick(t, p, &Request{}).Addr
	}
	return addrs
}

var uniqueNames atomic.Int64

// uniqueName returns a strategy name no other test uses, so that the tests
// pass when run repeatedly in one process (-count).
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s_%d", prefix, uniqueNames.Add(1))
}

// unregister removes a test strategy and its aliases from the registry.
func unregister(name string) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	e := registry.byName[strings.ToLower(name)]
	for key, other := range registry.byName {
		if other == e {
			delete(registry.byName, key)
		}
	}
	registry.order = slices.DeleteFunc(registry.order, func(other *entry) bool { return other == e })
}

// logBuffer captures slog output, one line per record.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.FieldsFunc(b.buf.String(), func(r rune) bool { return r == '\n' })
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// chiSquare returns Pearson's statistic for observed counts against expected
// proportions (which need not be normalised).
func chiSquare(observed []int, expected []float64) float64 {
	var total int
	var weight float64
	for i := range observed {
		total += observed[i]
		weight += expected[i]
	}
	var stat float64
	for i, o := range observed {
		e := float64(total) * expected[i] / weight
		stat += (float64(o) - e) * (float64(o) - e) / e
	}
	return stat
}

// chiSquareCritical001 holds the standard chi-square quantiles at upper-tail
// probability 0.001, by degrees of freedom, as printed in statistical tables.
var chiSquareCritical001 = map[int]float64{
	1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515,
	6: 22.458, 7: 24.322, 8: 26.124, 9: 27.877, 10: 29.588,
}

// checkFit fails the test when observed does not fit expected at p = 0.001.
func checkFit(t *testing.T, observed []int, expected []float64) {
	t.Helper()
	df := len(observed) - 1
	critical, ok := chiSquareCritical001[df]
	if !ok {
		t.Fatalf("no critical value for %d degrees of freedom", df)
	}
	stat := chiSquare(observed, expected)
	t.Logf("counts %v, chi-square %.2f (critical %.3f, df %d)", observed, stat, critical, df)
	if stat > critical {
		t.Errorf("counts %v do not fit proportions %v: chi-square %.2f > %.3f (df %d, p=0.001)",
			observed, expected, stat, critical, df)
	}
}
