package strategy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Config holds the options of one strategy, beyond the Options every
// strategy shares. As with grpc-go's per-policy load balancing configs,
// each strategy owns its option keys, their parsing and their checks: a
// strategy that takes options registers a ConfigParser with it
// (RegisterWithConfig), and its Factory finds the Config that parser
// returned in Options.Config. Adding a strategy with options touches no
// other package: the DSN hands the strategy's keys to its parser.
type Config interface {
	// Format returns the options that differ from the defaults, by key
	// (spelled as the strategy's ConfigKey spells it), in a form the
	// strategy's parser reads back to the same Config.
	Format() map[string]string
}

// ConfigKey describes one option key of a strategy. In a DSN it is one of
// the ";" keys, matched case-insensitively; docs/dsn.md lists it with
// Default and Doc.
type ConfigKey struct {
	// Name is the key's spelling.
	Name string
	// Default and Doc are docs/dsn.md's default and meaning columns
	// (Markdown, links relative to docs/).
	Default, Doc string
}

// ConfigEnv is what a strategy's options may depend on besides
// themselves: the setting they are parsed for.
type ConfigEnv struct {
	// PublishedLoad is true when discovery delivers the load coordinators
	// publish (ZooKeeper discovery).
	PublishedLoad bool
}

// ConfigParser parses the options of one strategy.
type ConfigParser struct {
	// Keys are the keys the strategy takes, in the order docs list them.
	// A key outside them is refused before Parse is called.
	Keys []ConfigKey
	// Parse returns the Config values describe. values maps some of Keys'
	// names (as Keys spell them) to their values as given, never empty; an
	// empty map asks for the defaults. A bad value is reported with
	// BadOption, which names the key.
	Parse func(values map[string]string, env ConfigEnv) (Config, error)
}

// OptionError is a strategy option that was refused: its key, its value
// and why.
type OptionError struct {
	// Strategy is the canonical name of the strategy the option was given
	// to (or the name as given, when no strategy has it).
	Strategy string
	// Key is the option's key as the strategy spells it; Value its value
	// as given.
	Key, Value string
	// Err says what is wrong with it.
	Err error
}

// Error says which key of which strategy is refused, and why.
func (e *OptionError) Error() string {
	return fmt.Sprintf("strategy %s: bad %s %q: %v", e.Strategy, e.Key, e.Value, e.Err)
}

// Unwrap returns Err.
func (e *OptionError) Unwrap() error { return e.Err }

// BadOption is the error a ConfigParser's Parse returns for key's value:
// ParseConfig fills in the strategy.
func BadOption(key, value string, reason error) error {
	return &OptionError{Key: key, Value: value, Err: reason}
}

// ErrKeyTaken is returned by RegisterWithConfig when an option key (any
// case) is another strategy's, or one ReserveKeys reserved (the DSN's own
// keys), and by ReserveKeys when a registered strategy takes a key it
// reserves.
var ErrKeyTaken = errors.New("strategy: option key already taken")

// RegisterWithConfig is Register for a strategy that takes options: parser
// parses and checks them, and f finds what it returned in Options.Config
// (nil when the strategy is created without ParseConfig). The keys must be
// well-formed and not given twice, and none may be another strategy's or a
// reserved one (ReserveKeys: the DSN reserves its own keys), in any case:
// in a DSN, a strategy's option is one of the ";" keys, and a key with two
// meanings would be read as one of them (ErrKeyTaken).
func RegisterWithConfig(name string, f Factory, parser ConfigParser, aliases ...string) error {
	if f == nil {
		return fmt.Errorf("strategy: register %q: nil factory", name)
	}
	if err := checkParser(parser); err != nil {
		return fmt.Errorf("strategy: register %q: %w", name, err)
	}
	return register(&entry{name: name, factory: f, user: true, parser: &parser}, aliases)
}

func checkParser(p ConfigParser) error {
	if p.Parse == nil {
		return errors.New("nil Parse")
	}
	var seen []string
	for _, k := range p.Keys {
		if err := validName(k.Name); err != nil {
			return fmt.Errorf("option key: %w", err)
		}
		if strings.ContainsAny(k.Name, "=;?&/@#%") {
			return fmt.Errorf("option key %q holds a DSN delimiter", k.Name)
		}
		lower := strings.ToLower(k.Name)
		if slices.Contains(seen, lower) {
			return fmt.Errorf("option key %q given twice", k.Name)
		}
		seen = append(seen, lower)
	}
	return nil
}

// ReserveKeys reserves option keys (any case) for owner, which reads them
// itself: from then on no strategy may take them (RegisterWithConfig). The
// dsn package reserves every spelling of its own keys when it is
// initialised, which keeps this package from importing it. A strategy
// registered earlier that already takes one of keys is reported with
// ErrKeyTaken, naming both; the keys are reserved all the same.
func ReserveKeys(owner string, keys ...string) error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var errs []error
	for _, key := range keys {
		lower := strings.ToLower(key)
		if _, ok := registry.reserved[lower]; !ok {
			registry.reserved[lower] = owner
		}
		for _, e := range registry.order {
			if e.parser == nil {
				continue
			}
			for _, k := range e.parser.Keys {
				if strings.ToLower(k.Name) == lower {
					errs = append(errs, fmt.Errorf("strategy %q takes option key %q, which is %s's: %w", e.name, k.Name, owner, ErrKeyTaken))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// keysFree reports an option key of e that is reserved or another
// registered strategy's. The caller holds registry.mu.
func keysFree(e *entry) error {
	if e.parser == nil {
		return nil
	}
	for _, k := range e.parser.Keys {
		lower := strings.ToLower(k.Name)
		if owner, ok := registry.reserved[lower]; ok {
			return fmt.Errorf("option key %q is %s's: %w", k.Name, owner, ErrKeyTaken)
		}
		for _, other := range registry.order {
			if other.parser == nil {
				continue
			}
			for _, ok := range other.parser.Keys {
				if strings.ToLower(ok.Name) == lower {
					return fmt.Errorf("option key %q is strategy %q's: %w", k.Name, other.name, ErrKeyTaken)
				}
			}
		}
	}
	return nil
}

// ConfigKeys returns the option keys of the strategy registered under name
// (any case, aliases included), in the order its parser lists them; nil for
// a strategy without options or an unknown name.
func ConfigKeys(name string) []ConfigKey {
	e, ok := lookup(name)
	if !ok || e.parser == nil {
		return nil
	}
	return slices.Clone(e.parser.Keys)
}

// ParseConfig parses the options values gives for the strategy registered
// under name: the Config to put in Options.Config. values maps keys (any
// case) to values; a key the strategy does not take is refused with an
// *OptionError naming the key and the strategies that take it. A strategy
// without options, or an unknown name, gets nil, and an error for any key.
func ParseConfig(name string, values map[string]string, env ConfigEnv) (Config, error) {
	e, known := lookup(name)
	if !known && name == "" {
		e, known = lookup(Default)
	}
	var keys []ConfigKey
	if known && e.parser != nil {
		keys = e.parser.Keys
	}
	given := name
	if known {
		given = e.name
	}
	canonical := make(map[string]string, len(values))
	for _, key := range slices.Sorted(maps.Keys(values)) {
		i := slices.IndexFunc(keys, func(k ConfigKey) bool { return strings.EqualFold(k.Name, key) })
		if i < 0 {
			return nil, &OptionError{Strategy: given, Key: key, Value: values[key], Err: notTaken(key, given)}
		}
		canonical[keys[i].Name] = values[key]
	}
	if !known || e.parser == nil {
		return nil, nil
	}
	cfg, err := callParse(e, canonical, env)
	if err != nil {
		var bad *OptionError
		if errors.As(err, &bad) {
			bad.Strategy = e.name
			return nil, bad
		}
		return nil, fmt.Errorf("strategy %s: %w", e.name, err)
	}
	return cfg, nil
}

// callParse runs a parser, turning a user parser's panic into an error.
func callParse(e *entry, values map[string]string, env ConfigEnv) (cfg Config, err error) {
	if e.user {
		defer func() {
			if r := recover(); r != nil {
				cfg, err = nil, fmt.Errorf("option parser panicked: %v", r)
			}
		}()
	}
	return e.parser.Parse(values, env)
}

// notTaken says which strategies take key, which given does not.
func notTaken(key, given string) error {
	owners := KeyStrategies(key)
	if len(owners) == 0 {
		return fmt.Errorf("no strategy takes this key, %s does not", given)
	}
	return fmt.Errorf("applies to strategy %s only, not %s", strings.Join(owners, " or "), given)
}

// KeyStrategies returns the canonical names of the registered strategies
// that take the option key (any case), sorted; nil when none does.
func KeyStrategies(key string) []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var owners []string
	for _, e := range registry.order {
		if e.parser == nil {
			continue
		}
		for _, k := range e.parser.Keys {
			if strings.EqualFold(k.Name, key) {
				owners = append(owners, e.name)
				break
			}
		}
	}
	slices.Sort(owners)
	return owners
}

// LookupKey reports the spelling of the option key (any case) as the
// strategy that takes it spells it, and whether a registered strategy
// takes it.
func LookupKey(key string) (name string, ok bool) {
	for _, k := range Keys() {
		if strings.EqualFold(k.Name, key) {
			return k.Name, true
		}
	}
	return "", false
}

// Keys lists the option keys of the registered strategies, in the order
// they were registered, each once (the first strategy's description of a
// shared key).
func Keys() []ConfigKey {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var keys []ConfigKey
	for _, e := range registry.order {
		if e.parser == nil {
			continue
		}
		for _, k := range e.parser.Keys {
			if !slices.ContainsFunc(keys, func(x ConfigKey) bool { return strings.EqualFold(x.Name, k.Name) }) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}
