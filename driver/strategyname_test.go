package driver_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// TestUnknownStrategyIsNeverSilent checks that an unregistered strategy
// name falls back to random where it shows: in the connector's figures and,
// without a logger of the caller's, on slog.Default().
func TestUnknownStrategyIsNeverSilent(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })

	cfg, err := zkdriver.ParseDSN("presto://c1:8080;zooKeeperStrategy=weigthed")
	if err != nil {
		t.Fatal(err)
	}
	c, err := zkdriver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, want := c.Stats().Strategy, "random (fallback for unknown 'weigthed')"; got != want {
		t.Errorf("Stats().Strategy = %q, want %q", got, want)
	}
	if !strings.Contains(buf.String(), "unknown strategy") || !strings.Contains(buf.String(), "weigthed") {
		t.Errorf("slog.Default() got %q, want the unknown strategy warning", buf.String())
	}
}
