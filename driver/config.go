package driver

import (
	"fmt"

	"github.com/zkpresto/zkpresto/dsn"
)

// Config is a parsed DSN; see dsn.Config for its form and fields.
type Config = dsn.Config

// NewConfig returns a Config holding the defaults and no hosts.
func NewConfig() *Config { return dsn.NewConfig() }

// ParseDSN parses a DSN (see dsn.Config for its form). It does no network
// I/O. Errors name the offending part of the DSN but never include the
// password; they are dsn.ParseDSN's, under the driver's "zkpresto: ".
func ParseDSN(s string) (*Config, error) {
	cfg, err := dsn.ParseDSN(s)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: %w", err)
	}
	return cfg, nil
}
