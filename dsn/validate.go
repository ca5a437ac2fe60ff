package dsn

import (
	"errors"
	"fmt"
	"maps"
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
	// reason is what is wrong with a quoted value, for a message that
	// cannot quote it.
	reason error
}

func (e *configError) Error() string { return e.text(e.key, e.value) }

// badValue says that key holds value, which is wrong for reason.
func badValue(key, value string, reason error) error {
	return &configError{key: key, value: value, quoted: true, reason: reason, text: func(key, value string) string {
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
		if err := checkNamespace(c.Namespace); err != nil {
			return badValue(keyNamespace, c.Namespace, err)
		}
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{keySession, c.SessionTimeout}, {keyConnect, c.ConnectTimeout},
		{keyDialTimeout, c.DialTimeout}, {keyDialRaceDelay, c.DialRaceDelay}, {keyWriteTimeout, c.WriteTimeout}, {keyResponseTimeout, c.ResponseTimeout},
	} {
		if t.d < 0 {
			return badValue(t.key, t.d.String(), errNotPositive)
		}
	}
	if err := c.validateWeights(); err != nil {
		return err
	}
	if c.Retries > maxRetries {
		return badValue(keyRetries, strconv.Itoa(c.Retries), errRetries)
	}
	if c.StrictStrategy && c.Strategy != "" {
		if _, known := strategy.Lookup(c.Strategy); !known {
			return badValue(keyStrategy, c.Strategy, unknownStrategy(c.Strategy))
		}
	}
	if _, err := c.strategyConfig(); err != nil {
		return err
	}
	if err := c.validateZooKeeperSecurity(); err != nil {
		return err
	}
	if err := c.validateClientMaps(); err != nil {
		return err
	}
	if c.AccessToken != "" {
		if err := checkHeaderText(c.AccessToken); err != nil {
			return badOpaque(keyAccessToken, err)
		}
		if !c.UsesTLS() {
			return badOpaque(keyAccessToken, ErrTokenWithoutTLS)
		}
		if c.Password != "" {
			return badOpaque(keyAccessToken, errors.New("a password is given too: keep one way to authenticate"))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.SessionProperties)) {
		if key == "" {
			return errors.New("a session property has an empty key")
		}
		if lookupKey(key) != nil {
			return fmt.Errorf("session property %q is a DSN key: set its Config field instead", key)
		}
		if _, ok := strategy.LookupKey(key); ok {
			return fmt.Errorf("session property %q is a strategy's key: set it in StrategyOptions instead", key)
		}
		if err := checkHeaderText(key); err != nil {
			return fmt.Errorf("bad session property name %q: %v", key, err)
		}
		if !isSessionPropertyName(key) {
			return fmt.Errorf("bad session property name %q: want lower-case letters, digits and _, optionally catalog.property", key)
		}
		if err := checkHeaderText(c.SessionProperties[key]); err != nil {
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
		{keyUser, c.User},
		{keySource, c.Source},
		{keyClientTags, strings.Join(c.ClientTags, ",")},
		{keyClientInfo, c.ClientInfo},
		{keyTimeZone, c.TimeZone},
		{keyTraceToken, c.TraceToken},
	} {
		if err := checkHeaderText(f.value); err != nil {
			return badOpaque(f.key, err)
		}
	}
	for _, f := range []struct{ what, value string }{{"catalog", c.Catalog}, {"schema", c.Schema}} {
		if err := checkHeaderText(f.value); err != nil {
			return fmt.Errorf("bad %s: %v", f.what, err)
		}
	}
	return nil
}

// checkHeaderText says why s may not be sent as (part of) an HTTP header
// value: a control character, a byte below 0x20 or 0x7f, or invalid UTF-8,
// which no Presto name or value can be. net/http refuses to send a header
// with a control character but the tab, so every statement would fail. The
// tab is refused too: HTTP allows it inside a
// value, but servers strip it at either end (so "\talice" arrives as
// "alice", a different user from the one consistent_hash routes by), and no
// user name, catalog, schema, tag or session property has a use for one.
func checkHeaderText(s string) error {
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
		addr, err := parseHostPort(h, 0)
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
		addr, err := parseHostPort(key, 0)
		if err != nil {
			return badOpaque(keyWeights, err)
		}
		if addr != key {
			// Nodes are named canonically, so this weight would never apply.
			return badOpaque(keyWeights, fmt.Errorf("address %q is not in canonical form: want %q", key, addr))
		}
		if w := c.Weights[key]; w < 1 || w > maxWeight {
			return badOpaque(keyWeights, badWeight(strconv.Itoa(w), addr))
		}
	}
	return nil
}

// validateZooKeeperSecurity checks the ZooKeeper credentials and TLS files.
func (c *Config) validateZooKeeperSecurity() error {
	scheme, auth := c.ZooKeeperAuthScheme, c.ZooKeeperAuth
	if (scheme == "") != (auth == "") || strings.Contains(scheme, ":") {
		return badOpaque(keyZKAuth, errZooKeeperAuth)
	}
	if scheme == "digest" {
		if user, _, ok := strings.Cut(auth, ":"); !ok || user == "" {
			return badOpaque(keyZKAuth, errors.New("digest credentials must be user:password"))
		}
	}
	if c.zooKeeperSSLFiles() && !c.ZooKeeperSSL {
		return &configError{key: keyZKSSL, value: "false", quoted: true, text: func(key, value string) string {
			return fmt.Sprintf("%s is %q but ZooKeeper TLS files are given", key, value)
		}}
	}
	if (c.ZooKeeperSSLCertFile == "") != (c.ZooKeeperSSLKeyFile == "") {
		return fmt.Errorf("%s and %s must be given together", keyZKSSLCert, keyZKSSLKey)
	}
	return nil
}

// zooKeeperSSLFiles reports whether any ZooKeeper TLS file is given.
func (c *Config) zooKeeperSSLFiles() bool {
	return c.ZooKeeperSSLCAFile != "" || c.ZooKeeperSSLCertFile != "" || c.ZooKeeperSSLKeyFile != ""
}

// strategyConfig is the strategy's own options, parsed by the strategy:
// nil for a strategy that takes none. Its errors name the key.
func (c *Config) strategyConfig() (strategy.Config, error) {
	name := c.Strategy
	if name == "" {
		name = defaultStrategy
	}
	sc, err := strategy.ParseConfig(name, c.StrategyOptions, strategy.ConfigEnv{PublishedLoad: c.ZooKeeper})
	var bad *strategy.OptionError
	if errors.As(err, &bad) {
		return nil, badValue(bad.Key, bad.Value, bad.Err)
	}
	return sc, err
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

// ErrTokenWithoutTLS is the reason a bearer token is refused for
// coordinators reached over plain http, where anyone on the path could
// read it and use it: as the Trino JDBC driver and trino-go-client refuse
// it.
var ErrTokenWithoutTLS = errors.New("an access token is sent over https only: add SSL=true, or ssl_ca=<PEM file> for a private CA")

// validateClientMaps checks roles, extraCredentials and resourceEstimates:
// names the servers can split back out of their headers, values that a
// DSN can carry (no ";"), and, for resource estimates, the names and value
// forms the servers accept. Extra credential values are never quoted.
func (c *Config) validateClientMaps() error {
	for _, catalog := range slices.Sorted(maps.Keys(c.Roles)) {
		if err := checkMapName(catalog); err != nil {
			return badOpaque(keyRoles, fmt.Errorf("catalog %q: %v", catalog, err))
		}
		role := c.Roles[catalog]
		if role == "" {
			return badOpaque(keyRoles, fmt.Errorf("catalog %q: empty role: want a role name, ALL or NONE", catalog))
		}
		if err := checkMapValue(role); err != nil {
			return badOpaque(keyRoles, fmt.Errorf("role of catalog %q: %v", catalog, err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.ExtraCredentials)) {
		if err := checkMapName(name); err != nil {
			return badOpaque(keyExtraCredentials, fmt.Errorf("credential %q: %v", name, err))
		}
		if strings.Contains(c.ExtraCredentials[name], ";") {
			// The value is not quoted: it is a secret.
			return badOpaque(keyExtraCredentials, fmt.Errorf("credential %q: its value holds \";\", which ends an entry", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.ResourceEstimates)) {
		if err := checkResourceEstimate(name, c.ResourceEstimates[name]); err != nil {
			return badOpaque(keyResourceEstimates, err)
		}
	}
	return nil
}

// checkMapName says why name cannot name a role's catalog or an extra
// credential: the servers split each header on "," and then on the first
// "=", and the DSN splits entries on ";" and ":".
func checkMapName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if err := checkHeaderText(name); err != nil {
		return err
	}
	if i := strings.IndexAny(name, ",=;: "); i >= 0 {
		return fmt.Errorf("the name may not hold %q", name[i])
	}
	return nil
}

// checkMapValue says why v cannot be a role: it is sent URL-encoded,
// so only the DSN's ";" and what no header can carry are refused.
func checkMapValue(v string) error {
	if strings.Contains(v, ";") {
		return errors.New(`";" ends an entry`)
	}
	return checkHeaderText(v)
}

// checkResourceEstimate checks one resource estimate as Trino's and
// PrestoDB's HttpRequestSessionContext parse it: EXECUTION_TIME and
// CPU_TIME as an airlift Duration (a number and ns, us, ms, s, m, h or d),
// PEAK_MEMORY as a DataSize (a number and B, kB, MB, GB, TB or PB); any
// other name fails every statement there.
func checkResourceEstimate(name, value string) error {
	var units []string
	switch strings.ToUpper(name) {
	case "EXECUTION_TIME", "CPU_TIME":
		units = []string{"ns", "us", "ms", "s", "m", "h", "d"}
	case "PEAK_MEMORY":
		units = []string{"B", "kB", "MB", "GB", "TB", "PB"}
	default:
		return fmt.Errorf("unknown resource estimate %q: want EXECUTION_TIME, CPU_TIME or PEAK_MEMORY", name)
	}
	number := strings.TrimRightFunc(value, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
	unit := value[len(number):]
	if !isDecimal(number) || !slices.Contains(units, unit) {
		return fmt.Errorf("%s %q: want a number followed by one of %s, such as 10%s", name, value, strings.Join(units, ", "), units[len(units)-3])
	}
	return nil
}

// isDecimal reports whether s is digits, optionally with a fraction:
// what airlift's Duration and DataSize read before the unit.
func isDecimal(s string) bool {
	whole, frac, dotted := strings.Cut(s, ".")
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return s != ""
	}
	return digits(whole) && (!dotted || digits(frac))
}
