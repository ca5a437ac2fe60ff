package dsn

import (
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/strategy"
)

// slowStart reaches shared_p2c's options, spelled as a duration or off, and
// survives FormatDSN; left out, the strategy's default applies.
func TestSlowStartKey(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want time.Duration
	}{
		{"presto://c1:8080;zooKeeperStrategy=shared_p2c", 0},
		{"presto://c1:8080;zooKeeperStrategy=SHARED_P2C;slowStart=1m", time.Minute},
		{"presto://c1:8080;zooKeeperStrategy=shared_p2c;SLOWSTART=OFF", -1},
	} {
		cfg, err := ParseDSN(tc.dsn)
		if err != nil {
			t.Fatalf("%s: %v", tc.dsn, err)
		}
		slowStart := func(c *Config) time.Duration {
			sc, _ := c.RoutingConfig(Options{}).StrategyOptions.Config.(strategy.SharedP2CConfig)
			return sc.SlowStart
		}
		if got := slowStart(cfg); got != tc.want {
			t.Errorf("%s: the strategy gets slow start %v, want %v", tc.dsn, got, tc.want)
		}
		again, err := ParseDSN(cfg.FormatDSN())
		if err != nil || slowStart(again) != tc.want {
			t.Errorf("%s: FormatDSN %q parses to %v, %v", tc.dsn, cfg.FormatDSN(), again.StrategyOptions, err)
		}
	}
	if _, err := ParseDSN("presto://c1:8080;zooKeeperStrategy=shared_p2c;slowStart=0s"); err == nil {
		t.Error("slowStart=0s parsed; want it refused (off is spelled off)")
	}
	_, err := ParseDSN("presto://c1:8080;zooKeeperStrategy=least_active;slowStart=10s")
	if err == nil || !strings.Contains(err.Error(), "slowStart") || !strings.Contains(err.Error(), "shared_p2c only") {
		t.Errorf("slowStart with least_active: %v, want it refused naming the key", err)
	}
}
