package dsn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zkpresto/zkpresto/internal/suggest"
	"github.com/zkpresto/zkpresto/strategy"
)

// param is one key=value pair, already percent-decoded.
type param struct {
	key, value string
	// inUserinfo marks the user and password given before the "@".
	inUserinfo bool
}

// label names where p was given, for messages.
func (p param) label() string {
	if p.inUserinfo {
		return p.key + " in the user info"
	}
	return fmt.Sprintf("key %q", p.key)
}

// errAtAfterHosts is the error for an "@" where none may be. It usually
// means a user name or password holds an unencoded delimiter, so it must not
// quote any of the DSN.
var errAtAfterHosts = errors.New(`unexpected "@" outside the user info: ` +
	`percent-encode "/" in a password, ";", "?" and "/" in a user name, and "@" in a catalog, schema or key`)

// errAmbiguousAt is the error for an "@" that could end the user info or
// belong to a value. It quotes nothing: one reading makes part of the DSN a
// password.
var errAmbiguousAt = errors.New(`ambiguous "@": the text before it reads both as ` +
	`user:password and as hosts followed by ";" or "?" parameters; percent-encode "@" as %40 in a value, ` +
	`or ";" and "?" in a password`)

// errMaybePassword is the error for a DSN that fails while a part of it
// may be a password (see mayHidePassword): it quotes nothing.
var errMaybePassword = errors.New(`invalid DSN, not quoted because the text between the first ":" and the "@" ` +
	`may be a password: if the "@" is part of a value, percent-encode it as %40 to see which part is wrong`)

// errFragment is the error for a "#" part, as Hive and Kyuubi URLs end
// with #hivevar:name=value: Presto has no such variables, and dropping the
// part would run statements without what it asked for.
var errFragment = errors.New(`a "#" part (Hive variables, as in #hivevar:name=value) is not supported: ` +
	`Presto has no Hive variables; remove it, or percent-encode "#" as %23 in a value`)

// splitUserinfo finds the user info at the start of rest, the DSN after
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
func splitUserinfo(rest string) (userinfo, after string, ok bool, err error) {
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
	if strings.ContainsAny(user, ";?") || !isHostListText(after) {
		return "", rest, false, nil
	}
	if i := strings.IndexAny(userinfo, ";?"); i >= 0 {
		if _, err := parseHostList(userinfo[:i], defaultPrestoPort); err == nil {
			return "", "", false, errAmbiguousAt
		}
	}
	return userinfo, after, true, nil
}

// mayHidePassword reports whether rest, the DSN after "://" read without
// a user info, could still be user:password@ by its shape: an "@" with a
// ":" before it, and no "/", ";" or "?" before that ":". The "@" was taken
// for part of a value (as in h:8080?user=bob@corp&x=1), or follows a "/"
// that a password may not hold unencoded, but the text between the ":"
// and the "@" may be a password, so no error may quote any of the DSN.
func mayHidePassword(rest string) bool {
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return false
	}
	user, _, hasColon := strings.Cut(rest[:at], ":")
	return hasColon && !strings.ContainsAny(user, "/;?")
}

// isHostListText reports whether s, up to its first "/", ";" or "?", can
// be a host list rather than the rest of a parameter: it holds no "=" or "&".
func isHostListText(s string) bool {
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
	cfg, err := parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("dsn: %w", err)
	}
	return cfg, nil
}

func parse(dsn string) (_ *Config, err error) {
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
		if !isSchemeName(scheme) {
			// Do not quote it: it may be a mangled user:password@host.
			return nil, errors.New("malformed scheme: want presto or trino")
		}
		return nil, fmt.Errorf("unknown scheme %q: want presto or trino", scheme)
	}

	var params []param
	userinfo, rest, hasUserinfo, err := splitUserinfo(rest)
	if err != nil {
		return nil, err
	}
	if !hasUserinfo && mayHidePassword(rest) {
		defer func() {
			if err != nil && !errors.Is(err, errAtAfterHosts) && !errors.Is(err, errFragment) {
				err = errMaybePassword
			}
		}()
	}
	if hasUserinfo {
		rawUser, rawPassword, hasPassword := strings.Cut(userinfo, ":")
		user, err := unescape(rawUser)
		if err != nil {
			return nil, errors.New("bad percent-encoding in the user name")
		}
		params = append(params, param{key: keyUser, value: user, inUserinfo: true})
		if hasPassword {
			password, err := unescape(rawPassword)
			if err != nil {
				return nil, errors.New("bad percent-encoding in the password")
			}
			params = append(params, param{key: keyPassword, value: password, inUserinfo: true})
		}
	}

	if strings.Contains(rest, "#") {
		// Not quoted: it may follow a password in a value.
		return nil, errFragment
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
		return nil, errAtAfterHosts
	}

	if hasPath {
		if err := parsePath(cfg, path); err != nil {
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
				if key := semicolonKeyIn(segment); key != "" {
					return nil, semicolonAfterQuery(key)
				}
			}
			p, err := parseParam(segment)
			if err != nil {
				return nil, err
			}
			params = append(params, p)
		}
	}

	applier := paramApplier{cfg: cfg, seen: make(map[string]param, len(params))}
	for _, param := range params {
		if err := applier.apply(param); err != nil {
			return nil, err
		}
	}

	// Files turn TLS on unless the DSN says it is off, which validate rejects.
	if _, explicit := applier.seen[keyZKSSL]; !explicit && cfg.zooKeeperSSLFiles() {
		cfg.ZooKeeperSSL = true
	}

	defaultPort := defaultPrestoPort
	if cfg.ZooKeeper {
		defaultPort = defaultZooKeeperPort
	}
	hosts, err := parseHostList(hostList, defaultPort)
	if err != nil {
		if !hasUserinfo && strings.Contains(afterHosts, "@") {
			// The list may be user:password with a "/" in the password
			// ending it early, as in alice:pa/ss@host: quote none of it.
			return nil, errAtAfterHosts
		}
		return nil, err
	}
	cfg.Hosts = hosts
	if err := cfg.Validate(); err != nil {
		return nil, applier.spell(err)
	}
	return cfg, nil
}

// semicolonKeyIn returns the DSN key that follows a ";" in the value of
// a "?"-part segment, as in Hive and Kyuubi URLs copied with their ";"
// keys after the "?" (?serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=x),
// where the key would silently become part of the value before it; "" when
// there is none. Only a key of the table counts: a password may hold ";".
func semicolonKeyIn(segment string) string {
	_, value, _ := strings.Cut(segment, "=")
	for {
		i := strings.IndexByte(value, ';')
		if i < 0 {
			return ""
		}
		value = value[i+1:]
		if name, _, ok := strings.Cut(value, "="); ok {
			if k := lookupKey(name); k != nil {
				return k.name
			}
			if option, ok := strategy.LookupKey(name); ok {
				return option
			}
		}
	}
}

// semicolonAfterQuery is the error of a ";" key after the "?": it names
// the key (a name of the table, never a value) and says how to write it.
func semicolonAfterQuery(key string) error {
	return fmt.Errorf("%q follows a \";\" after the \"?\": the \";key=value\" keys go before the \"?\" "+
		"(presto://HOSTS/catalog;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto?user=alice), "+
		"and after it keys are separated by \"&\" (a \";\" that belongs to a value is written %%3B)", key)
}

// isSchemeName reports whether s is shaped like a URL scheme, so that an
// error may quote it.
func isSchemeName(s string) bool {
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

// parsePath sets Catalog and Schema from "catalog[/schema]".
func parsePath(cfg *Config, path string) error {
	segments := strings.Split(path, "/")
	if len(segments) > 2 {
		return fmt.Errorf("path %q has too many segments: want /catalog/schema", "/"+path)
	}
	catalog, err := unescape(segments[0])
	if err != nil {
		return fmt.Errorf("bad percent-encoding in catalog %q", segments[0])
	}
	cfg.Catalog = catalog
	if len(segments) == 2 {
		schema, err := unescape(segments[1])
		if err != nil {
			return fmt.Errorf("bad percent-encoding in schema %q", segments[1])
		}
		cfg.Schema = schema
	}
	return nil
}

// parseParam splits and decodes one key=value segment.
func parseParam(segment string) (param, error) {
	rawKey, rawValue, hasValue := strings.Cut(segment, "=")
	if strings.Contains(rawKey, "@") {
		return param{}, errAtAfterHosts
	}
	if !hasValue {
		return param{}, fmt.Errorf("parameter %q has no \"=\": want key=value", segment)
	}
	key, err := unescape(rawKey)
	if err != nil {
		return param{}, fmt.Errorf("bad percent-encoding in key %q", rawKey)
	}
	if key == "" {
		return param{}, errors.New(`a parameter has an empty key ("=..." with nothing before "=")`)
	}
	value, err := unescape(rawValue)
	if err != nil {
		// The value is not quoted: it may be a password.
		return param{}, fmt.Errorf("bad percent-encoding in the value of %q", key)
	}
	return param{key: key, value: value}, nil
}

// paramApplier applies parameters to a Config, rejecting a key given twice
// with different values.
type paramApplier struct {
	cfg *Config
	// seen maps a key's name (or "session:" and a session property's name)
	// to the first parameter that set it.
	seen map[string]param
}

func (a *paramApplier) apply(p param) error {
	k := lookupKey(p.key)
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
		return conflict(first, p)
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
		if err := checkUnknownKey(p.key); err != nil {
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
	if k.kind == kindOwn && p.value == "" {
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

// checkUnknownKey checks a key that is none of the table's, which the
// DSN would hand to Presto as a session property: it must be spelled as
// one can be, and not be a near miss of one of our keys, which would
// otherwise be ignored in silence.
func checkUnknownKey(key string) error {
	if checkHeaderText(key) != nil {
		return nil // validate refuses it, naming the character
	}
	if name := suggestKey(key); name != "" {
		return fmt.Errorf("unknown key %q: did you mean %s?", key, name)
	}
	if !isSessionPropertyName(key) {
		return fmt.Errorf("unknown key %q: not one of the driver's keys, and not a Presto session property name "+
			"(lower-case letters, digits and _, optionally catalog.property)", key)
	}
	return nil
}

// suggestKey returns the spelling of the table's key that key is a near
// miss of, or "" when there is none: the same but for case, or at most 2
// edits away ignoring case (1 for a spelling of up to 5 letters, so that
// short session property names such as "mode" are not taken for "zone").
func suggestKey(key string) string {
	lower := strings.ToLower(key)
	if len(lower) > maxSuggestLen {
		return ""
	}
	best, bestDistance := "", 3
	for _, sp := range spellings {
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

// maxSuggestLen bounds the keys suggestKey compares: longer than
// any of ours by far.
const maxSuggestLen = 64

// spellings lists every spelling of the table's keys, with its
// lower-case form, for suggestKey.
var spellings = func() []struct{ spelling, lower string } {
	var out []struct{ spelling, lower string }
	for _, k := range keyTable {
		for _, spelling := range append([]string{k.name}, k.aliases...) {
			out = append(out, struct{ spelling, lower string }{spelling, strings.ToLower(spelling)})
		}
	}
	return out
}()

// isSessionPropertyName reports whether s can name a Presto session
// property: a lower-case identifier, optionally catalog.property, as
// [a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)? matches.
func isSessionPropertyName(s string) bool {
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
func (a *paramApplier) spell(err error) error {
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

// conflict describes a key given twice with different values, quoting the
// values unless they may be secret.
func conflict(first, second param) error {
	what := first.label() + " given twice with different values"
	if second.label() != first.label() {
		what = first.label() + " and " + second.label() + " have different values"
	}
	if isSecretKey(first.key) || isSecretKey(second.key) {
		return errors.New(what)
	}
	return fmt.Errorf("%s %q and %q", what, first.value, second.value)
}
