package strategy

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

// pickerFunc adapts a function to Picker.
type pickerFunc func(*Request) (*discovery.Node, error)

func (f pickerFunc) Pick(req *Request) (*discovery.Node, error) { return f(req) }

// strategyFunc adapts a function to Strategy.
type strategyFunc func([]discovery.Node) Picker

func (f strategyFunc) Build(nodes []discovery.Node) Picker { return f(nodes) }

// registerTest registers build under a fresh name and returns the strategy
// New creates for it, with its log buffer.
func registerTest(t *testing.T, build func([]discovery.Node) Picker) (Strategy, *logBuffer) {
	t.Helper()
	name := uniqueName("guarded")
	if err := Register(name, func(Options) Strategy { return strategyFunc(build) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unregister(name) })
	logger, logs := newLogger()
	s, got := New(name, Options{Logger: logger, Seed: 9})
	if got != name {
		t.Fatalf("New used %q, want %q", got, name)
	}
	freezeClock(t, s)
	return s, logs
}

// freezeClock stops the clock of a guarded strategy's warning limiter, so
// that however slowly the test runs, only the first warning is logged.
func freezeClock(t *testing.T, s Strategy) {
	t.Helper()
	g, ok := s.(*guardStrategy)
	if !ok {
		t.Fatalf("strategy is %T, want a guarded user strategy", s)
	}
	g.warn.now = func() int64 { return 1 }
}

func TestGuardFallsBackOnBadPick(t *testing.T) {
	stranger := &discovery.Node{Addr: "192.0.2.1:8080"}
	tests := []struct {
		name string
		pick func(nodes []discovery.Node) pickerFunc
		log  string
	}{
		{"panic", func([]discovery.Node) pickerFunc {
			return func(*Request) (*discovery.Node, error) { panic("boom") }
		}, "panicked: boom"},
		{"error", func([]discovery.Node) pickerFunc {
			return func(*Request) (*discovery.Node, error) { return nil, errors.New("no luck") }
		}, "no luck"},
		{"nil node", func([]discovery.Node) pickerFunc {
			return func(*Request) (*discovery.Node, error) { return nil, nil }
		}, "no node"},
		{"stranger", func([]discovery.Node) pickerFunc {
			return func(*Request) (*discovery.Node, error) { return stranger, nil }
		}, "192.0.2.1:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, logs := registerTest(t, func(nodes []discovery.Node) Picker { return tt.pick(nodes) })
			nodes := makeNodes(4)
			p := s.Build(nodes)
			// The fallback is uniform: every node turns up.
			checkFit(t, countPicks(t, p, nodes, &Request{User: "u"}, 4000), ones(4))
			lines := logs.lines()
			if len(lines) != 1 {
				t.Fatalf("4000 bad picks at one instant logged %d lines, want 1: %q", len(lines), lines)
			}
			if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], tt.log) {
				t.Errorf("log %q lacks WARN or %q", lines[0], tt.log)
			}
		})
	}
}

// A node equal to a candidate but not pointing into the slice is mapped back
// to the candidate.
func TestGuardReturnsPointerIntoNodes(t *testing.T) {
	s, logs := registerTest(t, func(nodes []discovery.Node) Picker {
		return pickerFunc(func(*Request) (*discovery.Node, error) {
			copied := nodes[1]
			return &copied, nil
		})
	})
	nodes := makeNodes(3)
	if i := indexOf(t, nodes, mustPick(t, s.Build(nodes), nil)); i != 1 {
		t.Errorf("picked node %d, want 1", i)
	}
	if lines := logs.lines(); len(lines) != 0 {
		t.Errorf("logged %q for a valid pick", lines)
	}
}

func TestGuardPassesErrNoNodes(t *testing.T) {
	s, logs := registerTest(t, func([]discovery.Node) Picker {
		return pickerFunc(func(*Request) (*discovery.Node, error) { return nil, ErrNoNodes })
	})
	if _, err := s.Build(makeNodes(2)).Pick(nil); !errors.Is(err, ErrNoNodes) {
		t.Errorf("Pick = %v, want ErrNoNodes", err)
	}
	if lines := logs.lines(); len(lines) != 0 {
		t.Errorf("logged %q", lines)
	}
}

func TestGuardBadBuild(t *testing.T) {
	for name, build := range map[string]func([]discovery.Node) Picker{
		"panic": func([]discovery.Node) Picker { panic("no build") },
		"nil":   func([]discovery.Node) Picker { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			s, logs := registerTest(t, build)
			nodes := makeNodes(3)
			checkFit(t, countPicks(t, s.Build(nodes), nodes, nil, 3000), ones(3))
			if lines := logs.lines(); len(lines) != 1 || !strings.Contains(lines[0], "Build") {
				t.Errorf("logs %q, want one line about Build", lines)
			}
			if _, err := s.Build(nil).Pick(nil); !errors.Is(err, ErrNoNodes) {
				t.Errorf("Pick on no nodes = %v, want ErrNoNodes", err)
			}
		})
	}
}

func TestBadFactoryFallsBackToRandom(t *testing.T) {
	for name, factory := range map[string]Factory{
		"panic": func(Options) Strategy { panic("no strategy") },
		"nil":   func(Options) Strategy { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			registered := uniqueName("factory")
			if err := Register(registered, factory); err != nil {
				t.Fatal(err)
			}
			defer unregister(registered)
			logger, logs := newLogger()
			s, got := New(registered, Options{Logger: logger})
			if _, ok := s.(*randomStrategy); !ok || got != "random" {
				t.Errorf("New = %T, %q; want the random strategy", s, got)
			}
			if lines := logs.lines(); len(lines) != 1 || !strings.Contains(lines[0], registered) {
				t.Errorf("logs %q, want one line naming %s", lines, registered)
			}
		})
	}
}

func TestRegisterFuncNonCandidateFallsBack(t *testing.T) {
	for name, choose := range map[string]func([]string) string{
		"stranger": func([]string) string { return "192.0.2.1:8080" },
		"panic":    func(hosts []string) string { return hosts[len(hosts)+1] },
	} {
		t.Run(name, func(t *testing.T) {
			registered := uniqueName("func")
			if err := RegisterFunc(registered, choose); err != nil {
				t.Fatal(err)
			}
			defer unregister(registered)
			logger, logs := newLogger()
			s, _ := New(registered, Options{Logger: logger, Seed: 5})
			freezeClock(t, s)
			nodes := makeNodes(3)
			checkFit(t, countPicks(t, s.Build(nodes), nodes, nil, 3000), ones(3))
			if lines := logs.lines(); len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") {
				t.Errorf("logs %q, want one warning", lines)
			}
		})
	}
}

func TestRateLimitedLogger(t *testing.T) {
	logger, logs := newLogger()
	var now atomic.Int64
	now.Store(1)
	l := &rateLimitedLogger{logger: logger, message: "m", strategy: "s", now: now.Load}
	for range 5 {
		l.log(errors.New("bad"))
	}
	now.Add(int64(warnInterval) - 1)
	l.log(errors.New("bad"))
	now.Add(1)
	l.log(errors.New("worse"))
	l.log(errors.New("bad"))
	lines := logs.lines()
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want 2: %q", len(lines), lines)
	}
	if !strings.Contains(lines[0], "suppressed=0") || !strings.Contains(lines[1], "worse") || !strings.Contains(lines[1], "suppressed=5") {
		t.Errorf("lines %q: want the first with suppressed=0, the second about worse with suppressed=5", lines)
	}
}
