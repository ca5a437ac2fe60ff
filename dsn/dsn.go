package dsn

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/suggest"
	"github.com/zkpresto/zkpresto/strategy"
)

// Defaults applied by NewConfig and ParseDSN.
const (
	dsnDefaultNamespace      = "presto"
	dsnDefaultStrategy       = "random"
	dsnDefaultSessionTimeout = 15 * time.Second
	dsnDefaultConnectTimeout = 10 * time.Second
	dsnDefaultRetries        = 3
	dsnMaxRetries            = 100
	dsnDefaultZooKeeperPort  = 2181
	dsnDefaultPrestoPort     = 8080
	// dsnMaxWeight keeps sums of weights far from overflow in strategies
	// that add them up.
	dsnMaxWeight = 1_000_000
	// dsnRedacted replaces the password in Config.String.
	dsnRedacted = "xxxxx"
)

// Default time limits of the coordinator transport.
const (
	// A lost SYN is sent again after 1 s and 3 s: 5 s allows two resends,
	// where Go's default dialer waits 30 s.
	dsnDefaultDialTimeout = 5 * time.Second
	// A healthy dial is one round trip (TCP), three with TLS, which Go's
	// transport completes before it hands over the connection: 500 ms
	// covers a TLS 1.3 dial over any terrestrial path (round trips stay
	// under about 250 ms even between antipodes) and is half the 1 s after
	// which Linux resends a lost SYN, so that a dial that lost its first
	// SYN, or a host that drops them, races another coordinator instead
	// of costing the statement a second or the whole dialTimeout.
	dsnDefaultDialRaceDelay = 500 * time.Millisecond
	// A request is a few kilobytes, which the kernel takes at once unless
	// the coordinator stopped reading.
	dsnDefaultWriteTimeout = 10 * time.Second
	// Presto answers a submission at once (queued) and long-polls a
	// nextUri for about a second: 30 s leaves room for a long GC pause.
	dsnDefaultResponseTimeout = 30 * time.Second
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
		Namespace:      dsnDefaultNamespace,
		Strategy:       dsnDefaultStrategy,
		SessionTimeout: dsnDefaultSessionTimeout,
		ConnectTimeout: dsnDefaultConnectTimeout,
		Retries:        dsnDefaultRetries,

		DialTimeout:     dsnDefaultDialTimeout,
		DialRaceDelay:   dsnDefaultDialRaceDelay,
		WriteTimeout:    dsnDefaultWriteTimeout,
		ResponseTimeout: dsnDefaultResponseTimeout,
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
		return "/" + dsnDefaultNamespace
	}
	return "/" + c.Namespace
}

// Ensemble returns Hosts joined with commas, for messages.
func (c *Config) Ensemble() string { return strings.Join(c.Hosts, ",") }

// dsnParam is one key=value pair, already percent-decoded.
type dsnParam struct {
	key, value string
	// inUserinfo marks the user and password given before the "@".
	inUserinfo bool
}

// label names where p was given, for messages.
func (p dsnParam) label() string {
	if p.inUserinfo {
		return p.key + " in the user info"
	}
	return fmt.Sprintf("key %q", p.key)
}

// errDSNAtAfterHosts is the error for an "@" where none may be. It usually
// means a user name or password holds an unencoded delimiter, so it must not
// quote any of the DSN.
var errDSNAtAfterHosts = errors.New(`unexpected "@" outside the user info: ` +
	`percent-encode "/" in a password, ";", "?" and "/" in a user name, and "@" in a catalog, schema or key`)

// errDSNAmbiguousAt is the error for an "@" that could end the user info or
// belong to a value. It quotes nothing: one reading makes part of the DSN a
// password.
var errDSNAmbiguousAt = errors.New(`ambiguous "@": the text before it reads both as ` +
	`user:password and as hosts followed by ";" or "?" parameters; percent-encode "@" as %40 in a value, ` +
	`or ";" and "?" in a password`)

// errDSNMaybePassword is the error for a DSN that fails while a part of it
// may be a password (see dsnMayHidePassword): it quotes nothing.
var errDSNMaybePassword = errors.New(`invalid DSN, not quoted because the text between the first ":" and the "@" ` +
	`may be a password: if the "@" is part of a value, percent-encode it as %40 to see which part is wrong`)

// errDSNFragment is the error for a "#" part, as Hive and Kyuubi URLs end
// with #hivevar:name=value: Presto has no such variables, and dropping the
// part would run statements without what it asked for.
var errDSNFragment = errors.New(`a "#" part (Hive variables, as in #hivevar:name=value) is not supported: ` +
	`Presto has no Hive variables; remove it, or percent-encode "#" as %23 in a value`)

// dsnSplitUserinfo finds the user info at the start of rest, the DSN after
// "://", by its "@" before anything else, so that no part of a password is
// ever read as a host or a parameter. The candidate is the last "@" before
// the first "/" (a password may hold "@", ":", ";", "?", "=" and "&", but
// not "/"). It ends the user info when the user name before it (up to the
// first ":") holds no ";" or "?" and the text after it, up to the next "/",
// ";", "?" or the end, holds no "=" or "&"; otherwise the "@" belongs to a
// parameter value, as in "presto://h?user=bob@corp" or
// "presto://h:8080?user=bob@corp&source=etl".
// When the user info holds ";" or "?" and the text before them is itself a
// valid host list, as in "presto://h:8080?user=bob@corp", both readings are
// valid and the DSN is refused rather than guessed.
func dsnSplitUserinfo(rest string) (userinfo, after string, ok bool, err error) {
	head := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		head = rest[:i]
	}
	at := strings.LastIndexByte(head, '@')
	if at < 0 {
		return "", rest, false, nil
	}
	userinfo, after = rest[:at], rest[at+1:]
	user, _, _ := strings.Cut(userinfo, ":")
	if strings.ContainsAny(user, ";?") || !dsnIsHostListText(after) {
		return "", rest, false, nil
	}
	if i := strings.IndexAny(userinfo, ";?"); i >= 0 {
		if _, err := dsnParseHostList(userinfo[:i], dsnDefaultPrestoPort); err == nil {
			return "", "", false, errDSNAmbiguousAt
		}
	}
	return userinfo, after, true, nil
}

// dsnMayHidePassword reports whether rest, the DSN after "://" read without
// a user info, could still be user:password@ by its shape: an "@" with a
// ":" before it, and no "/", ";" or "?" before that ":". The "@" was taken
// for part of a value (as in h:8080?user=bob@corp&x=1), or follows a "/"
// that a password may not hold unencoded, but the text between the ":"
// and the "@" may be a password, so no error may quote any of the DSN.
func dsnMayHidePassword(rest string) bool {
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return false
	}
	user, _, hasColon := strings.Cut(rest[:at], ":")
	return hasColon && !strings.ContainsAny(user, "/;?")
}

// dsnIsHostListText reports whether s, up to its first "/", ";" or "?", can
// be a host list rather than the rest of a parameter: it holds no "=" or "&".
func dsnIsHostListText(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '/', ';', '?':
			return true
		case '=', '&':
			return false
		}
	}
	return true
}

// ParseDSN parses a DSN (see Config for its form). It does no network I/O.
// Errors name the offending part of the DSN but never include the password.
func ParseDSN(dsn string) (*Config, error) {
	cfg, err := dsnParse(dsn)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: dsn: %w", err)
	}
	return cfg, nil
}

func dsnParse(dsn string) (_ *Config, err error) {
	rest := strings.TrimSpace(dsn)
	if len(rest) >= 5 && strings.EqualFold(rest[:5], "jdbc:") {
		rest = rest[5:]
	}
	scheme, rest, ok := strings.Cut(rest, "://")
	if !ok {
		return nil, errors.New(`missing "://": want presto:// or trino:// followed by hosts`)
	}
	cfg := NewConfig()
	switch strings.ToLower(scheme) {
	case "presto":
	case "trino":
		cfg.Trino = true
	default:
		if !dsnIsSchemeName(scheme) {
			// Do not quote it: it may be a mangled user:password@host.
			return nil, errors.New("malformed scheme: want presto or trino")
		}
		return nil, fmt.Errorf("unknown scheme %q: want presto or trino", scheme)
	}

	var params []dsnParam
	userinfo, rest, hasUserinfo, err := dsnSplitUserinfo(rest)
	if err != nil {
		return nil, err
	}
	if !hasUserinfo && dsnMayHidePassword(rest) {
		defer func() {
			if err != nil && !errors.Is(err, errDSNAtAfterHosts) && !errors.Is(err, errDSNFragment) {
				err = errDSNMaybePassword
			}
		}()
	}
	if hasUserinfo {
		rawUser, rawPassword, hasPassword := strings.Cut(userinfo, ":")
		user, err := dsnUnescape(rawUser)
		if err != nil {
			return nil, errors.New("bad percent-encoding in the user name")
		}
		params = append(params, dsnParam{key: dsnKeyUser, value: user, inUserinfo: true})
		if hasPassword {
			password, err := dsnUnescape(rawPassword)
			if err != nil {
				return nil, errors.New("bad percent-encoding in the password")
			}
			params = append(params, dsnParam{key: dsnKeyPassword, value: password, inUserinfo: true})
		}
	}

	if strings.Contains(rest, "#") {
		// Not quoted: it may follow a password in a value.
		return nil, errDSNFragment
	}

	// The host list ends at the first "/", ";" or "?"; then the path runs to
	// the first ";" or "?", and the ";" part to the first "?".
	var query, semi, path string
	afterHosts := ""
	if i := strings.IndexAny(rest, "/;?"); i >= 0 {
		afterHosts = rest[i:]
	}
	rest, query, _ = strings.Cut(rest, "?")
	rest, semi, _ = strings.Cut(rest, ";")
	hostList, path, hasPath := strings.Cut(rest, "/")
	if strings.Contains(hostList, "@") || strings.Contains(path, "@") {
		// Not quoted: the text before such an "@" may be a password.
		return nil, errDSNAtAfterHosts
	}

	if hasPath {
		if err := dsnParsePath(cfg, path); err != nil {
			return nil, err
		}
	}
	for _, part := range []struct {
		text, sep string
	}{{semi, ";"}, {query, "&"}} {
		for _, segment := range strings.Split(part.text, part.sep) {
			if segment == "" {
				continue // tolerate ";;", a trailing ";" and the like
			}
			if part.sep == "&" {
				if key := dsnSemicolonKeyIn(segment); key != "" {
					return nil, dsnSemicolonAfterQuery(key)
				}
			}
			p, err := dsnParseParam(segment)
			if err != nil {
				return nil, err
			}
			params = append(params, p)
		}
	}

	applier := dsnApplier{cfg: cfg, seen: make(map[string]dsnParam, len(params))}
	for _, param := range params {
		if err := applier.apply(param); err != nil {
			return nil, err
		}
	}

	// Files turn TLS on unless the DSN says it is off, which validate rejects.
	if _, explicit := applier.seen[dsnKeyZKSSL]; !explicit && cfg.zooKeeperSSLFiles() {
		cfg.ZooKeeperSSL = true
	}

	defaultPort := dsnDefaultPrestoPort
	if cfg.ZooKeeper {
		defaultPort = dsnDefaultZooKeeperPort
	}
	hosts, err := dsnParseHostList(hostList, defaultPort)
	if err != nil {
		if !hasUserinfo && strings.Contains(afterHosts, "@") {
			// The list may be user:password with a "/" in the password
			// ending it early, as in alice:pa/ss@host: quote none of it.
			return nil, errDSNAtAfterHosts
		}
		return nil, err
	}
	cfg.Hosts = hosts
	if err := cfg.Validate(); err != nil {
		return nil, applier.spell(err)
	}
	return cfg, nil
}

// dsnSemicolonKeyIn returns the DSN key that follows a ";" in the value of
// a "?"-part segment, as in Hive and Kyuubi URLs copied with their ";"
// keys after the "?" (?serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=x),
// where the key would silently become part of the value before it; "" when
// there is none. Only a key of the table counts: a password may hold ";".
func dsnSemicolonKeyIn(segment string) string {
	_, value, _ := strings.Cut(segment, "=")
	for {
		i := strings.IndexByte(value, ';')
		if i < 0 {
			return ""
		}
		value = value[i+1:]
		if name, _, ok := strings.Cut(value, "="); ok {
			if k := dsnLookupKey(name); k != nil {
				return k.name
			}
			if option, ok := strategy.LookupKey(name); ok {
				return option
			}
		}
	}
}

// dsnSemicolonAfterQuery is the error of a ";" key after the "?": it names
// the key (a name of the table, never a value) and says how to write it.
func dsnSemicolonAfterQuery(key string) error {
	return fmt.Errorf("%q follows a \";\" after the \"?\": the \";key=value\" keys go before the \"?\" "+
		"(presto://HOSTS/catalog;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto?user=alice), "+
		"and after it keys are separated by \"&\" (a \";\" that belongs to a value is written %%3B)", key)
}

// dsnIsSchemeName reports whether s is shaped like a URL scheme, so that an
// error may quote it.
func dsnIsSchemeName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// dsnParsePath sets Catalog and Schema from "catalog[/schema]".
func dsnParsePath(cfg *Config, path string) error {
	segments := strings.Split(path, "/")
	if len(segments) > 2 {
		return fmt.Errorf("path %q has too many segments: want /catalog/schema", "/"+path)
	}
	catalog, err := dsnUnescape(segments[0])
	if err != nil {
		return fmt.Errorf("bad percent-encoding in catalog %q", segments[0])
	}
	cfg.Catalog = catalog
	if len(segments) == 2 {
		schema, err := dsnUnescape(segments[1])
		if err != nil {
			return fmt.Errorf("bad percent-encoding in schema %q", segments[1])
		}
		cfg.Schema = schema
	}
	return nil
}

// dsnParseParam splits and decodes one key=value segment.
func dsnParseParam(segment string) (dsnParam, error) {
	rawKey, rawValue, hasValue := strings.Cut(segment, "=")
	if strings.Contains(rawKey, "@") {
		return dsnParam{}, errDSNAtAfterHosts
	}
	if !hasValue {
		return dsnParam{}, fmt.Errorf("parameter %q has no \"=\": want key=value", segment)
	}
	key, err := dsnUnescape(rawKey)
	if err != nil {
		return dsnParam{}, fmt.Errorf("bad percent-encoding in key %q", rawKey)
	}
	if key == "" {
		return dsnParam{}, errors.New(`a parameter has an empty key ("=..." with nothing before "=")`)
	}
	value, err := dsnUnescape(rawValue)
	if err != nil {
		// The value is not quoted: it may be a password.
		return dsnParam{}, fmt.Errorf("bad percent-encoding in the value of %q", key)
	}
	return dsnParam{key: key, value: value}, nil
}

// dsnApplier applies parameters to a Config, rejecting a key given twice
// with different values.
type dsnApplier struct {
	cfg *Config
	// seen maps a key's name (or "session:" and a session property's name)
	// to the first parameter that set it.
	seen map[string]dsnParam
}

func (a *dsnApplier) apply(p dsnParam) error {
	k := dsnLookupKey(p.key)
	// Prefixed so a session property can never share a slot with our keys.
	slot := "session:" + p.key
	optionKey, isOption := "", false
	switch {
	case k != nil:
		slot = k.name
	default:
		if optionKey, isOption = strategy.LookupKey(p.key); isOption {
			slot = optionKey
		}
	}
	if first, dup := a.seen[slot]; dup {
		if first.value == p.value {
			return nil
		}
		return dsnConflict(first, p)
	}
	a.seen[slot] = p

	if isOption {
		// The strategy's own key: Validate has the strategy parse it.
		if p.value == "" {
			return fmt.Errorf("empty value for %s", p.key)
		}
		if a.cfg.StrategyOptions == nil {
			a.cfg.StrategyOptions = make(map[string]string)
		}
		a.cfg.StrategyOptions[optionKey] = p.value
		return nil
	}
	if k == nil {
		if err := dsnCheckUnknownKey(p.key); err != nil {
			return err
		}
		if a.cfg.SessionProperties == nil {
			a.cfg.SessionProperties = make(map[string]string)
		}
		if old, dup := a.cfg.SessionProperties[p.key]; dup && old != p.value {
			// Set by sessionProperties=.
			return fmt.Errorf("session property %q given twice with different values", p.key)
		}
		a.cfg.SessionProperties[p.key] = p.value
		return nil
	}
	if k.kind == dsnOwn && p.value == "" {
		return fmt.Errorf("empty value for %s", p.key)
	}
	if err := k.parse(a.cfg, p.value); err != nil {
		if k.opaque {
			return fmt.Errorf("bad %s: %w", p.key, err)
		}
		if strings.ContainsRune(p.value, '=') {
			// What looks like another key and its value ran into this
			// one's (a "?" where a ";" was meant): it may be a password.
			return fmt.Errorf(`bad %s (its value, not shown, holds "="): %w`, p.key, err)
		}
		return fmt.Errorf("bad %s %q: %w", p.key, p.value, err)
	}
	return nil
}

// dsnCheckUnknownKey checks a key that is none of the table's, which the
// DSN would hand to Presto as a session property: it must be spelled as
// one can be, and not be a near miss of one of our keys, which would
// otherwise be ignored in silence.
func dsnCheckUnknownKey(key string) error {
	if dsnCheckHeaderText(key) != nil {
		return nil // validate refuses it, naming the character
	}
	if name := dsnSuggestKey(key); name != "" {
		return fmt.Errorf("unknown key %q: did you mean %s?", key, name)
	}
	if !dsnIsSessionPropertyName(key) {
		return fmt.Errorf("unknown key %q: not one of the driver's keys, and not a Presto session property name "+
			"(lower-case letters, digits and _, optionally catalog.property)", key)
	}
	return nil
}

// dsnSuggestKey returns the spelling of the table's key that key is a near
// miss of, or "" when there is none: the same but for case, or at most 2
// edits away ignoring case (1 for a spelling of up to 5 letters, so that
// short session property names such as "mode" are not taken for "zone").
func dsnSuggestKey(key string) string {
	lower := strings.ToLower(key)
	if len(lower) > dsnMaxSuggestLen {
		return ""
	}
	best, bestDistance := "", 3
	for _, sp := range dsnSpellings {
		limit := 2
		if len(sp.lower) <= 5 {
			limit = 1
		}
		if d := len(lower) - len(sp.lower); d > limit || -d > limit {
			continue
		}
		if d := suggest.Distance(lower, sp.lower); d <= limit && d < bestDistance {
			best, bestDistance = sp.spelling, d
		}
	}
	for _, k := range strategy.Keys() {
		limit := 2
		if len(k.Name) <= 5 {
			limit = 1
		}
		if d := suggest.Distance(lower, strings.ToLower(k.Name)); d <= limit && d < bestDistance {
			best, bestDistance = k.Name, d
		}
	}
	return best
}

// dsnMaxSuggestLen bounds the keys dsnSuggestKey compares: longer than
// any of ours by far.
const dsnMaxSuggestLen = 64

// dsnSpellings lists every spelling of the table's keys, with its
// lower-case form, for dsnSuggestKey.
var dsnSpellings = func() []struct{ spelling, lower string } {
	var out []struct{ spelling, lower string }
	for _, k := range dsnKeys {
		for _, spelling := range append([]string{k.name}, k.aliases...) {
			out = append(out, struct{ spelling, lower string }{spelling, strings.ToLower(spelling)})
		}
	}
	return out
}()

// dsnIsSessionPropertyName reports whether s can name a Presto session
// property: a lower-case identifier, optionally catalog.property, as
// [a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)? matches.
func dsnIsSessionPropertyName(s string) bool {
	catalog, property, dotted := strings.Cut(s, ".")
	ident := func(s string) bool {
		if s == "" || s[0] >= '0' && s[0] <= '9' {
			return false
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				return false
			}
		}
		return true
	}
	return ident(catalog) && (!dotted || ident(property))
}

// spell rewrites an error of (*Config).Validate in the DSN's terms: the key
// as the DSN spelled it and, when the error quotes the value, the value as
// the DSN gave it.
func (a *dsnApplier) spell(err error) error {
	var bad *configError
	if !errors.As(err, &bad) {
		return err
	}
	p, ok := a.seen[bad.key]
	if !ok {
		return err
	}
	spelled := *bad
	spelled.key = p.key
	if spelled.quoted {
		spelled.value = p.value
		if reason := bad.reason; reason != nil && strings.ContainsRune(p.value, '=') {
			// What looks like another key and its value ran into this
			// one's: it may be a password.
			spelled.quoted = false
			spelled.text = func(key, _ string) string {
				return fmt.Sprintf(`bad %s (its value, not shown, holds "="): %v`, key, reason)
			}
		}
	}
	return &spelled
}

// dsnConflict describes a key given twice with different values, quoting the
// values unless they may be secret.
func dsnConflict(first, second dsnParam) error {
	what := first.label() + " given twice with different values"
	if second.label() != first.label() {
		what = first.label() + " and " + second.label() + " have different values"
	}
	if dsnIsSecretKey(first.key) || dsnIsSecretKey(second.key) {
		return errors.New(what)
	}
	return fmt.Errorf("%s %q and %q", what, first.value, second.value)
}

// dsnIsSecretKey reports whether the value of key must not be shown: a
// secret key of the table, and any session property that looks like one.
func dsnIsSecretKey(key string) bool {
	if k := dsnLookupKey(key); k != nil && k.secret {
		return true
	}
	return strings.Contains(strings.ToLower(key), "password")
}

// dsnRedactZooKeeperAuth hides the secret part of ZooKeeper credentials:
// the password of digest credentials, everything after the scheme otherwise.
func dsnRedactZooKeeperAuth(scheme, auth string) string {
	if scheme == "digest" {
		if user, _, ok := strings.Cut(auth, ":"); ok {
			return user + ":" + dsnRedacted
		}
	}
	return dsnRedacted
}

// dsnParseHostList parses "host[:port],..." into host:port addresses.
func dsnParseHostList(list string, defaultPort int) ([]string, error) {
	if list == "" {
		return nil, errors.New("no hosts: want presto://host[:port][,host[:port]...]")
	}
	hosts := make([]string, 0, strings.Count(list, ",")+1)
	// A set, not a search of hosts: that made a list of n hosts take n²/2
	// comparisons, tens of seconds for 100,000.
	seen := make(map[string]bool, cap(hosts))
	for _, hp := range strings.Split(list, ",") {
		if hp == "" {
			return nil, fmt.Errorf("empty host in host list %q", list)
		}
		addr, err := dsnParseHostPort(hp, defaultPort)
		if err != nil {
			return nil, err
		}
		if seen[addr] {
			return nil, fmt.Errorf("host %q listed twice in host list %q", addr, list)
		}
		seen[addr] = true
		hosts = append(hosts, addr)
	}
	return hosts, nil
}

// dsnParseHostPort validates "host[:port]" or "[ipv6][:port]" and returns it
// as host:port in the form discovery.CanonicalAddr writes, the form in which
// discovery names nodes, with defaultPort when none is given (0: a port is
// required).
func dsnParseHostPort(hp string, defaultPort int) (string, error) {
	var host, port string
	hasPort := false
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", fmt.Errorf("missing \"]\" in host %q", hp)
		}
		host = hp[1:end]
		if after := hp[end+1:]; after != "" {
			if after[0] != ':' {
				return "", fmt.Errorf("unexpected %q after \"]\" in host %q", after, hp)
			}
			port, hasPort = after[1:], true
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || !addr.Is6() {
			return "", fmt.Errorf("bad IPv6 address %q in host %q", host, hp)
		}
		if addr.Zone() != "" {
			return "", fmt.Errorf("IPv6 zone in host %q is not supported", hp)
		}
	} else {
		if strings.Count(hp, ":") > 1 {
			return "", fmt.Errorf("IPv6 address in host %q must be in brackets, as in [::1]:8080", hp)
		}
		host, port, hasPort = strings.Cut(hp, ":")
		if host == "" {
			return "", fmt.Errorf("empty host name in host %q", hp)
		}
		for _, r := range host {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
				return "", fmt.Errorf("bad character %q in host %q", r, hp)
			}
		}
	}
	portNumber := defaultPort
	if !hasPort && defaultPort == 0 {
		return "", fmt.Errorf("missing port in host %q", hp)
	}
	if hasPort {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return "", fmt.Errorf("bad port %q in host %q", port, hp)
		}
		portNumber = int(n)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(portNumber))
	if canonical, err := discovery.CanonicalAddr(addr); err == nil {
		addr = canonical
	}
	return addr, nil
}

// dsnCheckNamespace checks a ZooKeeper path without leading or trailing
// slashes the way ZooKeeper checks paths, so a bad one fails here rather
// than on connect.
func dsnCheckNamespace(ns string) error {
	if !utf8.ValidString(ns) {
		return errors.New("not valid UTF-8")
	}
	for i, segment := range strings.Split(ns, "/") {
		switch segment {
		case "":
			return errors.New("empty path segment")
		case ".", "..":
			return fmt.Errorf("relative path segment %q", segment)
		}
		if i == 0 && segment == "zookeeper" {
			return errors.New(`"/zookeeper" is reserved by ZooKeeper`)
		}
		for _, r := range segment {
			if dsnZooKeeperForbids(r) {
				return fmt.Errorf("character %U not allowed in a ZooKeeper path", r)
			}
		}
	}
	return nil
}

// dsnZooKeeperForbids reports whether ZooKeeper rejects r in a path. Java
// strings hold runes above U+FFFF as surrogates, which ZooKeeper rejects.
func dsnZooKeeperForbids(r rune) bool {
	return r <= 0x1f ||
		r >= 0x7f && r <= 0x9f ||
		r >= 0xd800 && r <= 0xf8ff ||
		r >= 0xfff0
}

// dsnSetDuration sets *dst to v, a positive Go duration.
func dsnSetDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration such as \"10s\": %w", err)
	}
	if d <= 0 {
		// In a Config zero means the default; in a DSN it is a bad value.
		return errDSNNotPositive
	}
	*dst = d
	return nil
}

// errDSNNotPositive is the error for a duration that is zero or negative.
var errDSNNotPositive = errors.New("must be positive")

// How dsnSetBool matches the words true and false.
const (
	dsnBoolAnyCase   = true
	dsnBoolExactCase = false
)

// dsnSetBool sets *dst to v: true, false, 1 or 0, the words in any case when
// anyCase is set.
func dsnSetBool(dst *bool, v string, anyCase bool) error {
	if anyCase {
		v = strings.ToLower(v)
	}
	switch v {
	case "true", "1":
		*dst = true
	case "false", "0":
		*dst = false
	default:
		return errors.New("want true, false, 1 or 0")
	}
	return nil
}

// dsnParseWeights parses "host[:port]=weight,...". It returns what it has
// read so far with an error, so that the caller may keep it or not.
// (*Config).Validate checks the range of the weights.
func dsnParseWeights(v string) (map[string]int, error) {
	weights := make(map[string]int)
	for _, entry := range strings.Split(v, ",") {
		if entry == "" {
			return nil, fmt.Errorf("empty entry in %q", v)
		}
		i := strings.LastIndexByte(entry, '=')
		if i < 0 {
			return nil, fmt.Errorf("entry %q: want host:port=weight", entry)
		}
		addr, err := dsnParseHostPort(entry[:i], dsnDefaultPrestoPort)
		if err != nil {
			return nil, err
		}
		weight, err := strconv.Atoi(entry[i+1:])
		if err != nil {
			return nil, dsnBadWeight(entry[i+1:], addr)
		}
		if _, dup := weights[addr]; dup {
			return nil, fmt.Errorf("%q listed twice", addr)
		}
		weights[addr] = weight
	}
	return weights, nil
}

// dsnBadWeight is the error for a weight that is not a whole number in range.
func dsnBadWeight(weight, addr string) error {
	return fmt.Errorf("bad weight %q for %q: want an integer from 1 to %d", weight, addr, dsnMaxWeight)
}

// dsnParseTags splits a comma list, dropping blanks; nil when empty.
func dsnParseTags(v string) []string {
	var tags []string
	for _, tag := range strings.Split(v, ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			tags = append(tags, tag)
		}
	}
	return tags
}

// dsnUnescape decodes %XX escapes. Unlike url.QueryUnescape it leaves "+"
// alone, so a password may hold one unencoded.
func dsnUnescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", errors.New("truncated escape")
		}
		hi, okHi := dsnUnhex(s[i+1])
		lo, okLo := dsnUnhex(s[i+2])
		if !okHi || !okLo {
			return "", errors.New("bad escape")
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), nil
}

func dsnUnhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Bytes left unescaped by FormatDSN besides letters, digits and "-._~",
// chosen so that the result reads naturally and parses back the same.
const (
	dsnSafeInPath = ":,=!$'()*"
	dsnSafeInKey  = ":,/[]!$'()*"
	// "@" is left out: written raw in a value, it could read as the end
	// of the user info.
	dsnSafeInValue = ":,/=[]!$'()*"
)

// dsnEscape percent-encodes every byte of s outside the unreserved set and safe.
func dsnEscape(s, safe string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || strings.IndexByte(safe, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// FormatDSN returns c in canonical DSN form:
//
//	presto://h1:p1,h2:p2/catalog/schema;zooKeeperKey=value...?key=value&...
//
// Only values that differ from the defaults are written, ZooKeeper keys in
// the ";" part and Presto client keys and session properties in the "?" part,
// each part sorted by key, values percent-encoded. For every Config returned
// by ParseDSN, ParseDSN(c.FormatDSN()) returns a Config equal to c. The result
// holds the password; use String for logs.
func (c *Config) FormatDSN() string { return c.dsnFormat(false) }

// String returns FormatDSN with the password, and any session property whose
// name contains "password", replaced by "xxxxx", so it is safe to log.
func (c *Config) String() string { return c.dsnFormat(true) }

func (c *Config) dsnFormat(redact bool) string {
	var b strings.Builder
	if c.Trino {
		b.WriteString("trino://")
	} else {
		b.WriteString("presto://")
	}
	b.WriteString(strings.Join(c.Hosts, ","))
	if c.Catalog != "" || c.Schema != "" {
		b.WriteByte('/')
		b.WriteString(dsnEscape(c.Catalog, dsnSafeInPath))
		if c.Schema != "" {
			b.WriteByte('/')
			b.WriteString(dsnEscape(c.Schema, dsnSafeInPath))
		}
	}

	// Zero values count as defaults too, so a hand-built Config formats well.
	var own, client []dsnParam
	for _, k := range dsnKeys {
		value, ok := k.format(c)
		if !ok {
			continue
		}
		if redact && k.redact != nil {
			value = k.redact(value)
		}
		p := dsnParam{key: k.name, value: value}
		if k.kind == dsnOwn {
			own = append(own, p)
		} else {
			client = append(client, p)
		}
	}
	for key, value := range c.StrategyOptions {
		own = append(own, dsnParam{key: key, value: value})
	}
	for key, value := range c.SessionProperties {
		if redact && dsnIsSecretKey(key) {
			value = dsnRedacted
		}
		client = append(client, dsnParam{key: key, value: value})
	}
	dsnWriteParams(&b, ";", ";", own)
	dsnWriteParams(&b, "?", "&", client)
	return b.String()
}

// dsnWriteParams writes params sorted by key, the first after lead and the
// rest after sep.
func dsnWriteParams(b *strings.Builder, lead, sep string, params []dsnParam) {
	slices.SortFunc(params, func(x, y dsnParam) int { return strings.Compare(x.key, y.key) })
	for i, p := range params {
		if i == 0 {
			b.WriteString(lead)
		} else {
			b.WriteString(sep)
		}
		b.WriteString(dsnEscape(p.key, dsnSafeInKey))
		b.WriteByte('=')
		b.WriteString(dsnEscape(p.value, dsnSafeInValue))
	}
}
