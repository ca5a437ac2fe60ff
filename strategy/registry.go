package strategy

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/zkpresto/zkpresto/internal/suggest"
)

// ErrNameTaken is returned by Register and RegisterFunc when a name or alias
// is already registered, built-ins included.
var ErrNameTaken = errors.New("strategy: name already registered")

// Default is the strategy New uses for an empty or unknown name.
const Default = "random"

type entry struct {
	name    string // canonical
	factory Factory
	user    bool          // wrapped by a guard
	parser  *ConfigParser // nil: the strategy takes no options
}

var registry = struct {
	mu       sync.RWMutex
	byName   map[string]*entry // lower-cased names and aliases
	order    []*entry          // in the order registered
	warned   map[string]bool   // lower-cased unknown names already warned about
	reserved map[string]string // lower-cased option keys no strategy may take → who reserved them (ReserveKeys)
}{
	byName:   make(map[string]*entry),
	warned:   make(map[string]bool),
	reserved: make(map[string]string),
}

func init() {
	builtins := []struct {
		name    string
		factory Factory
		parser  *ConfigParser
		aliases []string
	}{
		{"random", newRandom, nil, []string{"random_choice"}},
		{"poll", newPoll, nil, []string{"polling", "round_robin"}},
		{"weighted", newWeighted, nil, []string{"weighted_random", "weighted_random_choice"}},
		{"weighted_poll", newWeightedPoll, nil, []string{"weighted_round_robin"}},
		{"user_hash", newUserHash, nil, nil},
		{"consistent_hash", newConsistentHash, &consistentHashParser, nil},
		{"least_active", newLeastActive, nil, []string{"active_weight"}},
		{"p2c", newP2C, nil, nil},
		{"shared_p2c", newSharedP2C, &sharedP2CParser, nil},
		{"local_first", newLocalFirst, nil, nil},
		{"global_poll", newGlobalPoll, nil, nil},
	}
	for _, b := range builtins {
		if err := register(&entry{name: b.name, factory: b.factory, parser: b.parser}, b.aliases); err != nil {
			panic(err) // a programming error in this table
		}
	}
}

// Register adds a strategy under name and aliases, matched case-insensitively;
// a strategy that takes options is added with RegisterWithConfig.
// It fails if the name is empty or has spaces, if a name or alias is already
// taken (ErrNameTaken; built-ins included), or if f is nil.
//
// Pickers of registered strategies are guarded: a Build that panics, and a
// Pick that panics, returns an error other than ErrNoNodes, or returns a node
// it was not built from, get a uniformly random pick instead, with a warning
// logged at most once a second per strategy.
func Register(name string, f Factory, aliases ...string) error {
	if f == nil {
		return fmt.Errorf("strategy: register %q: nil factory", name)
	}
	return register(&entry{name: name, factory: f, user: true}, aliases)
}

// RegisterFunc adds a strategy in the simple shape Kyuubi's
// ChooseServerStrategy has: choose gets the server addresses ("host:port",
// sorted) and returns one of them. choose is called concurrently and must not
// modify hosts; hosts is never empty. It is guarded as Register describes.
func RegisterFunc(name string, choose func(hosts []string) string, aliases ...string) error {
	if choose == nil {
		return fmt.Errorf("strategy: register %q: nil choose function", name)
	}
	return Register(name, func(Options) Strategy { return &funcStrategy{choose: choose} }, aliases...)
}

func register(e *entry, aliases []string) error {
	keys := make([]string, 0, 1+len(aliases))
	for _, n := range append([]string{e.name}, aliases...) {
		if err := validName(n); err != nil {
			return fmt.Errorf("strategy: register %q: %w", e.name, err)
		}
		key := strings.ToLower(n)
		if slices.Contains(keys, key) {
			return fmt.Errorf("strategy: register %q: %q given twice", e.name, n)
		}
		keys = append(keys, key)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for i, key := range keys {
		if taken, ok := registry.byName[key]; ok {
			given := e.name
			if i > 0 {
				given = aliases[i-1]
			}
			return fmt.Errorf("strategy: register %q: %q is taken by %q: %w", e.name, given, taken.name, ErrNameTaken)
		}
	}
	if err := keysFree(e); err != nil {
		return fmt.Errorf("strategy: register %q: %w", e.name, err)
	}
	for _, key := range keys {
		registry.byName[key] = e
	}
	registry.order = append(registry.order, e)
	return nil
}

func validName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if strings.ContainsFunc(name, unicode.IsSpace) {
		return fmt.Errorf("name %q contains a space", name)
	}
	return nil
}

func lookup(name string) (*entry, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	e, ok := registry.byName[strings.ToLower(name)]
	return e, ok
}

// Lookup reports the canonical name for a name or alias (any case), and
// whether it is registered.
func Lookup(name string) (canonical string, ok bool) {
	e, ok := lookup(name)
	if !ok {
		return "", false
	}
	return e.name, true
}

// New creates the strategy registered under name or one of its aliases, and
// returns the canonical name of the strategy it created. Built-ins:
//
//	random (default)  RANDOM_CHOICE                            uniformly
//	poll              polling, ROUND_ROBIN                     in turn
//	weighted          weighted_random, WEIGHTED_RANDOM_CHOICE  ∝ Node.Weight
//	weighted_poll     WEIGHTED_ROUND_ROBIN                     smooth, ∝ Node.Weight
//	user_hash         —                                        by Request.Key or User
//	consistent_hash   —                                        by Request.Key or User (see ConsistentHash)
//	least_active      active_weight                            fewest in flight per weight, in a window
//	p2c               —                                        the better of two nodes drawn by weight
//	shared_p2c        —                                        p2c on the load coordinators publish
//	local_first       —                                        least_active within Options.Zone
//	global_poll       —                                        in turn across clients (Options.Counter)
//
// An empty name means random. An unknown name also gets random, and a warning
// on opts.Logger the first time the process sees that name; the name New
// returns then says so: FallbackName(name).
func New(name string, opts Options) (Strategy, string) {
	e, ok := lookup(name)
	if !ok {
		e, _ = lookup(Default)
		if name != "" {
			warnUnknown(name, opts.Logger)
			return e.factory(opts), FallbackName(name)
		}
	}
	if !e.user {
		return e.factory(opts), e.name
	}
	inner, err := callFactory(e.factory, opts)
	if err != nil {
		if opts.Logger != nil {
			opts.Logger.Warn("strategy: user strategy could not be created, using random",
				"strategy", e.name, "error", err)
		}
		return newRandom(opts), Default
	}
	return newGuard(e.name, inner, opts), e.name
}

func callFactory(f Factory, opts Options) (s Strategy, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("factory panicked: %v", r)
		}
	}()
	if s = f(opts); s == nil {
		return nil, errors.New("factory returned nil")
	}
	return s, nil
}

// FallbackName is the name New returns for the random strategy it uses in
// place of the unknown strategy name: "random (fallback for unknown 'name')".
func FallbackName(name string) string {
	return Default + " (fallback for unknown '" + name + "')"
}

// warnUnknown logs that name is unknown, once per name in the process. A nil
// logger logs nothing and does not use up the warning.
func warnUnknown(name string, logger *slog.Logger) {
	if logger == nil {
		return
	}
	key := strings.ToLower(name)
	registry.mu.Lock()
	first := !registry.warned[key]
	registry.warned[key] = true
	registry.mu.Unlock()
	if first {
		logger.Warn(UnknownMessage(name), "name", name, "known", Names())
	}
}

// UnknownMessage is the warning for an unknown strategy name: the fallback,
// and the known name it was probably meant to be, when one is near.
func UnknownMessage(name string) string {
	msg := "strategy: unknown strategy, using " + Default
	if meant := Nearest(name); meant != "" {
		msg += " (did you mean " + meant + "?)"
	}
	return msg
}

// Nearest returns the canonical name of the registered strategy whose name
// or alias is nearest to name, ignoring case, when it is near enough to be
// a typo of it (at most a third of its letters differ); "" otherwise, and
// for a registered name.
func Nearest(name string) string {
	key := strings.ToLower(name)
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	if _, ok := registry.byName[key]; ok || key == "" {
		return ""
	}
	keys := slices.Sorted(maps.Keys(registry.byName))
	near, d := suggest.Nearest(key, keys)
	if near == "" || d > max(1, len(near)/3) {
		return ""
	}
	return registry.byName[near].name
}

// Names lists the canonical names of the registered strategies, sorted.
func Names() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var names []string
	for _, e := range registry.byName {
		names = append(names, e.name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Named returns the Factory of the strategy registered under name or one
// of its aliases, as New makes it: random for an empty or unknown name,
// with New's warning. NameOf tells the name New gave the strategy it made.
func Named(name string) Factory {
	return func(opts Options) Strategy {
		s, canonical := New(name, opts)
		return &namedStrategy{Strategy: s, name: canonical}
	}
}

// namedStrategy is a strategy Named made, with the name New gave it.
type namedStrategy struct {
	Strategy
	name string
}

// NameOf returns the name of s: for a strategy Named made, the canonical
// name New returned (FallbackName for an unknown one); for another, its
// Go type.
func NameOf(s Strategy) string {
	if n, ok := s.(*namedStrategy); ok {
		return n.name
	}
	return fmt.Sprintf("%T", s)
}
