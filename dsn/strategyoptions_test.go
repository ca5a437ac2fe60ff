package dsn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
)

// pinConfig is the Config of the strategy TestStrategyOptionsFromOneFile
// registers.
type pinConfig struct{ n int }

func (c pinConfig) Format() map[string]string {
	return map[string]string{"testPin": strconv.Itoa(c.n)}
}

type pinStrategy struct{ n int }

func (s pinStrategy) Build(nodes []discovery.Node) strategy.Picker { return pinPicker{nodes, s.n} }

type pinPicker struct {
	nodes []discovery.Node
	n     int
}

func (p pinPicker) Pick(*strategy.Request) (*discovery.Node, error) {
	if len(p.nodes) == 0 {
		return nil, strategy.ErrNoNodes
	}
	return &p.nodes[p.n%len(p.nodes)], nil
}

// A strategy registered with its options elsewhere than this package is
// configured by a DSN with no change here: its key parses (any case),
// formats back, reaches its Factory, and is refused with the strategy's
// own message, or when another strategy is named; a near miss of it is
// refused with the key to write.
func TestStrategyOptionsFromOneFile(t *testing.T) {
	err := strategy.RegisterWithConfig("dsn_test_pin",
		func(o strategy.Options) strategy.Strategy { c, _ := o.Config.(pinConfig); return pinStrategy(c) },
		strategy.ConfigParser{
			Keys: []strategy.ConfigKey{{Name: "testPin", Default: "`0`", Doc: "the node"}},
			Parse: func(values map[string]string, _ strategy.ConfigEnv) (strategy.Config, error) {
				n, err := strconv.Atoi(values["testPin"])
				if err != nil || n < 0 {
					return nil, strategy.BadOption("testPin", values["testPin"], errors.New("want a whole number"))
				}
				return pinConfig{n}, nil
			},
		})
	if err != nil && !errors.Is(err, strategy.ErrNameTaken) {
		t.Fatal(err)
	}
	cfg, err := ParseDSN("presto://c1:8080,c2:8080;zooKeeperStrategy=dsn_test_pin;TESTPIN=1")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.StrategyOptions["testPin"]; got != "1" || len(cfg.StrategyOptions) != 1 {
		t.Errorf("StrategyOptions = %v", cfg.StrategyOptions)
	}
	if got, want := cfg.FormatDSN(), "presto://c1:8080,c2:8080;testPin=1;zooKeeperStrategy=dsn_test_pin"; got != want {
		t.Errorf("FormatDSN = %q, want %q", got, want)
	}
	rc := cfg.RoutingConfig(Options{})
	if rc.StrategyOptions.Config != (pinConfig{1}) {
		t.Errorf("the strategy gets %#v", rc.StrategyOptions.Config)
	}
	for _, tc := range []struct{ dsn, want string }{
		{"presto://c1:8080;zooKeeperStrategy=dsn_test_pin;testPin=-1", `dsn: bad testPin "-1": want a whole number`},
		{"presto://c1:8080;testPin=1", `dsn: bad testPin "1": applies to strategy dsn_test_pin only, not random`},
		{"presto://c1:8080;zooKeeperStrategy=dsn_test_pin;testPin=1;testpin=2", `testpin`},
		{"presto://c1:8080;zooKeeperStrategy=dsn_test_pin;testPn=1", `did you mean testPin?`},
		{"presto://c1:8080;zooKeeperStrategy=dsn_test_pin;testPin=", `empty value for testPin`},
		{"presto://c1:8080?x=1;testPin=1", `"testPin" follows a ";" after the "?"`},
		{"presto://c1:8080;zooKeeperStrategy=dsn_test_pin;testPin=a=b", `bad testPin (its value, not shown, holds "=")`},
	} {
		_, err := ParseDSN(tc.dsn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDSN(%q) = %v, want an error containing %q", tc.dsn, err, tc.want)
		}
	}
}

// A strategy may not take a DSN key as an option (any spelling, aliases
// included, any case): the DSN reserves its keys in the strategy registry,
// and RegisterWithConfig refuses the strategy with an error naming the key.
func TestStrategyOptionKeyClashingWithTheDSNIsRefused(t *testing.T) {
	var alias string
	for _, k := range keyTable {
		if len(k.aliases) > 0 {
			alias = k.aliases[0]
			break
		}
	}
	if alias == "" {
		t.Fatal("no DSN key with an alias")
	}
	f := func(strategy.Options) strategy.Strategy { return nil }
	parse := func(map[string]string, strategy.ConfigEnv) (strategy.Config, error) { return nil, nil }
	for _, key := range []string{"ZOOKEEPERNAMESPACE", "zooKeeperStrategy", alias} {
		err := strategy.RegisterWithConfig("dsn_test_clash", f, strategy.ConfigParser{Keys: []strategy.ConfigKey{{Name: key}}, Parse: parse})
		if !errors.Is(err, strategy.ErrKeyTaken) || !strings.Contains(err.Error(), fmt.Sprintf("option key %q is the DSN's", key)) {
			t.Errorf("a strategy with option key %q: %v, want it refused as the DSN's", key, err)
		}
		if _, ok := strategy.Lookup("dsn_test_clash"); ok {
			t.Fatalf("a strategy with option key %q was registered", key)
		}
	}
}
