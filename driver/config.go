package driver

import "github.com/zkpresto/zkpresto/dsn"

// Config is a parsed DSN; see dsn.Config for its form and fields.
type Config = dsn.Config

// NewConfig returns a Config holding the defaults and no hosts.
func NewConfig() *Config { return dsn.NewConfig() }

// ParseDSN parses a DSN (see dsn.Config for its form). It does no network
// I/O. Errors name the offending part of the DSN but never include the
// password; they are dsn.ParseDSN's ("dsn: ...").
func ParseDSN(s string) (*Config, error) { return dsn.ParseDSN(s) }
