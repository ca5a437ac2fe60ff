package driver

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Session is a connection's Presto session as the client keeps it: what
// the DSN set, changed by the statements the connection ran (USE, SET
// SESSION, SET PATH, SET ROLE, PREPARE, SET SESSION AUTHORIZATION...). A
// coordinator answers such a statement with headers that say what changed
// (X-Presto-Set-Schema and the like), and the client sends the session
// with every later statement, so the session lives in the connection, not
// on a coordinator: the next statement sees it whatever coordinator it is
// picked for, as with presto-cli, JDBC and trino-go-client.
type Session struct {
	// Catalog and Schema are the current catalog and schema ("" when none).
	Catalog, Schema string
	// Path is the SQL path SET PATH set ("" when none).
	Path string
	// Properties are the session properties, by name (decoded values).
	Properties map[string]string
	// Roles are the roles SET ROLE enabled, by catalog ("system" for
	// system roles), as the coordinator spelled them (ROLE{admin}, ALL, NONE).
	Roles map[string]string
	// PreparedStatements are the statements PREPARE added, by name.
	PreparedStatements map[string]string
	// AuthorizationUser is the user SET SESSION AUTHORIZATION switched to
	// ("" when none); statements then run as that user.
	AuthorizationUser string
}

// clientSession is one connection's Session with what keeps it in step:
// the changes coordinators answer are applied to it, every statement
// submitted carries it, and ResetSession returns it to the DSN's.
//
// The wire format is Presto's and Trino's, read from the server side
// (presto-main's server/protocol/QueryResourceUtil.java and
// trino-main's server/protocol/QueryResultsResponse.java write the
// response headers) and the client side (StatementClientV1.java of
// presto-client and trino-client, which apply them and send them back).
type clientSession struct {
	trino bool   // request headers are spelled X-Trino-
	user  string // the DSN's user, which Set-Authorization-User replaces

	mu   sync.Mutex
	base Session // the DSN's session; read-only
	cur  Session
	// preAuthorizationRoles are the roles before SET SESSION AUTHORIZATION
	// dropped them, for RESET SESSION AUTHORIZATION.
	preAuthorizationRoles map[string]string
	// originalRoles are the Set-Original-Roles values sent back as
	// Original-Roles while an authorization user is set.
	originalRoles []string
	// changed is set for good by the first change a coordinator answers,
	// or from the start by the DSN's roles: from then on the Presto
	// client's own idea of the session (which follows SET SESSION only, is
	// never reset and has no roles) differs from this one, and every
	// submission carries this one instead.
	changed bool
}

// newClientSession returns the session cfg describes. The DSN's roles are
// held as a coordinator's Set-Role spells them (ROLE{name}, ALL, NONE), and
// since the Presto client sends none, every submission carries this
// session from the start when there are any.
func newClientSession(cfg *Config) *clientSession {
	base := Session{Catalog: cfg.Catalog, Schema: cfg.Schema, Properties: maps.Clone(cfg.SessionProperties)}
	for catalog, role := range cfg.Roles {
		base.Roles = put(base.Roles, catalog, selectedRole(role))
	}
	return &clientSession{trino: cfg.Trino, user: cfg.User, base: base, cur: base.clone(), changed: len(base.Roles) > 0}
}

// selectedRole is a DSN role as the servers read a selected role
// (SelectedRole.valueOf in Trino and PrestoDB, ClientSelectedRole in their
// clients): ALL and NONE (any case, as the Trino JDBC driver reads its
// roles key) as they are, any other name as ROLE{name}.
func selectedRole(role string) string {
	switch {
	case strings.EqualFold(role, "ALL"):
		return "ALL"
	case strings.EqualFold(role, "NONE"):
		return "NONE"
	}
	return "ROLE{" + role + "}"
}

// clone returns a deep copy of s.
func (s Session) clone() Session {
	s.Properties = maps.Clone(s.Properties)
	s.Roles = maps.Clone(s.Roles)
	s.PreparedStatements = maps.Clone(s.PreparedStatements)
	return s
}

// snapshot returns a copy of the current session.
func (cs *clientSession) snapshot() Session {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.cur.clone()
}

// reset returns the session to the DSN's.
func (cs *clientSession) reset() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.cur = cs.base.clone()
	cs.preAuthorizationRoles, cs.originalRoles = nil, nil
}

// headerName returns a session header's name in both spellings' suffix:
// "Set-Schema" for X-Presto-Set-Schema and X-Trino-Set-Schema, "" for any
// other header.
func headerName(key string) string {
	if rest, ok := strings.CutPrefix(key, "X-Presto-"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(key, "X-Trino-"); ok {
		return rest
	}
	return ""
}

// apply takes in the session changes of one coordinator answer, in either
// spelling. Answers repeat their changes on later pages; applying one
// twice changes nothing more.
func (cs *clientSession) apply(h http.Header) {
	var found bool
	for key := range h {
		if key == "" || key[0] != 'X' {
			continue
		}
		switch headerName(key) {
		case "Set-Catalog", "Set-Schema", "Set-Path", "Set-Session", "Clear-Session", "Set-Role",
			"Added-Prepare", "Deallocated-Prepare", "Set-Authorization-User", "Reset-Authorization-User":
			found = true
		}
	}
	if !found {
		return // the common answer: one pass over its keys, no lock
	}
	values := func(name string) []string {
		return append(h.Values("X-Presto-"+name), h.Values("X-Trino-"+name)...)
	}
	last := func(name string) (string, bool) {
		v := values(name)
		if len(v) == 0 {
			return "", false
		}
		return v[len(v)-1], true
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.changed = true
	s := &cs.cur
	if v, ok := last("Set-Catalog"); ok {
		s.Catalog = v
	}
	if v, ok := last("Set-Schema"); ok {
		s.Schema = v
	}
	if v, ok := last("Set-Path"); ok {
		s.Path = v
	}
	for _, entry := range values("Set-Session") {
		name, value, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			continue // malformed; the coordinator's fault, not a reason to fail the statement
		}
		if decoded, err := url.QueryUnescape(value); err == nil {
			value = decoded
		}
		s.Properties = put(s.Properties, name, value)
	}
	for _, name := range values("Clear-Session") {
		delete(s.Properties, strings.TrimSpace(name))
	}
	for _, entry := range values("Added-Prepare") {
		name, text, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			continue
		}
		s.PreparedStatements = put(s.PreparedStatements, unescape(name), unescape(text))
	}
	for _, name := range values("Deallocated-Prepare") {
		delete(s.PreparedStatements, unescape(strings.TrimSpace(name)))
	}
	for _, entry := range values("Set-Role") {
		catalog, role, ok := strings.Cut(entry, "=")
		if !ok || catalog == "" {
			continue
		}
		s.Roles = put(s.Roles, unescape(catalog), unescape(role))
	}
	if user, ok := last("Set-Authorization-User"); ok && user != "" {
		// Roles belong to an identity: the new user starts with none
		// (trino-client's StatementClientV1 drops them the same way).
		if s.AuthorizationUser == "" {
			cs.preAuthorizationRoles = s.Roles
		}
		s.AuthorizationUser, s.Roles = user, nil
		cs.originalRoles = values("Set-Original-Roles")
	}
	if _, ok := last("Reset-Authorization-User"); ok && s.AuthorizationUser != "" {
		s.AuthorizationUser, s.Roles = "", cs.preAuthorizationRoles
		cs.preAuthorizationRoles, cs.originalRoles = nil, nil
	}
}

// put sets m[k] = v, making m when nil.
func put(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = make(map[string]string)
	}
	m[k] = v
	return m
}

// unescape is url.QueryUnescape, or s itself when it is not escaped right.
func unescape(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// headers returns the submission's headers carrying the session, or h
// itself while no coordinator changed the session (the Presto client
// already sends the DSN's). h is never modified: a RoundTripper must not
// change its request.
func (cs *clientSession) headers(h http.Header) http.Header {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.changed {
		return h
	}
	out := h.Clone()
	prefix := "X-Presto-"
	if cs.trino {
		prefix = "X-Trino-"
	}
	s := &cs.cur
	set := func(name, value string) {
		// Whatever the Presto client wrote, in either spelling, gives way.
		out.Del("X-Presto-" + name)
		out.Del("X-Trino-" + name)
		if value != "" {
			out.Set(prefix+name, value)
		}
	}
	set("Catalog", s.Catalog)
	set("Schema", s.Schema)
	set("Path", s.Path)
	set("Session", joinEscaped(s.Properties, false))
	set("Role", joinEscaped(s.Roles, false))
	set("Prepared-Statement", joinEscaped(s.PreparedStatements, true))
	set("Original-Roles", "")
	if s.AuthorizationUser != "" {
		set("User", s.AuthorizationUser)
		set("Original-User", cs.user)
		for _, r := range cs.originalRoles {
			out.Add(prefix+"Original-Roles", r)
		}
	} else {
		set("Original-User", "")
		if cs.user != "" {
			set("User", cs.user)
		}
	}
	return out
}

// joinEscaped renders m as the headers Session, Role and
// Prepared-Statement carry it: name=value pairs in name order, joined by
// commas, with the values (and with escapeNames the names too) URL-encoded,
// as StatementClientV1 writes them.
func joinEscaped(m map[string]string, escapeNames bool) string {
	if len(m) == 0 {
		return ""
	}
	names := slices.Collect(maps.Keys(m))
	sort.Strings(names)
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		if escapeNames {
			b.WriteString(url.QueryEscape(name))
		} else {
			b.WriteString(name)
		}
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(m[name]))
	}
	return b.String()
}

// Session returns the connection's current session: the DSN's, changed by
// the statements the connection ran since it was opened or last reset.
// database/sql resets a connection when it goes back to the pool; use
// db.Conn to run statements that share a session.
func (c *Conn) Session() Session {
	if c.clientSession == nil {
		return Session{}
	}
	return c.clientSession.snapshot()
}

// resetClientSession returns the connection's session to the DSN's.
func (c *Conn) resetClientSession() {
	if c.clientSession != nil {
		c.clientSession.reset()
	}
}
