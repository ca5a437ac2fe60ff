package strategy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The built-in strategies' options parse, format back to what parses to
// the same Config, and reach the strategy through Options.Config.
func TestBuiltinConfigsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]string
		env    ConfigEnv
		want   Config
	}{
		{"consistent_hash", nil, ConfigEnv{}, ConsistentHashConfig{}},
		{"consistent_hash", map[string]string{"HASHKEY": "Source", "hashLoadBound": "1.25"}, ConfigEnv{}, ConsistentHashConfig{Key: HashBySource, LoadBound: 1.25}},
		{"shared_p2c", map[string]string{"slowStart": "1m"}, ConfigEnv{}, SharedP2CConfig{SlowStart: time.Minute}},
		{"SHARED_P2C", map[string]string{"slowstart": "OFF", "loadWatchSubset": "16"}, ConfigEnv{PublishedLoad: true}, SharedP2CConfig{SlowStart: -1, WatchSubset: 16}},
		{"shared_p2c", map[string]string{"loadWatchSubset": "all"}, ConfigEnv{}, SharedP2CConfig{}},
		{"random", nil, ConfigEnv{}, nil},
		{"no_such_strategy", nil, ConfigEnv{}, nil},
	} {
		got, err := ParseConfig(tc.name, tc.values, tc.env)
		if err != nil || got != tc.want {
			t.Errorf("ParseConfig(%s, %v) = %#v, %v; want %#v", tc.name, tc.values, got, err, tc.want)
			continue
		}
		if got == nil {
			continue
		}
		again, err := ParseConfig(tc.name, got.Format(), tc.env)
		if err != nil || again != got {
			t.Errorf("%s: Format %v parses to %#v, %v", tc.name, got.Format(), again, err)
		}
	}
	if lw, ok := Config(SharedP2CConfig{WatchSubset: 3}).(LoadWatchConfig); !ok || lw.LoadWatchSubset() != 3 {
		t.Error("SharedP2CConfig does not tell discovery its watch subset")
	}
	s := newSharedP2C(Options{Config: SharedP2CConfig{SlowStart: -1, PublishedStaleAfter: time.Second}}).(*sharedP2CStrategy)
	if s.slowStart != 0 || s.staleAfter != time.Second {
		t.Errorf("shared_p2c built with slow start %v, stale after %v", s.slowStart, s.staleAfter)
	}
	h := newConsistentHash(Options{Config: ConsistentHashConfig{Key: HashBySource, LoadBound: 2}}).(*hashStrategy)
	if h.cfg.Key != HashBySource || h.cfg.LoadBound != 2 {
		t.Errorf("consistent_hash built with %+v", h.cfg)
	}
	// Another strategy's Config means the defaults.
	if h := newConsistentHash(Options{Config: SharedP2CConfig{SlowStart: 1}}).(*hashStrategy); h.cfg != (ConsistentHashConfig{}) {
		t.Errorf("consistent_hash took shared_p2c's config: %+v", h.cfg)
	}
}

// Every refusal names the key, its value and the strategy.
func TestParseConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]string
		env    ConfigEnv
		want   string
	}{
		{"consistent_hash", map[string]string{"hashKey": "md5"}, ConfigEnv{}, `strategy consistent_hash: bad hashKey "md5": want user or source`},
		{"consistent_hash", map[string]string{"hashLoadBound": "0.5"}, ConfigEnv{}, `bad hashLoadBound "0.5": want a number from 1 to 100`},
		{"consistent_hash", map[string]string{"hashLoadBound": "NaN"}, ConfigEnv{}, `bad hashLoadBound "NaN"`},
		{"consistent_hash", map[string]string{"hashLoadBound": "+Inf"}, ConfigEnv{}, `bad hashLoadBound "+Inf"`},
		{"consistent_hash", map[string]string{"hashLoadBound": "0"}, ConfigEnv{}, `bad hashLoadBound "0"`},
		{"shared_p2c", map[string]string{"slowStart": "0s"}, ConfigEnv{}, `bad slowStart "0s": must be positive`},
		{"shared_p2c", map[string]string{"slowStart": "soon"}, ConfigEnv{}, `bad slowStart "soon": want a duration`},
		{"shared_p2c", map[string]string{"loadWatchSubset": "1"}, ConfigEnv{PublishedLoad: true}, `bad loadWatchSubset "1": want all or a whole number from 2`},
		{"shared_p2c", map[string]string{"loadWatchSubset": "2"}, ConfigEnv{}, `bad loadWatchSubset "2": applies with serviceDiscoveryMode=zooKeeper only`},
		{"least_active", map[string]string{"slowStart": "10s"}, ConfigEnv{}, `strategy least_active: bad slowStart "10s": applies to strategy shared_p2c only, not least_active`},
		{"", map[string]string{"hashKey": "user"}, ConfigEnv{}, `strategy random: bad hashKey "user": applies to strategy consistent_hash only, not random`},
		{"nosuch", map[string]string{"slowStart": "10s"}, ConfigEnv{}, `strategy nosuch: bad slowStart "10s": applies to strategy shared_p2c only, not nosuch`},
		{"shared_p2c", map[string]string{"colour": "red"}, ConfigEnv{}, `bad colour "red": no strategy takes this key, shared_p2c does not`},
	} {
		_, err := ParseConfig(tc.name, tc.values, tc.env)
		var bad *OptionError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &bad) {
			t.Errorf("ParseConfig(%q, %v) = %v, want an *OptionError containing %q", tc.name, tc.values, err, tc.want)
		}
	}
}

// RegisterWithConfig refuses a parser it could not use, and a user
// parser's panic is an error, not a crash.
func TestRegisterWithConfig(t *testing.T) {
	f := func(Options) Strategy { return newRandom(Options{}) }
	parse := func(map[string]string, ConfigEnv) (Config, error) { return nil, nil }
	for _, tc := range []struct {
		what   string
		parser ConfigParser
	}{
		{"nil Parse", ConfigParser{Keys: []ConfigKey{{Name: "k"}}}},
		{"empty key", ConfigParser{Keys: []ConfigKey{{Name: ""}}, Parse: parse}},
		{"key given twice", ConfigParser{Keys: []ConfigKey{{Name: "k"}, {Name: "K"}}, Parse: parse}},
		{"delimiter in a key", ConfigParser{Keys: []ConfigKey{{Name: "a=b"}}, Parse: parse}},
	} {
		if err := RegisterWithConfig("config_test_"+strings.ReplaceAll(tc.what, " ", "_"), f, tc.parser); err == nil {
			t.Errorf("%s: registered", tc.what)
		}
	}
	if err := RegisterWithConfig("config_test_nil_factory", nil, ConfigParser{Parse: parse}); err == nil {
		t.Error("nil factory registered")
	}
	panicky := ConfigParser{Keys: []ConfigKey{{Name: "configTestPanic"}}, Parse: func(map[string]string, ConfigEnv) (Config, error) { panic("boom") }}
	if err := RegisterWithConfig("config_test_panicky", f, panicky); err != nil {
		t.Fatal(err)
	}
	defer unregister("config_test_panicky")
	if _, err := ParseConfig("config_test_panicky", map[string]string{"configTestPanic": "1"}, ConfigEnv{}); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("panicking parser: %v", err)
	}
	if name, ok := LookupKey("CONFIGTESTPANIC"); !ok || name != "configTestPanic" {
		t.Errorf("LookupKey = %q, %v", name, ok)
	}
	if got := KeyStrategies("configtestpanic"); len(got) != 1 || got[0] != "config_test_panicky" {
		t.Errorf("KeyStrategies = %v", got)
	}
	var names []string
	for _, k := range Keys() {
		names = append(names, k.Name)
	}
	if !strings.HasPrefix(strings.Join(names, ","), "hashKey,hashLoadBound,slowStart,loadWatchSubset") {
		t.Errorf("Keys() = %v, want the built-ins' first, in registry order", names)
	}
}

// An option key is one strategy's: RegisterWithConfig refuses a key another
// strategy takes, or one reserved (the DSN's own), in any case, with an
// error naming the owner; ReserveKeys reports a strategy registered earlier
// with a key it reserves.
func TestOptionKeysAreNotShared(t *testing.T) {
	f := func(Options) Strategy { return newRandom(Options{}) }
	parse := func(map[string]string, ConfigEnv) (Config, error) { return nil, nil }
	t.Cleanup(func() {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		delete(registry.reserved, "configtestreserved")
		delete(registry.reserved, "configtestlate")
	})
	if err := ReserveKeys("the test", "configTestReserved"); err != nil {
		t.Fatal(err)
	}
	for key, owner := range map[string]string{"SLOWSTART": `strategy "shared_p2c"`, "hashKey": `strategy "consistent_hash"`, "configtestreserved": "the test"} {
		err := RegisterWithConfig("config_test_clash", f, ConfigParser{Keys: []ConfigKey{{Name: "configTestFine"}, {Name: key}}, Parse: parse})
		if !errors.Is(err, ErrKeyTaken) || !strings.Contains(err.Error(), fmt.Sprintf("option key %q is %s's", key, owner)) {
			t.Errorf("a strategy with option key %q: %v, want it refused as %s's", key, err, owner)
		}
		if _, ok := Lookup("config_test_clash"); ok {
			unregister("config_test_clash")
			t.Fatalf("a strategy with option key %q was registered", key)
		}
	}
	if err := RegisterWithConfig("config_test_early", f, ConfigParser{Keys: []ConfigKey{{Name: "configTestLate"}}, Parse: parse}); err != nil {
		t.Fatal(err)
	}
	defer unregister("config_test_early")
	if err := ReserveKeys("the test", "other", "CONFIGTESTLATE"); !errors.Is(err, ErrKeyTaken) ||
		!strings.Contains(err.Error(), `strategy "config_test_early" takes option key "configTestLate", which is the test's`) {
		t.Errorf("reserving a key a strategy took: %v", err)
	}
	if keys := ConfigKeys("SHARED_P2C"); len(keys) != 2 || keys[0].Name != "slowStart" {
		t.Errorf("ConfigKeys(shared_p2c) = %v", keys)
	}
	if keys := ConfigKeys("random"); keys != nil {
		t.Errorf("ConfigKeys(random) = %v, want none", keys)
	}
}
