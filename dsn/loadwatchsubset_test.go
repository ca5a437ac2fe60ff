package dsn

import (
	"strings"
	"testing"
)

// loadWatchSubset reaches discovery's configuration, survives FormatDSN,
// and is refused out of range, without ZooKeeper or with a strategy that
// reads no published load.
func TestLoadWatchSubsetKey(t *testing.T) {
	const zk = "presto://zk1:2181/hive;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto;zooKeeperStrategy=shared_p2c"
	for _, tc := range []struct {
		dsn  string
		want int
	}{
		{zk, 0},
		{zk + ";loadWatchSubset=ALL", 0},
		{zk + ";loadWatchSubset=2", 2},
		{zk + ";LOADWATCHSUBSET=16", 16},
	} {
		cfg, err := ParseDSN(tc.dsn)
		if err != nil {
			t.Fatalf("%s: %v", tc.dsn, err)
		}
		if got := cfg.zooKeeperConfig(nil).LoadWatchSubset; got != tc.want {
			t.Errorf("%s: discovery watches %d, want %d", tc.dsn, got, tc.want)
		}
		again, err := ParseDSN(cfg.FormatDSN())
		if err != nil || again.zooKeeperConfig(nil).LoadWatchSubset != tc.want {
			t.Errorf("%s: FormatDSN %q parses to %v, %v", tc.dsn, cfg.FormatDSN(), again.StrategyOptions, err)
		}
	}
	for _, tc := range []struct{ dsn, want string }{
		{zk + ";loadWatchSubset=1", "from 2"},
		{zk + ";loadWatchSubset=0", "from 2"},
		{zk + ";loadWatchSubset=-3", "from 2"},
		{zk + ";loadWatchSubset=two", "from 2"},
		{zk + ";loadWatchSubset=100001", "from 2"},
		{"presto://c1:8080;zooKeeperStrategy=shared_p2c;loadWatchSubset=2", "zooKeeper only"},
		{strings.Replace(zk, "shared_p2c", "least_active", 1) + ";loadWatchSubset=2", "shared_p2c"},
	} {
		_, err := ParseDSN(tc.dsn)
		if err == nil || !strings.Contains(err.Error(), "loadWatchSubset") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it refused naming the key and %q", tc.dsn, err, tc.want)
		}
	}
}
