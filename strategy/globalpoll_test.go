package strategy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// fakeCounter is a SharedCounter in memory; fail makes Next fail.
type fakeCounter struct {
	mu    sync.Mutex
	value uint64
	fail  bool
}

func (c *fakeCounter) Next(context.Context) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return 0, errors.New("ensemble unreachable")
	}
	c.value++
	return c.value - 1, nil
}

// Two clients sharing a counter visit the nodes in one global turn, however
// their picks interleave.
func TestGlobalPollSharedTurn(t *testing.T) {
	counter := &fakeCounter{}
	nodes := makeNodes(3)
	a := newGlobalPoll(Options{Counter: counter}).Build(nodes)
	b := newGlobalPoll(Options{Counter: counter}).Build(nodes)
	clients := "aababbbaab"
	for i, c := range clients {
		p := a
		if c == 'b' {
			p = b
		}
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != i%3 {
			t.Fatalf("pick %d (client %c): node %d, want %d", i, c, got, i%3)
		}
	}
}

func TestGlobalPollLocalWithoutCounter(t *testing.T) {
	logger, logs := newLogger()
	s := newGlobalPoll(Options{Logger: logger})
	nodes := makeNodes(4)
	p := s.Build(nodes)
	for i := range 8 {
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != i%4 {
			t.Fatalf("pick %d: node %d, want %d", i, got, i%4)
		}
	}
	lines := logs.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "no shared counter") {
		t.Errorf("logs %q, want one info line saying the counter is local", lines)
	}
}

// A failing counter costs that pick its global turn, never the pick itself.
func TestGlobalPollFallsBackWhenCounterFails(t *testing.T) {
	logger, logs := newLogger()
	counter := &fakeCounter{value: 1, fail: true}
	s := newGlobalPoll(Options{Logger: logger, Counter: counter}).(*globalPollStrategy)
	var now int64 = 1
	s.warn.now = func() int64 { return now }
	nodes := makeNodes(3)
	p := s.Build(nodes)
	for i := range 4 { // the local counter: 0, 1, 2, 0
		if got := indexOf(t, nodes, mustPick(t, p, nil)); got != i%3 {
			t.Fatalf("failing counter, pick %d: node %d, want %d", i, got, i%3)
		}
	}
	counter.fail = false
	if got := indexOf(t, nodes, mustPick(t, p, nil)); got != 1 {
		t.Errorf("counter back at 1: node %d, want 1", got)
	}
	lines := logs.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "ensemble unreachable") {
		t.Errorf("logs %q, want one rate-limited warning with the error", lines)
	}
}
