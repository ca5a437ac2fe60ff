package strategy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestLookupAliases(t *testing.T) {
	want := map[string]string{
		"random": "random", "RANDOM": "random", "random_choice": "random", "RANDOM_CHOICE": "random",
		"poll": "poll", "Polling": "poll", "round_robin": "poll", "ROUND_ROBIN": "poll",
		"weighted": "weighted", "weighted_random": "weighted", "WEIGHTED_RANDOM_CHOICE": "weighted",
		"weighted_poll": "weighted_poll", "weighted_round_robin": "weighted_poll", "WEIGHTED_ROUND_ROBIN": "weighted_poll",
		"user_hash": "user_hash", "USER_HASH": "user_hash",
		"consistent_hash": "consistent_hash", "Consistent_Hash": "consistent_hash",
		"least_active": "least_active", "active_weight": "least_active", "ACTIVE_WEIGHT": "least_active",
		"p2c": "p2c", "P2C": "p2c", "local_first": "local_first", "LOCAL_FIRST": "local_first",
		"global_poll": "global_poll", "GLOBAL_POLL": "global_poll",
	}
	for name, canonical := range want {
		got, ok := Lookup(name)
		if !ok || got != canonical {
			t.Errorf("Lookup(%q) = %q, %v; want %q, true", name, got, ok, canonical)
		}
		if _, got := New(name, Options{}); got != canonical {
			t.Errorf("New(%q) used %q, want %q", name, got, canonical)
		}
	}
	for _, name := range []string{"", "rand", "poll ", "least_loaded"} {
		if got, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) = %q, true; want not found", name, got)
		}
	}
}

func TestNewBuildsTheNamedStrategy(t *testing.T) {
	nodes := makeNodes(3)
	// Three poll picks visit every node; checked for the aliases too.
	for _, name := range []string{"poll", "ROUND_ROBIN"} {
		s, _ := New(name, Options{})
		p := s.Build(nodes)
		for i := range 3 {
			if got := indexOf(t, nodes, mustPick(t, p, nil)); got != i {
				t.Errorf("%s: pick %d gave node %d", name, i, got)
			}
		}
	}
}

func TestRegisterRejects(t *testing.T) {
	factory := func(Options) Strategy { return newRandom(Options{}) }
	name := uniqueName("reject")
	if err := Register(name, factory, name+"_alias"); err != nil {
		t.Fatal(err)
	}
	defer unregister(name)
	tests := []struct {
		name    string
		f       Factory
		aliases []string
		taken   bool
	}{
		{"random", factory, nil, true},
		{"Weighted_Poll", factory, nil, true},
		{"new_" + name, factory, []string{"ROUND_ROBIN"}, true},
		{strings.ToUpper(name), factory, nil, true},
		{"new_" + name, factory, []string{strings.ToUpper(name) + "_ALIAS"}, true},
		{"", factory, nil, false},
		{"has space", factory, nil, false},
		{"new_" + name, factory, []string{""}, false},
		{"new_" + name, nil, nil, false},
		{"new_" + name, factory, []string{"NEW_" + name}, false}, // alias repeats the name
	}
	for _, tt := range tests {
		err := Register(tt.name, tt.f, tt.aliases...)
		if err == nil {
			t.Errorf("Register(%q, %v) succeeded", tt.name, tt.aliases)
			continue
		}
		if errors.Is(err, ErrNameTaken) != tt.taken {
			t.Errorf("Register(%q, %v) = %v; ErrNameTaken %v, want %v", tt.name, tt.aliases, err, !tt.taken, tt.taken)
		}
		// A rejected registration registers nothing.
		if _, ok := Lookup("new_" + name); ok {
			t.Fatalf("Register(%q, %v) failed but registered the name", tt.name, tt.aliases)
		}
	}
	if err := RegisterFunc("new_"+name, nil); err == nil {
		t.Error("RegisterFunc with a nil function succeeded")
	}
}

func TestNewUnknownFallsBackToRandomWithOneWarning(t *testing.T) {
	logger, logs := newLogger()
	unknown := uniqueName("NoSuchStrategy")
	// A nil logger is silent and does not use up the warning.
	if _, got := New(unknown, Options{}); got != FallbackName(unknown) {
		t.Fatalf("New(%q) used %q, want %q", unknown, got, FallbackName(unknown))
	}
	for _, name := range []string{unknown, strings.ToLower(unknown), unknown} {
		s, got := New(name, Options{Logger: logger})
		if got != FallbackName(name) {
			t.Fatalf("New(%q) used %q, want %q", name, got, FallbackName(name))
		}
		if _, ok := s.(*randomStrategy); !ok {
			t.Fatalf("New(%q) built %T, want the random strategy", name, s)
		}
	}
	lines := logs.lines()
	if len(lines) != 1 {
		t.Fatalf("got %d log lines, want 1: %q", len(lines), lines)
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], unknown) {
		t.Errorf("warning %q does not name %q at WARN", lines[0], unknown)
	}
	// Another unknown name warns again; the empty name silently means random.
	New(uniqueName("other"), Options{Logger: logger})
	if _, got := New("", Options{Logger: logger}); got != "random" {
		t.Errorf(`New("") used %q, want random`, got)
	}
	if n := len(logs.lines()); n != 2 {
		t.Errorf("got %d log lines, want 2: %q", n, logs.lines())
	}
}

func TestNames(t *testing.T) {
	name := uniqueName("Named")
	if err := RegisterFunc(name, func(hosts []string) string { return hosts[0] }, name+"_alias"); err != nil {
		t.Fatal(err)
	}
	defer unregister(name)
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() = %v, not sorted", names)
	}
	want := append(slices.Clone(builtinNames), name)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("Names() = %v, want %v", names, want)
	}
}

func TestRegisterFunc(t *testing.T) {
	name := uniqueName("last_host")
	var seen []string
	var mu sync.Mutex
	err := RegisterFunc(name, func(hosts []string) string {
		mu.Lock()
		seen = slices.Clone(hosts)
		mu.Unlock()
		return hosts[len(hosts)-1]
	}, name+"_ALIAS")
	if err != nil {
		t.Fatal(err)
	}
	defer unregister(name)
	logger, logs := newLogger()
	s, got := New(strings.ToUpper(name)+"_alias", Options{Logger: logger})
	if got != name {
		t.Fatalf("New used %q, want %q", got, name)
	}
	nodes := nodesByAddr("10.0.0.3:8080", "10.0.0.1:8080", "10.0.0.2:8080")
	p := s.Build(nodes)
	for range 10 {
		if i := indexOf(t, nodes, mustPick(t, p, nil)); i != 2 {
			t.Fatalf("picked node %d, want the last one", i)
		}
	}
	if want := []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"}; !slices.Equal(seen, want) {
		t.Errorf("choose got hosts %v, want %v", seen, want)
	}
	if _, err := s.Build(nil).Pick(nil); !errors.Is(err, ErrNoNodes) {
		t.Errorf("Pick on no nodes = %v, want ErrNoNodes", err)
	}
	if lines := logs.lines(); len(lines) != 0 {
		t.Errorf("a well-behaved strategy logged %q", lines)
	}
}

// Registry use from many goroutines at once, for the race detector.
func TestRegistryConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	names := make([]string, 8)
	for i := range names {
		names[i] = uniqueName("concurrent")
	}
	defer func() {
		for _, n := range names {
			unregister(n)
		}
	}()
	for i := range 8 {
		wg.Go(func() {
			if err := RegisterFunc(names[i], func(h []string) string { return h[0] }); err != nil {
				t.Error(err)
			}
			for range 100 {
				New("poll", Options{})
				Lookup("WEIGHTED")
				Names()
				New(fmt.Sprintf("unknown_%d", i), Options{})
			}
		})
	}
	wg.Wait()
	for _, n := range names {
		if _, ok := Lookup(n); !ok {
			t.Errorf("%s not registered", n)
		}
	}
}

func TestNearestNamesWhatATypoMeant(t *testing.T) {
	for _, c := range []struct{ typo, want string }{
		{"leastactive", "least_active"},
		{"weigthed", "weighted"},
		{"Shared_P2C_", "shared_p2c"},
		{"ROUND_ROBN", "poll"}, // an alias's typo names the strategy
		{"consistent-hash", "consistent_hash"},
		{"random", ""}, // known: nothing to suggest
		{"RANDOM_CHOICE", ""},
		{"zzzzzzzzzz", ""}, // nothing near
		{"", ""},
	} {
		if got := Nearest(c.typo); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.typo, got, c.want)
		}
	}
	logger, logs := newLogger()
	New("leastactiv3", Options{Logger: logger})
	lines := logs.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "did you mean least_active?") {
		t.Errorf("the warning for leastactiv3 does not suggest least_active: %q", lines)
	}
}
