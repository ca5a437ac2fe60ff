package dsn

import (
	"slices"
	"strings"
)

// isSecretKey reports whether the value of key must not be shown: a
// secret key of the table, and any session property that looks like one.
func isSecretKey(key string) bool {
	if k := lookupKey(key); k != nil && k.secret {
		return true
	}
	return strings.Contains(strings.ToLower(key), "password")
}

// redactZooKeeperAuth hides the secret part of ZooKeeper credentials:
// the password of digest credentials, everything after the scheme otherwise.
func redactZooKeeperAuth(scheme, auth string) string {
	if scheme == "digest" {
		if user, _, ok := strings.Cut(auth, ":"); ok {
			return user + ":" + redacted
		}
	}
	return redacted
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
func (c *Config) FormatDSN() string { return c.format(false) }

// String returns FormatDSN with the password, and any session property whose
// name contains "password", replaced by "xxxxx", so it is safe to log.
func (c *Config) String() string { return c.format(true) }

func (c *Config) format(redact bool) string {
	var b strings.Builder
	if c.Trino {
		b.WriteString("trino://")
	} else {
		b.WriteString("presto://")
	}
	b.WriteString(strings.Join(c.Hosts, ","))
	if c.Catalog != "" || c.Schema != "" {
		b.WriteByte('/')
		b.WriteString(escape(c.Catalog, safeInPath))
		if c.Schema != "" {
			b.WriteByte('/')
			b.WriteString(escape(c.Schema, safeInPath))
		}
	}

	// Zero values count as defaults too, so a hand-built Config formats well.
	var own, client []param
	for _, k := range keyTable {
		value, ok := k.format(c)
		if !ok {
			continue
		}
		if redact && k.redact != nil {
			value = k.redact(value)
		}
		p := param{key: k.name, value: value}
		if k.kind == kindOwn {
			own = append(own, p)
		} else {
			client = append(client, p)
		}
	}
	for key, value := range c.StrategyOptions {
		own = append(own, param{key: key, value: value})
	}
	for key, value := range c.SessionProperties {
		if redact && isSecretKey(key) {
			value = redacted
		}
		client = append(client, param{key: key, value: value})
	}
	writeParams(&b, ";", ";", own)
	writeParams(&b, "?", "&", client)
	return b.String()
}

// writeParams writes params sorted by key, the first after lead and the
// rest after sep.
func writeParams(b *strings.Builder, lead, sep string, params []param) {
	slices.SortFunc(params, func(x, y param) int { return strings.Compare(x.key, y.key) })
	for i, p := range params {
		if i == 0 {
			b.WriteString(lead)
		} else {
			b.WriteString(sep)
		}
		b.WriteString(escape(p.key, safeInKey))
		b.WriteByte('=')
		b.WriteString(escape(p.value, safeInValue))
	}
}
