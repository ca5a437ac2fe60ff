package driver_test

import (
	"strings"
	"testing"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// TestNewConnectorRefusesWhatValidateRefuses checks that NewConnector and
// OpenRouting make ParseDSN's checks on a Config built by hand, with
// Validate's message under their own name.
func TestNewConnectorRefusesWhatValidateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *zkdriver.Config)
	}{
		{"host without port", func(c *zkdriver.Config) { c.Hosts = []string{"c1"} }},
		{"weight without port", func(c *zkdriver.Config) { c.Weights = map[string]int{"c1": 2} }},
		{"session property named like a key", func(c *zkdriver.Config) { c.SessionProperties = map[string]string{"WEIGHTS": "c1=2"} }},
		{"upper-case hash key", func(c *zkdriver.Config) { c.HashKey = "Source" }},
		{"slow start without shared_p2c", func(c *zkdriver.Config) { c.SlowStart = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := zkdriver.NewConfig()
			cfg.Hosts = []string{"c1:8080"}
			tc.change(cfg)
			invalid := cfg.Validate()
			if invalid == nil {
				t.Fatal("Validate accepted the Config")
			}
			want := "driver: NewConnector: " + invalid.Error()
			if c, err := zkdriver.NewConnector(cfg); err == nil || err.Error() != want {
				if c != nil {
					c.Close()
				}
				t.Errorf("NewConnector = %v, want %q", err, want)
			}
			if r, err := zkdriver.OpenRouting(cfg); err == nil || err.Error() != want {
				if r != nil {
					r.Close()
				}
				t.Errorf("OpenRouting = %v, want %q", err, want)
			}
		})
	}
	if _, err := zkdriver.NewConnector(nil); err == nil || !strings.Contains(err.Error(), "nil Config") {
		t.Errorf("NewConnector(nil) = %v", err)
	}
}
