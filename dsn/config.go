package dsn

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Defaults applied by NewConfig and ParseDSN.
const (
	defaultNamespace      = "presto"
	defaultStrategy       = "random"
	defaultSessionTimeout = 15 * time.Second
	defaultConnectTimeout = 10 * time.Second
	defaultRetries        = 3
	maxRetries            = 100
	defaultZooKeeperPort  = 2181
	defaultPrestoPort     = 8080
	// maxWeight keeps sums of weights far from overflow in strategies
	// that add them up.
	maxWeight = 1_000_000
	// redacted replaces the password in Config.String.
	redacted = "xxxxx"
)

// Default time limits of the coordinator transport.
const (
	// A lost SYN is sent again after 1 s and 3 s: 5 s allows two resends,
	// where Go's default dialer waits 30 s.
	defaultDialTimeout = 5 * time.Second
	// A healthy dial is one round trip (TCP), three with TLS, which Go's
	// transport completes before it hands over the connection: 500 ms
	// covers a TLS 1.3 dial over any terrestrial path (round trips stay
	// under about 250 ms even between antipodes) and is half the 1 s after
	// which Linux resends a lost SYN, so that a dial that lost its first
	// SYN, or a host that drops them, races another coordinator instead
	// of costing the statement a second or the whole dialTimeout.
	defaultDialRaceDelay = 500 * time.Millisecond
	// A request is a few kilobytes, which the kernel takes at once unless
	// the coordinator stopped reading.
	defaultWriteTimeout = 10 * time.Second
	// Presto answers a submission at once (queued) and long-polls a
	// nextUri for about a second: 30 s leaves room for a long GC pause.
	defaultResponseTimeout = 30 * time.Second
)

// Config is a parsed DSN. The zero value is not useful; use ParseDSN or
// NewConfig. In a Config built by hand, zero values count as defaults.
//
// A DSN has the form
//
//	[jdbc:]presto://[user[:password]@]HOSTS[/CATALOG[/SCHEMA]][;key=value]...[?key=value[&key=value]...]
//
// with trino:// for Trino servers. HOSTS is a comma-separated list of
// host[:port] (IPv6 addresses in brackets). With serviceDiscoveryMode=zooKeeper
// they are the ZooKeeper ensemble (default port 2181) and the coordinators are
// the children of /zooKeeperNamespace; otherwise they are the coordinators
// (default port 8080). A key may go in either the ";" or the "?" part.
//
// The user info is found first, by its "@": the last "@" before the first
// "/" after "://", so a password may hold "@", ":", ";", "?", "=" and "&" as
// they are, and a password that looks like a port is still a password. That
// "@" ends the user info unless the user name (up to the first ":") holds a
// ";" or "?", or the text after the "@" up to the next "/", ";" or "?" holds
// "=" or "&": then the "@" is part of a value, as in ?user=bob@corp. A DSN
// that reads both ways, a user info with ";" or "?" whose text before them
// is a valid host list (presto://h:8080?user=bob@corp), is refused. A
// password cannot hold "/" unencoded.
//
// Keys, values, the user info, catalog and schema are percent-decoded ("+"
// stays "+"), so a delimiter that would end its part must be encoded: "/"
// in a password; "/", ";" and "?" in a user name; "/", ";", "?" and "@" in a
// catalog, schema or key; ";" and "?" in a ";"-part value; "&" in a "?"-part
// value; "@" in a value before the first "/" (FormatDSN encodes every "@");
// and "%" everywhere.
//
// Control characters (bytes below 0x20, tab included, and 0x7f) and invalid
// UTF-8 are refused, by ParseDSN and Validate alike, in the user name,
// source, client tags, client info, time zone, catalog, schema and session
// property names and values: they go into HTTP headers, which cannot carry
// them. The password may hold any byte: it is sent base64-encoded.
type Config struct {
	// Trino is true for trino:// DSNs.
	Trino bool
	// Hosts are host:port addresses with the default port applied, written
	// as discovery.CanonicalAddr writes them: the ZooKeeper ensemble when
	// ZooKeeper is set, the coordinators otherwise.
	Hosts []string
	// Catalog and Schema are the default catalog and schema; Schema needs Catalog.
	Catalog, Schema string

	// ZooKeeper is true with serviceDiscoveryMode=zooKeeper.
	ZooKeeper bool
	// Namespace is the znode whose children are the coordinators, without
	// leading or trailing slashes; "presto" by default (or when empty).
	Namespace string
	// Strategy names the load-balancing strategy as given; "random" by
	// default. It is resolved when the Router is built (Open): an unknown
	// name gets random and a warning, unless StrictStrategy.
	Strategy string
	// StrictStrategy makes an unknown Strategy name an error of Validate
	// (so of ParseDSN and Open) instead of a fallback to random: for
	// programs that would rather not start than balance otherwise than
	// configured.
	StrictStrategy bool
	// SessionTimeout is the ZooKeeper session timeout (15s by default).
	SessionTimeout time.Duration
	// ConnectTimeout bounds the first ZooKeeper connection (10s by default).
	ConnectTimeout time.Duration
	// Weights overrides node weights by address ("host:port", written as
	// discovery.CanonicalAddr writes it, as nodes are named); nil when the
	// DSN gives none.
	Weights map[string]int
	// ZooKeeperAuthScheme and ZooKeeperAuth are the ZooKeeper credentials
	// (zooKeeperAuth=scheme:auth, e.g. digest:user:password), sent with
	// every session; empty for none. String redacts the password.
	ZooKeeperAuthScheme, ZooKeeperAuth string
	// ZooKeeperSSL connects to ZooKeeper over TLS (its secure client port).
	ZooKeeperSSL bool
	// ZooKeeperSSLCAFile, ZooKeeperSSLCertFile and ZooKeeperSSLKeyFile are PEM
	// files: the CA certificates to trust (empty: the system's) and the
	// client certificate and key ZooKeeper asks for by default.
	ZooKeeperSSLCAFile, ZooKeeperSSLCertFile, ZooKeeperSSLKeyFile string
	// Retries is how many other coordinators a statement may fail over to
	// when one fails before accepting it, at most 100. 0 means the default,
	// 3; a negative value (retries=0 in a DSN) disables failover.
	Retries int
	// HealthCheckInterval, when positive, turns on active health checks:
	// GET /v1/info on every coordinator at this interval.
	HealthCheckInterval time.Duration
	// DialTimeout bounds a connection to a coordinator (5s by default). A
	// dial that fails fails the statement over and counts against the
	// coordinator, even after the caller gave up.
	DialTimeout time.Duration
	// DialRaceDelay is how long a statement waits for a new connection to
	// its coordinator (500ms by default) before it dials the next pick as
	// well, provably unsent, and goes on whichever connection comes up
	// first: the slow coordinator is charged a failure (three in a row
	// eject it) and its dial goes on, within DialTimeout; a connection
	// that loses the race is kept for the next statement to its
	// coordinator. A value of DialTimeout or more turns the race off.
	DialRaceDelay time.Duration
	// WriteTimeout bounds each write of a request (10s by default): a
	// coordinator that stops reading fails it; before the statement was
	// fully written, the statement fails over.
	WriteTimeout time.Duration
	// ResponseTimeout bounds the wait for the first byte of an answer after
	// a request was written (30s by default). The statement may have started:
	// it fails with a StatementError, or for a GET of a nextUri is retried.
	ResponseTimeout time.Duration
	// Zone is the client's zone for zone-aware strategies; empty means the
	// ZKPRESTO_ZONE environment variable.
	Zone string
	// StrategyOptions are the options of the strategy Strategy names, by
	// key as the strategy spells it (hashKey, hashLoadBound for
	// consistent_hash; slowStart, loadWatchSubset for shared_p2c), each
	// value as a DSN gives it; nil when none. The strategy parses and
	// checks them (strategy.ParseConfig): Validate refuses a key the
	// strategy does not take, naming the strategies that do.
	StrategyOptions map[string]string

	// User is the Presto user.
	User string
	// Password is sent with HTTP basic authentication; String redacts it.
	Password string
	// Source is the client source (X-Presto-Source).
	Source string
	// ClientTags are the client tags; nil when none.
	ClientTags []string
	// ClientInfo is free-form client information.
	ClientInfo string
	// TraceToken is a token the coordinators write in their query logs and
	// events (X-Presto-Trace-Token), for finding a program's queries.
	TraceToken string
	// Roles are the roles to enable, by catalog ("system" for system
	// roles): a role name, ALL or NONE, as SET ROLE takes them; nil when
	// none.
	Roles map[string]string
	// ExtraCredentials are credentials for connectors (name to value),
	// sent with every statement; nil when none. String redacts the values.
	ExtraCredentials map[string]string
	// ResourceEstimates are what each statement is expected to take, for
	// resource group selection: EXECUTION_TIME and CPU_TIME (durations
	// such as 10m), PEAK_MEMORY (a size such as 2GB); nil when none.
	ResourceEstimates map[string]string
	// AccessToken is a bearer token (a JWT), sent as "Authorization:
	// Bearer" to coordinators reached over https only (UsesTLS). String
	// redacts it.
	AccessToken string
	// TimeZone is the session time zone; empty means the client's own,
	// which the driver finds and sends.
	TimeZone string
	// SSLCert and SSLKey are files holding a client certificate and its key.
	SSLCert, SSLKey string
	// SSLCA is a file of CA certificates to trust.
	SSLCA string
	// SSLSkipVerify disables verification of the server certificate.
	SSLSkipVerify bool
	// SSL asks for https to the coordinators without any TLS file (the
	// system's CA certificates), as the Presto JDBC driver's SSL=true does.
	SSL bool
	// SessionProperties are the Presto session properties: every key that is
	// not one of the above, verbatim. nil when none.
	SessionProperties map[string]string
}

// NewConfig returns a Config holding the defaults and no hosts.
func NewConfig() *Config {
	return &Config{
		Namespace:      defaultNamespace,
		Strategy:       defaultStrategy,
		SessionTimeout: defaultSessionTimeout,
		ConnectTimeout: defaultConnectTimeout,
		Retries:        defaultRetries,

		DialTimeout:     defaultDialTimeout,
		DialRaceDelay:   defaultDialRaceDelay,
		WriteTimeout:    defaultWriteTimeout,
		ResponseTimeout: defaultResponseTimeout,
	}
}

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	clone := *c
	clone.Hosts = slices.Clone(c.Hosts)
	clone.ClientTags = slices.Clone(c.ClientTags)
	clone.Weights = maps.Clone(c.Weights)
	clone.StrategyOptions = maps.Clone(c.StrategyOptions)
	clone.SessionProperties = maps.Clone(c.SessionProperties)
	clone.Roles = maps.Clone(c.Roles)
	clone.ExtraCredentials = maps.Clone(c.ExtraCredentials)
	clone.ResourceEstimates = maps.Clone(c.ResourceEstimates)
	return &clone
}

// ZooKeeperPath returns the absolute path of the namespace znode; an empty
// Namespace means the default, /presto.
func (c *Config) ZooKeeperPath() string {
	if c.Namespace == "" {
		return "/" + defaultNamespace
	}
	return "/" + c.Namespace
}

// Ensemble returns Hosts joined with commas, for messages.
func (c *Config) Ensemble() string { return strings.Join(c.Hosts, ",") }
