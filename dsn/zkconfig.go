package dsn

import (
	"log/slog"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/strategy"
)

// zooKeeperConfig is the discovery configuration the DSN describes.
func (c *Config) zooKeeperConfig(logger *slog.Logger) discovery.ZooKeeperConfig {
	cfg := discovery.ZooKeeperConfig{
		Servers:        c.Hosts,
		Path:           c.ZooKeeperPath(),
		SessionTimeout: c.SessionTimeout,
		ConnectTimeout: c.ConnectTimeout,
		Logger:         logger,
	}
	if sc, _ := c.strategyConfig(); sc != nil {
		if lw, ok := sc.(strategy.LoadWatchConfig); ok {
			cfg.LoadWatchSubset = lw.LoadWatchSubset()
		}
	}
	if c.ZooKeeperAuthScheme != "" {
		cfg.AuthScheme, cfg.Auth = c.ZooKeeperAuthScheme, []byte(c.ZooKeeperAuth)
	}
	if c.ZooKeeperSSL {
		cfg.TLS = &discovery.ZooKeeperTLS{
			CAFile:   c.ZooKeeperSSLCAFile,
			CertFile: c.ZooKeeperSSLCertFile,
			KeyFile:  c.ZooKeeperSSLKeyFile,
		}
	}
	return cfg
}
