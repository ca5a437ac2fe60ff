package dsn

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/strategy"
)

// keyKind says how a DSN key is matched and where FormatDSN writes it.
type keyKind uint8

const (
	// kindOwn is a key zkpresto reads itself: matched case-insensitively,
	// never empty, written in the ";" part.
	kindOwn keyKind = iota
	// kindClient is a key the Presto client defines: matched exactly, as the
	// Presto client matches it, written in the "?" part.
	kindClient
)

// Sections of docs/dsn.md that list DSN keys; TestDocsDSNKeys writes each
// one's table from keyTable.
const (
	sectionMain     = "main"
	sectionSecurity = "security"
	sectionJDBC     = "jdbc"
)

// keySpec describes one DSN key: everything ParseDSN, FormatDSN, the conflict
// checks and the key tables of docs/dsn.md know about it. Adding a key is adding
// one entry to keyTable.
type keySpec struct {
	// name is the spelling FormatDSN writes and errors about a hand-built
	// Config use.
	name string
	// aliases are other spellings of the same key; giving the key and an
	// alias counts as giving the key twice.
	aliases []string
	kind    keyKind
	// secret values are never quoted in errors, and String redacts them with
	// redact.
	secret bool
	// opaque values are not quoted in parse errors either, because the
	// error quotes the bad part (a list) or the value is secret.
	opaque bool
	// parse sets the key's field from a percent-decoded value (never empty
	// for kindOwn keys). Its error says what is wrong with the value; the
	// caller names the key. Checks that do not depend on the DSN's spelling
	// belong in (*Config).Validate instead.
	parse func(c *Config, v string) error
	// format returns the value FormatDSN writes, and false when the field
	// holds its default and the key is left out.
	format func(c *Config) (string, bool)
	// redact replaces the secret part of a formatted value, for String.
	redact func(v string) string
	// def and doc are docs/dsn.md's default and meaning columns (Markdown,
	// links relative to docs/); section names the table the key is listed
	// in. Consecutive keys of a section with the same def and doc share a
	// row.
	def, doc, section string
}

// Names of the keys that other code refers to. The table below is the only
// place that lists them all.
const (
	keyUser      = "user"
	keyPassword  = "password"
	keyZKAuth    = "zooKeeperAuth"
	keyZKSSL     = "zooKeeperSSLEnabled"
	keyZKSSLCert = "zooKeeperSSLCertFile"
	keyZKSSLKey  = "zooKeeperSSLKeyFile"
	keyNamespace = "zooKeeperNamespace"
	keySession   = "zooKeeperSessionTimeout"
	keyConnect   = "zooKeeperConnectTimeout"
	keyWeights   = "weights"
	keyRetries   = "retries"

	keyStrategy       = "zooKeeperStrategy"
	keyStrictStrategy = "strictStrategy"

	keyDialTimeout     = "dialTimeout"
	keyDialRaceDelay   = "dialRaceDelay"
	keyWriteTimeout    = "writeTimeout"
	keyResponseTimeout = "responseTimeout"
)

// Names of the Presto client keys whose values (*Config).Validate checks
// for what an HTTP header cannot carry.
const (
	keySource     = "source"
	keyClientTags = "client_tags"
	keyClientInfo = "client_info"
	keyTimeZone   = "timezone"

	keyTraceToken        = "traceToken"
	keyRoles             = "roles"
	keyExtraCredentials  = "extraCredentials"
	keyResourceEstimates = "resourceEstimates"
	keyAccessToken       = "accessToken"
)

// keyTable is the table of DSN keys, in docs/dsn.md's order.
var keyTable = []*keySpec{
	{
		name: "serviceDiscoveryMode", kind: kindOwn, section: sectionMain, def: "`none`",
		doc: "`zooKeeper` (any case): HOSTS is the ZooKeeper ensemble (default port 2181). `none` or absent: HOSTS are the coordinators themselves (default port 8080) and the strategy picks among them.",
		parse: func(c *Config, v string) error {
			switch {
			case strings.EqualFold(v, "zookeeper"):
				c.ZooKeeper = true
			case strings.EqualFold(v, "none"):
				c.ZooKeeper = false
			default:
				return errors.New("want zooKeeper or none")
			}
			return nil
		},
		format: func(c *Config) (string, bool) { return "zooKeeper", c.ZooKeeper },
	},
	{
		name: keyNamespace, kind: kindOwn, section: sectionMain, def: "`presto`",
		doc: "the znode whose children are the coordinators; leading and trailing slashes are ignored, nested paths (`a/b/c`) allowed",
		parse: func(c *Config, v string) error {
			ns := strings.Trim(v, "/")
			if ns == "" {
				return errors.New("empty path")
			}
			c.Namespace = ns // validate checks the rest
			return nil
		},
		format: func(c *Config) (string, bool) {
			return c.Namespace, c.Namespace != "" && c.Namespace != defaultNamespace
		},
	},
	{
		name: keyStrategy, aliases: []string{"serverSelectStrategy"}, kind: kindOwn,
		section: sectionMain, def: "`random`",
		doc:   "the strategy (see [strategies.md](strategies.md)); the alias is Kyuubi's name for the key",
		parse: func(c *Config, v string) error { c.Strategy = v; return nil },
		format: func(c *Config) (string, bool) {
			return c.Strategy, c.Strategy != "" && c.Strategy != defaultStrategy
		},
	},
	{
		name: keyStrictStrategy, kind: kindOwn, section: sectionMain, def: "`false`",
		doc:   "`true`: an unknown `zooKeeperStrategy` is an error of `sql.Open`, naming the nearest known strategy, instead of a fallback to `random` with a warning",
		parse: func(c *Config, v string) error { return setBool(&c.StrictStrategy, v, boolAnyCase) },
		format: func(c *Config) (string, bool) {
			return "true", c.StrictStrategy
		},
	},
	{
		name: keySession, kind: kindOwn, section: sectionMain, def: "`15s`",
		doc:    "ZooKeeper session timeout (a Go duration)",
		parse:  func(c *Config, v string) error { return setDuration(&c.SessionTimeout, v) },
		format: func(c *Config) (string, bool) { return formatDuration(c.SessionTimeout, defaultSessionTimeout) },
	},
	{
		name: keyConnect, kind: kindOwn, section: sectionMain, def: "`10s`",
		doc:    "how long the first connection waits for a ZooKeeper session",
		parse:  func(c *Config, v string) error { return setDuration(&c.ConnectTimeout, v) },
		format: func(c *Config) (string, bool) { return formatDuration(c.ConnectTimeout, defaultConnectTimeout) },
	},
	{
		name: keyWeights, kind: kindOwn, opaque: true, section: sectionMain, def: "—",
		doc: "per-node weight override: `weights=10.0.0.1:8080=5,10.0.0.2:8080=1` (wins over the weight a node registered); an address matches however the node spelled it (see [Node formats](discovery.md#node-formats))",
		parse: func(c *Config, v string) error {
			w, err := parseWeights(v)
			c.Weights = w
			return err
		},
		format: func(c *Config) (string, bool) {
			entries := make([]string, 0, len(c.Weights))
			for _, addr := range slices.Sorted(maps.Keys(c.Weights)) {
				entries = append(entries, addr+"="+strconv.Itoa(c.Weights[addr]))
			}
			return strings.Join(entries, ","), len(entries) > 0
		},
	},
	{
		name: keyRetries, kind: kindOwn, section: sectionMain, def: "`3`",
		doc: "how many other coordinators a statement may fail over to when one fails before accepting it (`0`: no failover); Kyuubi's and Hive's key",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return errRetries
			}
			c.Retries = n // validate checks the upper bound
			if n == 0 {
				c.Retries = -1
			}
			return nil
		},
		format: func(c *Config) (string, bool) {
			return strconv.Itoa(max(c.Retries, 0)), c.Retries != 0 && c.Retries != defaultRetries
		},
	},
	{
		name: "healthCheckInterval", kind: kindOwn, section: sectionMain, def: "off",
		doc:   "active health checks: `GET /v1/info` on every coordinator at this interval (e.g. `5s`); a coordinator that is down or `starting` gets no new statements until it recovers",
		parse: func(c *Config, v string) error { return setDuration(&c.HealthCheckInterval, v) },
		format: func(c *Config) (string, bool) {
			return c.HealthCheckInterval.String(), c.HealthCheckInterval > 0
		},
	},
	{
		name: keyDialTimeout, kind: kindOwn, section: sectionMain, def: "`5s`",
		doc:    "how long a connection to a coordinator may take; a coordinator that cannot be reached within it is failed over and ejected (see [RELIABILITY.md](../RELIABILITY.md))",
		parse:  func(c *Config, v string) error { return setDuration(&c.DialTimeout, v) },
		format: func(c *Config) (string, bool) { return formatDuration(c.DialTimeout, defaultDialTimeout) },
	},
	{
		name: keyDialRaceDelay, kind: kindOwn, section: sectionMain, def: "`500ms`",
		doc:    "how long a statement waits for a new connection to its coordinator before it dials the next pick as well, provably unsent, and goes on whichever connection comes up first; the slow coordinator is charged a failure and its dial goes on; `dialTimeout` or more turns the race off (see [RELIABILITY.md](../RELIABILITY.md))",
		parse:  func(c *Config, v string) error { return setDuration(&c.DialRaceDelay, v) },
		format: func(c *Config) (string, bool) { return formatDuration(c.DialRaceDelay, defaultDialRaceDelay) },
	},
	{
		name: keyWriteTimeout, kind: kindOwn, section: sectionMain, def: "`10s`",
		doc:    "how long one write of a request may block (a coordinator that stopped reading); a statement not yet fully written is failed over",
		parse:  func(c *Config, v string) error { return setDuration(&c.WriteTimeout, v) },
		format: func(c *Config) (string, bool) { return formatDuration(c.WriteTimeout, defaultWriteTimeout) },
	},
	{
		name: keyResponseTimeout, kind: kindOwn, section: sectionMain, def: "`30s`",
		doc:    "how long a coordinator may take to start answering a request it was sent (Presto answers a statement at once and long-polls about 1 s); then the statement fails with a `StatementError`, never resent",
		parse:  func(c *Config, v string) error { return setDuration(&c.ResponseTimeout, v) },
		format: func(c *Config) (string, bool) { return formatDuration(c.ResponseTimeout, defaultResponseTimeout) },
	},
	{
		name: "zone", kind: kindOwn, section: sectionMain, def: "`$ZKPRESTO_ZONE`",
		doc:    "the client's zone, for `local_first`",
		parse:  func(c *Config, v string) error { c.Zone = v; return nil },
		format: func(c *Config) (string, bool) { return c.Zone, c.Zone != "" },
	},
	// ZooKeeper security: credentials as scheme:auth, and TLS from PEM files.
	{
		name: keyZKAuth, kind: kindOwn, secret: true, opaque: true, section: sectionSecurity, def: "—",
		doc: "credentials as `scheme:auth`, sent as with zkCli's `addauth` before the namespace is read, e.g. `digest:alice:s3cret`",
		parse: func(c *Config, v string) error {
			scheme, auth, ok := strings.Cut(v, ":")
			if !ok {
				return errZooKeeperAuth
			}
			c.ZooKeeperAuthScheme, c.ZooKeeperAuth = scheme, auth
			return nil
		},
		format: func(c *Config) (string, bool) {
			return c.ZooKeeperAuthScheme + ":" + c.ZooKeeperAuth, c.ZooKeeperAuthScheme != ""
		},
		redact: func(v string) string {
			scheme, auth, _ := strings.Cut(v, ":")
			return scheme + ":" + redactZooKeeperAuth(scheme, auth)
		},
	},
	{
		name: keyZKSSL, aliases: []string{"zooKeeperSSLEnable"}, kind: kindOwn,
		section: sectionSecurity, def: "`false`",
		doc:    "connect to ZooKeeper's TLS client port (`secureClientPort`); the alias is Kyuubi's and Hive's spelling",
		parse:  func(c *Config, v string) error { return setBool(&c.ZooKeeperSSL, v, boolAnyCase) },
		format: func(c *Config) (string, bool) { return "true", c.ZooKeeperSSL },
	},
	{
		name: "zooKeeperSSLCAFile", kind: kindOwn, section: sectionSecurity, def: "system roots",
		doc:    "PEM file of CA certificates to trust; giving any `zooKeeperSSL*File` key turns TLS on",
		parse:  func(c *Config, v string) error { c.ZooKeeperSSLCAFile = v; return nil },
		format: func(c *Config) (string, bool) { return c.ZooKeeperSSLCAFile, c.ZooKeeperSSLCAFile != "" },
	},
	{
		name: keyZKSSLCert, kind: kindOwn, section: sectionSecurity, def: "—",
		doc:    docZKSSLPair,
		parse:  func(c *Config, v string) error { c.ZooKeeperSSLCertFile = v; return nil },
		format: func(c *Config) (string, bool) { return c.ZooKeeperSSLCertFile, c.ZooKeeperSSLCertFile != "" },
	},
	{
		name: keyZKSSLKey, kind: kindOwn, section: sectionSecurity, def: "—",
		doc:    docZKSSLPair,
		parse:  func(c *Config, v string) error { c.ZooKeeperSSLKeyFile = v; return nil },
		format: func(c *Config) (string, bool) { return c.ZooKeeperSSLKeyFile, c.ZooKeeperSSLKeyFile != "" },
	},

	// Keys handed to the Presto client. Any other key is a session property.
	clientString(keyUser, docUser, func(c *Config) *string { return &c.User }),
	{
		name: keyPassword, kind: kindClient, secret: true, opaque: true, section: sectionMain, def: "—",
		doc:    docUser,
		parse:  func(c *Config, v string) error { c.Password = v; return nil },
		format: func(c *Config) (string, bool) { return c.Password, c.Password != "" },
		redact: func(string) string { return redacted },
	},
	alias(clientString(keySource, docClient, func(c *Config) *string { return &c.Source }), "applicationNamePrefix"),
	{
		name: keyClientTags, aliases: []string{"clientTags"}, kind: kindClient, section: sectionMain, def: "—", doc: docClient,
		parse:  func(c *Config, v string) error { c.ClientTags = parseTags(v); return nil },
		format: func(c *Config) (string, bool) { return strings.Join(c.ClientTags, ","), len(c.ClientTags) > 0 },
	},
	alias(clientString(keyClientInfo, docClient, func(c *Config) *string { return &c.ClientInfo }), "clientInfo"),
	alias(clientString(keyTraceToken, docTraceToken, func(c *Config) *string { return &c.TraceToken }), "trace_token"),
	clientMap(keyRoles, docRoles, false, func(c *Config) *map[string]string { return &c.Roles }),
	alias(clientMap(keyExtraCredentials, docExtraCredentials, true,
		func(c *Config) *map[string]string { return &c.ExtraCredentials }), "extra_credentials"),
	clientMap(keyResourceEstimates, docResourceEstimates, false, func(c *Config) *map[string]string { return &c.ResourceEstimates }),
	{
		name: keyAccessToken, kind: kindClient, secret: true, opaque: true, section: sectionMain, def: "—",
		doc:    docAccessToken,
		parse:  func(c *Config, v string) error { c.AccessToken = v; return nil },
		format: func(c *Config) (string, bool) { return c.AccessToken, c.AccessToken != "" },
		redact: func(string) string { return redacted },
	},
	alias(clientString(keyTimeZone, docTimeZone, func(c *Config) *string { return &c.TimeZone }), "timeZoneId"),
	clientString("ssl_cert", docSSL, func(c *Config) *string { return &c.SSLCert }),
	clientString("ssl_key", docSSL, func(c *Config) *string { return &c.SSLKey }),
	clientString("ssl_ca", docSSL, func(c *Config) *string { return &c.SSLCA }),
	{
		name: "ssl_skip_verify", kind: kindClient, section: sectionMain, def: "—", doc: docSSL,
		// As presto-go-client reads this key.
		parse:  func(c *Config, v string) error { return setBool(&c.SSLSkipVerify, v, boolExactCase) },
		format: func(c *Config) (string, bool) { return "true", c.SSLSkipVerify },
	},
	{
		name: "SSL", kind: kindOwn, section: sectionMain, def: "`false`",
		doc:    "https to the coordinators, trusting the system's CA certificates (the Presto JDBC driver's key; any `ssl_*` key means https too)",
		parse:  func(c *Config, v string) error { return setBool(&c.SSL, v, boolAnyCase) },
		format: func(c *Config) (string, bool) { return "true", c.SSL },
	},

	// The Presto JDBC driver's keys that have no key of their own here:
	// read into ours, or refused with what to write instead.
	{
		name: "sessionProperties", kind: kindClient, section: sectionJDBC, def: "—",
		doc:    "`name:value;name:value`: session properties, as if each were given as `name=value`",
		parse:  parseJDBCSessionProperties,
		format: neverFormatted,
	},
	{
		name: "SSLVerification", kind: kindClient, section: sectionJDBC, def: "`FULL`",
		doc: "`FULL`: verify the coordinators' certificates; `NONE`: as `ssl_skip_verify=true`; `CA` is refused",
		parse: func(c *Config, v string) error {
			switch v {
			case "FULL":
			case "NONE":
				c.SSLSkipVerify = true
			case "CA":
				return errors.New("CA (the chain without the host name) is not supported: use FULL, or NONE (ssl_skip_verify=true)")
			default:
				return errors.New("want FULL or NONE")
			}
			return nil
		},
		format: neverFormatted,
	},
	refused("SSLTrustStorePath", "Java key stores are not read; use ssl_ca=<PEM file of CA certificates>"),
	refused("SSLTrustStorePassword", "Java key stores are not read; use ssl_ca=<PEM file of CA certificates>"),
	refused("SSLTrustStoreType", "Java key stores are not read; use ssl_ca=<PEM file of CA certificates>"),
	refused("SSLKeyStorePath", "Java key stores are not read; use ssl_cert=<PEM certificate> and ssl_key=<PEM key>"),
	refused("SSLKeyStorePassword", "Java key stores are not read; use ssl_cert=<PEM certificate> and ssl_key=<PEM key>"),
	refused("SSLKeyStoreType", "Java key stores are not read; use ssl_cert=<PEM certificate> and ssl_key=<PEM key>"),
	refused("KerberosRemoteServiceName", "Kerberos is not supported; use user and password"),
	refused("KerberosPrincipal", "Kerberos is not supported; use user and password"),
	refused("KerberosKeytabPath", "Kerberos is not supported; use user and password"),
	refused("KerberosConfigPath", "Kerberos is not supported; use user and password"),
	refused("KerberosCredentialCachePath", "Kerberos is not supported; use user and password"),
	refused("httpProxy", "set HTTP_PROXY and HTTPS_PROXY in the environment instead"),
	refused("socksProxy", "set HTTPS_PROXY=socks5://host:port in the environment instead"),
}

// alias returns k with more spellings.
func alias(k *keySpec, aliases ...string) *keySpec {
	k.aliases = append(k.aliases, aliases...)
	return k
}

// neverFormatted is the format function of a key FormatDSN writes in
// other keys' terms.
func neverFormatted(*Config) (string, bool) { return "", false }

// refused describes a Presto JDBC driver key that the driver cannot
// honour; parsing it fails with instead, which says what to write.
func refused(name, instead string) *keySpec {
	return &keySpec{
		name: name, kind: kindClient, opaque: true, section: sectionJDBC, def: "refused", doc: instead,
		parse: func(*Config, string) error {
			return errors.New("the Presto JDBC driver's key is not supported: " + instead)
		},
		format: neverFormatted,
	}
}

// parseJDBCSessionProperties reads the Presto JDBC driver's
// sessionProperties=name:value;name:value into the session properties.
func parseJDBCSessionProperties(c *Config, v string) error {
	for _, entry := range strings.Split(v, ";") {
		if entry == "" {
			continue
		}
		name, value, ok := strings.Cut(entry, ":")
		if !ok {
			return fmt.Errorf("entry %q: want name:value", entry)
		}
		if !isSessionPropertyName(name) {
			return fmt.Errorf("entry %q: %q is not a session property name", entry, name)
		}
		if old, dup := c.SessionProperties[name]; dup && old != value {
			return fmt.Errorf("session property %q given twice with different values", name)
		}
		if c.SessionProperties == nil {
			c.SessionProperties = make(map[string]string)
		}
		c.SessionProperties[name] = value
	}
	return nil
}

// docs/dsn.md meanings that several keys share.
const (
	docZKSSLPair = "PEM client certificate and its key (together); ZooKeeper asks for one by default (`ssl.clientAuth=need`)"
	docUser      = "Presto user and password (also as `user:password@` before HOSTS)"
	docClient    = "passed to the Presto client as it defines them"
	docTimeZone  = "the session time zone, a tz database name (`Europe/Paris`) or an offset (`+05:30`); without it the client's own (`$TZ`, else what `/etc/localtime` links to, else the current offset), as JDBC sends, so that no statement's zone depends on the coordinator picked"
	docSSL       = "TLS to the coordinators (any of them means https)"

	docTraceToken        = "a token the coordinators write in their query logs and events, to find the program's queries (sent as `X-Presto-Trace-Token`)"
	docRoles             = "`catalog:role;catalog:role`: the role to enable in each catalog (`system` for system roles), a role name, `ALL` or `NONE`, as `SET ROLE` would (sent as `X-Presto-Role: catalog=ROLE{name}`); the JDBC drivers' key"
	docExtraCredentials  = "`name:value;name:value`: credentials for connectors, sent with every statement (`X-Presto-Extra-Credential`); the values are never shown in errors, logs or `String()`"
	docResourceEstimates = "`name:value;name:value`: what each statement is expected to take, for resource group selectors: `EXECUTION_TIME` and `CPU_TIME` (durations such as `10m`), `PEAK_MEMORY` (a size such as `2GB`) (sent as `X-Presto-Resource-Estimate`)"
	docAccessToken       = "a bearer token (a JWT), sent as `Authorization: Bearer` instead of a password; https to the coordinators only (`SSL=true` or an `ssl_*` key). Never shown. A program whose token expires gives a source with `driver.WithAccessTokenSource` instead"
)

// Parse errors shared by a key's parse function and (*Config).Validate.
var (
	errRetries       = fmt.Errorf("want a whole number from 0 to %d", maxRetries)
	errZooKeeperAuth = errors.New("want scheme:credentials, as in digest:user:password")
)

// clientString describes a Presto client key held verbatim in a string field.
func clientString(name, doc string, field func(*Config) *string) *keySpec {
	return &keySpec{
		name: name, kind: kindClient, section: sectionMain, def: "—", doc: doc,
		parse:  func(c *Config, v string) error { *field(c) = v; return nil },
		format: func(c *Config) (string, bool) { v := *field(c); return v, v != "" },
	}
}

// clientMap describes a Presto client key holding name:value entries
// separated by ";", as the Trino JDBC driver and trino-go-client write
// roles and extra credentials. A secret map's values are never quoted and
// String redacts them; its names are shown.
func clientMap(name, doc string, secret bool, field func(*Config) *map[string]string) *keySpec {
	k := &keySpec{
		name: name, kind: kindClient, secret: secret, opaque: true, section: sectionMain, def: "—", doc: doc,
		parse: func(c *Config, v string) error {
			m, err := parseMap(v, secret)
			*field(c) = m
			return err
		},
		format: func(c *Config) (string, bool) {
			m := *field(c)
			return formatMap(m, nil), len(m) > 0
		},
	}
	if secret {
		k.redact = func(v string) string {
			m, err := parseMap(v, true)
			if err != nil {
				return redacted
			}
			return formatMap(m, func(string) string { return redacted })
		}
	}
	return k
}

// parseMap reads name:value;name:value (a value may hold ":"; empty
// entries are skipped). Errors quote an entry only when secret is not set.
func parseMap(v string, secret bool) (map[string]string, error) {
	var m map[string]string
	for _, entry := range strings.Split(v, ";") {
		if entry == "" {
			continue
		}
		name, value, ok := strings.Cut(entry, ":")
		if !ok {
			if secret {
				return nil, errors.New(`an entry has no ":": want name:value;name:value`)
			}
			return nil, fmt.Errorf("entry %q: want name:value", entry)
		}
		if old, dup := m[name]; dup && old != value {
			return nil, fmt.Errorf("%q given twice with different values", name)
		}
		if m == nil {
			m = make(map[string]string)
		}
		m[name] = value
	}
	return m, nil
}

// formatMap writes m as name:value;name:value in name order, each value
// replaced by hide when it is not nil.
func formatMap(m map[string]string, hide func(string) string) string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(';')
		}
		v := m[name]
		if hide != nil {
			v = hide(v)
		}
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// formatDuration formats d, and reports false for zero or the default.
func formatDuration(d, def time.Duration) (string, bool) {
	return d.String(), d != 0 && d != def
}

// ownKeys maps the lower-cased spelling of each of our keys and aliases
// to its descriptor; clientKeys maps each Presto client key to its own.
var ownKeys, clientKeys = indexKeys(keyTable)

// The DSN's keys and a strategy's options share the ";" part: no strategy
// may take a key the DSN reads itself (strategy.RegisterWithConfig refuses
// it). The reservation lives in the strategy registry, as strategy must not
// import this package; a strategy registered before this package is
// initialised with such a key is a programming error, reported here.
func init() {
	var spellings []string
	for _, k := range keyTable {
		spellings = append(spellings, k.name)
		spellings = append(spellings, k.aliases...)
	}
	if err := strategy.ReserveKeys("the DSN", spellings...); err != nil {
		panic("dsn: " + err.Error())
	}
}

// indexKeys builds the lookup tables, panicking when two keys share a
// spelling so that a bad edit of the table fails every test.
func indexKeys(keys []*keySpec) (own, client map[string]*keySpec) {
	own, client = make(map[string]*keySpec), make(map[string]*keySpec)
	for _, k := range keys {
		for _, spelling := range append([]string{k.name}, k.aliases...) {
			lower := strings.ToLower(spelling)
			if own[lower] != nil || client[spelling] != nil {
				panic("dsn: key " + spelling + " is listed twice")
			}
			if k.kind == kindOwn {
				own[lower] = k
			} else {
				client[spelling] = k
			}
		}
	}
	for spelling := range client {
		if own[strings.ToLower(spelling)] != nil {
			panic("dsn: key " + spelling + " is both ours and the Presto client's")
		}
	}
	return own, client
}

// lookupKey returns the descriptor of key as spelled in a DSN, or nil for
// a session property.
func lookupKey(key string) *keySpec {
	if k := ownKeys[strings.ToLower(key)]; k != nil {
		return k
	}
	return clientKeys[key]
}
