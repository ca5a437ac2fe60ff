package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/strategy"
)

// locationFlags say where the coordinators are; a command takes one of
// them at most.
var locationFlags = []string{"server", "zookeeper", "dsn"}

// applyLocationEnv is the PreRunE of the commands that take a location
// (query, nodes): a location on the command line wins over the
// environment's; from the environment $ZKPRESTO_DSN wins over
// $ZKPRESTO_ZOOKEEPER, since a DSN says more (namespace, strategy,
// security) and a dev.env sets both. The other bound flags come from the
// environment as usual.
func applyLocationEnv(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	for _, name := range locationFlags {
		if fl := f.Lookup(name); fl != nil && fl.Changed {
			return applyEnv(f, locationFlags...)
		}
	}
	if os.Getenv(envName("dsn")) != "" {
		return applyEnv(f, "zookeeper")
	}
	return applyEnv(f)
}

// discoveryConfig is the driver's configuration for --dsn or --zookeeper
// (one of them), with --namespace over it.
func discoveryConfig(dsn, zookeeper, namespace string) (*zkdriver.Config, error) {
	var cfg *zkdriver.Config
	var err error
	switch {
	case dsn != "" && zookeeper != "":
		return nil, errors.New("--zookeeper and --dsn exclude each other: give one")
	case zookeeper != "":
		if strings.Contains(zookeeper, "@") {
			return nil, errors.New("--zookeeper: no user info (an @) in the ensemble; credentials go in a DSN's zooKeeperAuth")
		}
		if strings.ContainsAny(zookeeper, "/;?&=") {
			return nil, fmt.Errorf("--zookeeper %q: want host[:port] separated by commas", zookeeper)
		}
		if cfg, err = zkdriver.ParseDSN("presto://" + zookeeper + ";serviceDiscoveryMode=zooKeeper"); err != nil {
			return nil, fmt.Errorf("--zookeeper %q: %w", zookeeper, err)
		}
	case dsn != "":
		if cfg, err = zkdriver.ParseDSN(dsn); err != nil {
			return nil, err
		}
	default:
		return nil, errNoLocation
	}
	if namespace != "" {
		if !cfg.ZooKeeper {
			return nil, errors.New("--namespace: the DSN has no discovery (serviceDiscoveryMode=zooKeeper)")
		}
		cfg.Namespace = strings.Trim(namespace, "/")
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("--namespace %q: %w", namespace, err)
		}
	}
	return cfg, nil
}

// errNoLocation is the error of nodes without a location.
var errNoLocation = errors.New("no ZooKeeper given: --zookeeper HOSTS (or $ZKPRESTO_ZOOKEEPER), or --dsn (or $ZKPRESTO_DSN)")

// bindLocationEnv binds --dsn and --zookeeper to their environment
// variables, for applyLocationEnv.
func bindLocationEnv(f *pflag.FlagSet) { bindEnv(f, "dsn", "zookeeper") }

// strategyFallbackNote is the line that says a DSN's strategy name is
// unknown and random runs instead, with the name it was probably meant to
// be; "" for a known name. The driver's own warning goes to the logs,
// which query and nodes hide by default.
func strategyFallbackNote(name string) string {
	if _, known := strategy.Lookup(name); known || name == "" {
		return ""
	}
	note := "strategy: " + strategy.FallbackName(name)
	if meant := strategy.Nearest(name); meant != "" {
		note += "; did you mean " + meant + "?"
	}
	return note
}
