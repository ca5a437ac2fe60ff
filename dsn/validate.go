package dsn

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkpresto/zkpresto/strategy"
)

// configError is a bad value in a Config, named by the DSN key that holds
// it, so that ParseDSN can say it in the DSN's own spelling.
type configError struct {
	// key is the canonical name of the key.
	key string
	// value is the bad value as FormatDSN writes it, when quoted is set.
	value  string
	quoted bool
	// text renders the message from the key and the value.
	text func(key, value string) string
}

func (e *configError) Error() string { return e.text(e.key, e.value) }

// badValue says that key holds value, which is wrong for reason.
func badValue(key, value string, reason error) error {
	return &configError{key: key, value: value, quoted: true, text: func(key, value string) string {
		return fmt.Sprintf("bad %s %q: %v", key, value, reason)
	}}
}

// badOpaque says that key is wrong for reason, without quoting its value.
func badOpaque(key string, reason error) error {
	return &configError{key: key, text: func(key, _ string) string {
		return fmt.Sprintf("bad %s: %v", key, reason)
	}}
}

// Validate checks everything about c that does not depend on how a DSN
// spells it, with the messages ParseDSN gives for the same values; ParseDSN
// calls it on every Config it returns, and Open (so the driver's
// NewConnector) on every Config it is given, so that a Config built by hand
// gets the same errors. Zero values count as defaults. Errors name the
// field by its DSN key and never quote a password.
func (c *Config) Validate() error {
	if err := c.validateHosts(); err != nil {
		return err
	}
	if err := c.validateHeaderText(); err != nil {
		return err
	}
	if c.Schema != "" && c.Catalog == "" {
		return fmt.Errorf("schema %q given without a catalog", c.Schema)
	}
	if c.Namespace != "" {
		if err := dsnCheckNamespace(c.Namespace); err != nil {
			return badValue(dsnKeyNamespace, c.Namespace, err)
		}
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{dsnKeySession, c.SessionTimeout}, {dsnKeyConnect, c.ConnectTimeout},
		{dsnKeyDialTimeout, c.DialTimeout}, {dsnKeyDialRaceDelay, c.DialRaceDelay}, {dsnKeyWriteTimeout, c.WriteTimeout}, {dsnKeyResponseTimeout, c.ResponseTimeout},
	} {
		if t.d < 0 {
			return badValue(t.key, t.d.String(), errDSNNotPositive)
		}
	}
	if err := c.validateWeights(); err != nil {
		return err
	}
	if c.Retries > dsnMaxRetries {
		return badValue(dsnKeyRetries, strconv.Itoa(c.Retries), errDSNRetries)
	}
	switch c.HashKey {
	case "", "user", "source":
	default:
		return badValue(dsnKeyHashKey, c.HashKey, errors.New("want user or source"))
	}
	if f := c.HashLoadBound; f != 0 && !(f >= 1 && f <= 100) || math.IsNaN(f) {
		return badValue(dsnKeyLoadBound, strconv.FormatFloat(f, 'g', -1, 64), errDSNLoadBound)
	}
	if c.StrictStrategy && c.Strategy != "" {
		if _, known := strategy.Lookup(c.Strategy); !known {
			return badValue(dsnKeyStrategy, c.Strategy, unknownStrategy(c.Strategy))
		}
	}
	if c.SlowStart != 0 {
		if name, _ := strategy.Lookup(c.Strategy); name != "shared_p2c" {
			v, _ := dsnLookupKey(dsnKeySlowStart).format(c)
			return badValue(dsnKeySlowStart, v, errDSNSlowStart)
		}
	}
	if n := c.LoadWatchSubset; n != 0 {
		if n < 2 || n > dsnMaxWatchSubset {
			return badValue(dsnKeyWatchSub, strconv.Itoa(n), errDSNWatchSubset)
		}
		if name, _ := strategy.Lookup(c.Strategy); name != "shared_p2c" || !c.ZooKeeper {
			return badValue(dsnKeyWatchSub, strconv.Itoa(n), errDSNWatchSubsetOf)
		}
	}
	if err := c.validateZooKeeperSecurity(); err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(c.SessionProperties)) {
		if key == "" {
			return errors.New("a session property has an empty key")
		}
		if dsnLookupKey(key) != nil {
			return fmt.Errorf("session property %q is a DSN key: set its Config field instead", key)
		}
		if err := dsnCheckHeaderText(key); err != nil {
			return fmt.Errorf("bad session property name %q: %v", key, err)
		}
		if !dsnIsSessionPropertyName(key) {
			return fmt.Errorf("bad session property name %q: want lower-case letters, digits and _, optionally catalog.property", key)
		}
		if err := dsnCheckHeaderText(c.SessionProperties[key]); err != nil {
			// The value is not quoted: it may be a password.
			return fmt.Errorf("bad value for session property %q: %v", key, err)
		}
	}
	return nil
}

// validateHeaderText checks the fields that go into HTTP headers, session
// properties aside (validate checks those with their names).
func (c *Config) validateHeaderText() error {
	for _, f := range []struct{ key, value string }{
		{dsnKeyUser, c.User},
		{dsnKeySource, c.Source},
		{dsnKeyClientTags, strings.Join(c.ClientTags, ",")},
		{dsnKeyClientInfo, c.ClientInfo},
		{dsnKeyTimeZone, c.TimeZone},
	} {
		if err := dsnCheckHeaderText(f.value); err != nil {
			return badOpaque(f.key, err)
		}
	}
	for _, f := range []struct{ what, value string }{{"catalog", c.Catalog}, {"schema", c.Schema}} {
		if err := dsnCheckHeaderText(f.value); err != nil {
			return fmt.Errorf("bad %s: %v", f.what, err)
		}
	}
	return nil
}

// dsnCheckHeaderText says why s may not be sent as (part of) an HTTP header
// value: a control character, a byte below 0x20 or 0x7f, or invalid UTF-8,
// which no Presto name or value can be. net/http refuses to send a header
// with a control character but the tab, so every statement would fail. The
// tab is refused too: HTTP allows it inside a
// value, but servers strip it at either end (so "\talice" arrives as
// "alice", a different user from the one consistent_hash routes by), and no
// user name, catalog, schema, tag or session property has a use for one.
func dsnCheckHeaderText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f {
			return fmt.Errorf("control character %U at byte %d", rune(b), i)
		}
	}
	return nil
}

// validateHosts checks that there are hosts, each a well-formed host:port,
// none listed twice.
func (c *Config) validateHosts() error {
	if len(c.Hosts) == 0 {
		return errors.New("no hosts: want presto://host[:port][,host[:port]...]")
	}
	seen := make(map[string]bool, len(c.Hosts))
	for _, h := range c.Hosts {
		addr, err := dsnParseHostPort(h, 0)
		if err != nil {
			return err
		}
		if seen[addr] {
			return fmt.Errorf("host %q listed twice in host list %q", addr, c.Ensemble())
		}
		seen[addr] = true
	}
	return nil
}

// validateWeights checks that every weight names a well-formed host:port in
// canonical form and is in range.
func (c *Config) validateWeights() error {
	for _, key := range slices.Sorted(maps.Keys(c.Weights)) {
		addr, err := dsnParseHostPort(key, 0)
		if err != nil {
			return badOpaque(dsnKeyWeights, err)
		}
		if addr != key {
			// Nodes are named canonically, so this weight would never apply.
			return badOpaque(dsnKeyWeights, fmt.Errorf("address %q is not in canonical form: want %q", key, addr))
		}
		if w := c.Weights[key]; w < 1 || w > dsnMaxWeight {
			return badOpaque(dsnKeyWeights, dsnBadWeight(strconv.Itoa(w), addr))
		}
	}
	return nil
}

// validateZooKeeperSecurity checks the ZooKeeper credentials and TLS files.
func (c *Config) validateZooKeeperSecurity() error {
	scheme, auth := c.ZooKeeperAuthScheme, c.ZooKeeperAuth
	if (scheme == "") != (auth == "") || strings.Contains(scheme, ":") {
		return badOpaque(dsnKeyZKAuth, errDSNZooKeeperAuth)
	}
	if scheme == "digest" {
		if user, _, ok := strings.Cut(auth, ":"); !ok || user == "" {
			return badOpaque(dsnKeyZKAuth, errors.New("digest credentials must be user:password"))
		}
	}
	if c.zooKeeperSSLFiles() && !c.ZooKeeperSSL {
		return &configError{key: dsnKeyZKSSL, value: "false", quoted: true, text: func(key, value string) string {
			return fmt.Sprintf("%s is %q but ZooKeeper TLS files are given", key, value)
		}}
	}
	if (c.ZooKeeperSSLCertFile == "") != (c.ZooKeeperSSLKeyFile == "") {
		return fmt.Errorf("%s and %s must be given together", dsnKeyZKSSLCert, dsnKeyZKSSLKey)
	}
	return nil
}

// zooKeeperSSLFiles reports whether any ZooKeeper TLS file is given.
func (c *Config) zooKeeperSSLFiles() bool {
	return c.ZooKeeperSSLCAFile != "" || c.ZooKeeperSSLCertFile != "" || c.ZooKeeperSSLKeyFile != ""
}

// unknownStrategy is the error of an unknown strategy name under
// strictStrategy: the nearest known name when there is one, and the list.
func unknownStrategy(name string) error {
	known := "known: " + strings.Join(strategy.Names(), ", ")
	if meant := strategy.Nearest(name); meant != "" {
		return fmt.Errorf("unknown strategy (%s; did you mean %s?)", known, meant)
	}
	return fmt.Errorf("unknown strategy (%s)", known)
}
