package dsn_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkpresto/zkpresto/dsn"
	"github.com/zkpresto/zkpresto/strategy"
)

func ExampleParseDSN() {
	cfg, err := dsn.ParseDSN("jdbc:presto://zk1,zk2:2182/hive/default" +
		";serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=/prod/presto;serverSelectStrategy=poll" +
		"?user=alice&password=s3cr%3Bt")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ensemble:", cfg.Ensemble(), "path:", cfg.ZooKeeperPath(), "strategy:", cfg.Strategy)
	fmt.Println(cfg) // String redacts the password

	_, err = dsn.ParseDSN("presto://c1:8080?retries=1000")
	fmt.Println(err)
	// Output:
	// ensemble: zk1:2181,zk2:2182 path: /prod/presto strategy: poll
	// presto://zk1:2181,zk2:2182/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=prod/presto;zooKeeperStrategy=poll?password=xxxxx&user=alice
	// dsn: bad retries "1000": want a whole number from 0 to 100
}

func ExampleConfig_FormatDSN() {
	cfg := dsn.NewConfig()
	cfg.Hosts = []string{"10.0.0.1:8080", "10.0.0.2:8080"}
	cfg.Strategy = "weighted"
	cfg.Weights = map[string]int{"10.0.0.1:8080": 3}
	cfg.DialTimeout = 2 * time.Second
	cfg.User = "etl"

	s := cfg.FormatDSN()
	fmt.Println(s)
	back, err := dsn.ParseDSN(s)
	fmt.Println(err == nil && back.FormatDSN() == s)
	// Output:
	// presto://10.0.0.1:8080,10.0.0.2:8080;dialTimeout=2s;weights=10.0.0.1:8080=3;zooKeeperStrategy=weighted?user=etl
	// true
}

// A DSN's routing, without database/sql: the routing.Config it describes,
// and Open, which builds the Router and the coordinator client from it.
func ExampleConfig_RoutingConfig() {
	cfg, err := dsn.ParseDSN("presto://c1:8080,c2:8080;zooKeeperStrategy=least_active;retries=1;healthCheckInterval=5s")
	if err != nil {
		fmt.Println(err)
		return
	}
	rc := cfg.RoutingConfig(dsn.Options{})
	fmt.Println(strategy.NameOf(rc.Strategy(rc.StrategyOptions)), rc.Retries, rc.HealthCheckInterval, rc.ZooKeeper == nil)

	r, err := dsn.Open(cfg, dsn.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	snap, err := r.Router.Snapshot(context.Background()) // a host list: no I/O
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range snap.Nodes {
		fmt.Println(n.Addr)
	}
	fmt.Println("https:", r.TLS)
	// Output:
	// least_active 1 5s true
	// c1:8080
	// c2:8080
	// https: false
}
