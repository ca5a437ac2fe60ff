package driver

import (
	"log/slog"

	"github.com/zkpresto/zkpresto/discovery"
)

// zooKeeperConfig is the discovery configuration the DSN describes.
func (c *Config) zooKeeperConfig(logger *slog.Logger) (discovery.ZooKeeperConfig, error) {
	return discovery.ZooKeeperConfig{
		Servers:        c.Hosts,
		Path:           c.ZooKeeperPath(),
		SessionTimeout: c.SessionTimeout,
		ConnectTimeout: c.ConnectTimeout,
		Logger:         logger,
	}, nil
}
