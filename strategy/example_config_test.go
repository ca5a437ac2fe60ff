package strategy_test

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
)

// pinnedConfig is the pinned strategy's Config: which node, in address
// order, every statement goes to.
type pinnedConfig struct{ index int }

// Format writes the option back as the parser reads it.
func (c pinnedConfig) Format() map[string]string {
	if c.index == 0 {
		return map[string]string{}
	}
	return map[string]string{"pinnedIndex": strconv.Itoa(c.index)}
}

// pinned sends every statement to one node, chosen by its option.
type pinned struct{ index int }

func (s pinned) Build(nodes []discovery.Node) strategy.Picker { return pinnedPicker{nodes, s.index} }

type pinnedPicker struct {
	nodes []discovery.Node
	index int
}

func (p pinnedPicker) Pick(*strategy.Request) (*discovery.Node, error) {
	if len(p.nodes) == 0 {
		return nil, strategy.ErrNoNodes
	}
	return &p.nodes[p.index%len(p.nodes)], nil
}

// A strategy with options is this one file: its Config, its parser (keys,
// their documentation and their checks) and its Factory, registered
// together. A DSN then takes its key as one of its own
// (;zooKeeperStrategy=pinned;pinnedIndex=1), a built-in one's keys are
// listed in docs/dsn.md's Strategy options, written from the registry, and
// a key it does not take is refused naming the strategies that do.
func ExampleRegisterWithConfig() {
	err := strategy.RegisterWithConfig("pinned",
		func(opts strategy.Options) strategy.Strategy {
			cfg, _ := opts.Config.(pinnedConfig) // nil: the defaults
			return pinned(cfg)
		},
		strategy.ConfigParser{
			Keys: []strategy.ConfigKey{{Name: "pinnedIndex", Default: "`0`", Doc: "`pinned`: the node, in address order"}},
			Parse: func(values map[string]string, _ strategy.ConfigEnv) (strategy.Config, error) {
				var cfg pinnedConfig
				if v, ok := values["pinnedIndex"]; ok {
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 {
						return nil, strategy.BadOption("pinnedIndex", v, errors.New("want a whole number"))
					}
					cfg.index = n
				}
				return cfg, nil
			},
		})
	if err != nil && !errors.Is(err, strategy.ErrNameTaken) { // taken: an earlier run of this example
		fmt.Println(err)
		return
	}

	cfg, err := strategy.ParseConfig("PINNED", map[string]string{"PINNEDINDEX": "1"}, strategy.ConfigEnv{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, name := strategy.New("pinned", strategy.Options{Config: cfg})
	snap := discovery.NewSnapshot("example", 1, []discovery.Node{{Addr: "10.0.0.1:8080"}, {Addr: "10.0.0.2:8080"}})
	node, _ := s.Build(snap.Nodes).Pick(&strategy.Request{})
	fmt.Println(name, node.Addr, cfg.Format())

	_, err = strategy.ParseConfig("pinned", map[string]string{"pinnedIndex": "-1"}, strategy.ConfigEnv{})
	fmt.Println(err)
	_, err = strategy.ParseConfig("pinned", map[string]string{"slowStart": "10s"}, strategy.ConfigEnv{})
	fmt.Println(err)
	_, err = strategy.ParseConfig("random", map[string]string{"pinnedIndex": "1"}, strategy.ConfigEnv{})
	fmt.Println(err)
	// Output:
	// pinned 10.0.0.2:8080 map[pinnedIndex:1]
	// strategy pinned: bad pinnedIndex "-1": want a whole number
	// strategy pinned: bad slowStart "10s": applies to strategy shared_p2c only, not pinned
	// strategy random: bad pinnedIndex "1": applies to strategy pinned only, not random
}
