package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/dsn"
	"github.com/zkpresto/zkpresto/internal/suggest"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// RouterConfig is Presto Router's router-config.json (the presto-router
// module's RouterSpec), read as it is, plus an optional weight, scheduler
// and flavour per group.
type RouterConfig struct {
	// Groups are the coordinator groups.
	Groups []GroupSpec `json:"groups"`
	// Selectors send statements to groups; the first that matches wins.
	Selectors []SelectorSpec `json:"selectors"`
	// Scheduler picks a coordinator inside a group: RANDOM_CHOICE,
	// ROUND_ROBIN, USER_HASH, WEIGHTED_RANDOM_CHOICE,
	// WEIGHTED_ROUND_ROBIN or (ours) CONSISTENT_HASH; empty means
	// RANDOM_CHOICE.
	Scheduler string `json:"scheduler"`
	// RoutingGroupHeader, an extension of ours, says whose requests may
	// name their group with X-Trino-Routing-Group or
	// X-Presto-Routing-Group; nil means no one's.
	RoutingGroupHeader *HeaderRoutingSpec `json:"routingGroupHeader"`
	// RoutingKeyHeader, an extension of ours, names the header whose value
	// consistent_hash hashes instead of the user; empty means
	// DefaultRoutingKeyHeader.
	RoutingKeyHeader string `json:"routingKeyHeader"`
	// ExternalRouting, an extension of ours, is an HTTP hook asked for a
	// statement's group before the selectors; nil means none.
	ExternalRouting *ExternalRoutingSpec `json:"externalRouting"`
}

// HeaderRoutingSpec says whose requests may name their routing group: those
// whose user, or whose source, matches.
type HeaderRoutingSpec struct {
	// User is a regular expression the whole user name must match.
	User *string `json:"user"`
	// Source is a regular expression the whole client source must match.
	Source *string `json:"source"`
}

// GroupSpec is one group of a RouterConfig.
type GroupSpec struct {
	// Name is what selectors target.
	Name string `json:"name"`
	// Members are coordinator base URLs (http[s]://host:port), or exactly
	// one ZooKeeper namespace, zk://host:port[,host:port...]/namespace, or
	// exactly one zkpresto DSN (presto:// or trino://, as zkpresto gateway
	// --dsn takes it: discovery, ZooKeeper auth and TLS, strategy, health,
	// TLS to the coordinators).
	Members []string `json:"members"`
	// Scheduler, an extension of ours, is the group's own scheduler (one
	// of RouterConfig.Scheduler's names); empty means the config's.
	Scheduler string `json:"scheduler"`
	// Flavour, an extension of ours, is the header flavour the group's
	// coordinators speak, "presto" or "trino": clients of the other
	// flavour have their session headers translated. Empty translates
	// nothing.
	Flavour Flavour `json:"flavour"`
	// Weights, when set, are the members' weights, in order.
	Weights []int `json:"weights"`
	// Weight is the group's share of the statements no selector claims
	// (not in Presto Router); nil means 1, 0 means selectors only.
	Weight *int `json:"weight"`
}

// SelectorSpec is one selector of a RouterConfig.
type SelectorSpec struct {
	// User is a regular expression the whole user name must match.
	User *string `json:"user"`
	// Source is a regular expression the whole client source must match.
	Source *string `json:"source"`
	// ClientTags must all be among the statement's client tags.
	ClientTags []string `json:"clientTags"`
	// The fields below are extensions of ours.

	// ClientInfo is a regular expression the whole X-*-Client-Info must
	// match.
	ClientInfo *string `json:"clientInfo"`
	// StatementKind lists kinds (SELECT, INSERT, DATA_DEFINITION or DDL,
	// ...) of which the statement must be one.
	StatementKind []string `json:"statementKind"`
	// Catalog, Schema and Table are regular expressions that one table the
	// statement names must match, each its part of the name.
	Catalog *string `json:"catalog"`
	Schema  *string `json:"schema"` // see Catalog
	Table   *string `json:"table"`  // see Catalog
	// ResourceEstimates are conditions on X-*-Resource-Estimate, by
	// estimate name: {"PEAK_MEMORY": ">=10GB", "EXECUTION_TIME": "<5m"}.
	ResourceEstimates map[string]string `json:"resourceEstimates"`
	// TimeOfDay is a window, "HH:MM-HH:MM" (22:00-06:00 wraps midnight),
	// the statement must come in, in TimeZone (an IANA name; UTC when
	// empty).
	TimeOfDay *string `json:"timeOfDay"`
	TimeZone  string  `json:"timeZone"` // see TimeOfDay
	// TargetGroup names the group.
	TargetGroup string `json:"targetGroup"`
}

// compileSelector makes the Selector of s; an error names the field at
// fault.
func compileSelector(s SelectorSpec) (Selector, string, error) {
	sel := Selector{ClientTags: s.ClientTags, Group: s.TargetGroup}
	for _, f := range []struct {
		name string
		re   *string
		to   **regexp.Regexp
	}{{"user", s.User, &sel.User}, {"source", s.Source, &sel.Source}, {"clientInfo", s.ClientInfo, &sel.ClientInfo},
		{"catalog", s.Catalog, &sel.Catalog}, {"schema", s.Schema, &sel.Schema}, {"table", s.Table, &sel.Table}} {
		if f.re == nil {
			continue
		}
		re, err := regexp.Compile(`^(?:` + *f.re + `)$`)
		if err != nil {
			return Selector{}, f.name, err
		}
		*f.to = re
	}
	for i, k := range s.StatementKind {
		kind, ok := statementKinds[strings.ToUpper(k)]
		if !ok {
			return Selector{}, fmt.Sprintf("statementKind[%d]", i), fmt.Errorf("%q is not one of %s", k, kindNames)
		}
		sel.Kinds = append(sel.Kinds, kind)
	}
	for _, name := range slices.Sorted(maps.Keys(s.ResourceEstimates)) {
		c, err := parseEstimateCond(name, s.ResourceEstimates[name])
		if err != nil {
			return Selector{}, "resourceEstimates." + name, err
		}
		sel.estimates = append(sel.estimates, c)
	}
	switch {
	case s.TimeOfDay != nil:
		w, err := parseDayWindow(*s.TimeOfDay, s.TimeZone)
		if err != nil {
			return Selector{}, "timeOfDay", err
		}
		sel.window = w
	case s.TimeZone != "":
		return Selector{}, "timeZone", errors.New("without a timeOfDay")
	}
	return sel, "", nil
}

// kindNames lists the statement kinds, for messages.
const kindNames = "SELECT, EXPLAIN, DESCRIBE, INSERT, UPDATE, DELETE, MERGE, ANALYZE, DATA_DEFINITION (DDL), ALTER_TABLE_EXECUTE"

// catchAll reports whether s has no condition: it matches every statement.
func (s SelectorSpec) catchAll() bool {
	return s.User == nil && s.Source == nil && len(s.ClientTags) == 0 && s.ClientInfo == nil && len(s.StatementKind) == 0 &&
		s.Catalog == nil && s.Schema == nil && s.Table == nil && len(s.ResourceEstimates) == 0 && s.TimeOfDay == nil
}

// schedulerNames lists Presto Router's scheduler names, for messages.
const schedulerNames = "RANDOM_CHOICE, ROUND_ROBIN, USER_HASH, WEIGHTED_RANDOM_CHOICE, WEIGHTED_ROUND_ROBIN, CONSISTENT_HASH"

// schedulers maps Presto Router's scheduler names to zkpresto strategies.
var schedulers = map[string]string{
	"":                       "random",
	"RANDOM_CHOICE":          "random",
	"ROUND_ROBIN":            "poll",
	"USER_HASH":              "user_hash",
	"WEIGHTED_RANDOM_CHOICE": "weighted",
	"WEIGHTED_ROUND_ROBIN":   "weighted_poll",
	"CONSISTENT_HASH":        "consistent_hash", // ours: by routing key, else user
}

// The fields a RouterConfig reads, at each level. Presto Router's own
// "predictor" (RouterSpec.java of presto-router) is logged and ignored, so
// that its files work as they are; any other field is refused, since a
// mistyped one ("usr") would otherwise be dropped in silence.
var (
	topFields      = []string{"groups", "selectors", "scheduler", "routingGroupHeader", "routingKeyHeader", "externalRouting"}
	groupFields    = []string{"name", "members", "scheduler", "flavour", "weights", "weight"}
	selectorFields = []string{"user", "source", "clientTags", "clientInfo", "statementKind", "catalog", "schema", "table",
		"resourceEstimates", "timeOfDay", "timeZone", "targetGroup"}
	headerFields  = []string{"user", "source"}
	ignoredFields = map[string]bool{"predictor": true}
)

// checkFields refuses the fields of obj (the JSON object at path) that are
// not among known, naming the nearest known one. obj that is no object is
// left to the typed decoding, whose error names the type.
func checkFields(path string, obj json.RawMessage, known []string, ignored map[string]bool) (ignoredSeen []string, err error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(fields))
	for _, name := range names {
		switch {
		case slices.Contains(known, name):
		case ignored[name]:
			ignoredSeen = append(ignoredSeen, name)
		default:
			nearest, _ := suggest.Nearest(name, known)
			at := name
			if path != "" {
				at = path + "." + name
			}
			return nil, fmt.Errorf("%s: unknown field (the nearest known one is %q; known: %s)", at, nearest, strings.Join(known, ", "))
		}
	}
	return ignoredSeen, nil
}

// checkAllFields runs checkFields over the config's levels.
func checkAllFields(data []byte, log *slog.Logger, file string) error {
	ignored, err := checkFields("", data, topFields, ignoredFields)
	if err != nil {
		return err
	}
	for _, k := range ignored {
		log.Info("router config: ignoring a field the gateway does not use", "file", file, "field", k)
	}
	var top struct {
		Groups    []json.RawMessage `json:"groups"`
		Selectors []json.RawMessage `json:"selectors"`
		Header    json.RawMessage   `json:"routingGroupHeader"`
		External  json.RawMessage   `json:"externalRouting"`
	}
	if json.Unmarshal(data, &top) != nil {
		return nil // the typed decoding says why
	}
	if _, err := checkFields("routingGroupHeader", top.Header, headerFields, nil); err != nil {
		return err
	}
	if _, err := checkFields("externalRouting", top.External, externalRoutingFields, nil); err != nil {
		return err
	}
	for i, g := range top.Groups {
		if _, err := checkFields(fmt.Sprintf("groups[%d]", i), g, groupFields, nil); err != nil {
			return err
		}
	}
	for i, sel := range top.Selectors {
		if _, err := checkFields(fmt.Sprintf("selectors[%d]", i), sel, selectorFields, nil); err != nil {
			return err
		}
	}
	return nil
}

// ParseRouterConfig parses a router-config.json and checks it; errors name
// file and the JSON path of the field at fault. An unknown field, at any
// level, is refused with the nearest known one (Presto Router's predictor
// is logged and ignored), and so is a selector after one without a
// condition (a catch-all, which claims every statement).
func ParseRouterConfig(file string, data []byte, log *slog.Logger) (*RouterConfig, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !json.Valid(data) {
		var v any
		return nil, jsonError(file, data, json.Unmarshal(data, &v))
	}
	if err := checkAllFields(data, log, file); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var c RouterConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, jsonError(file, data, err)
	}
	fail := func(path, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", file, path, fmt.Sprintf(format, args...))
	}
	if _, ok := schedulers[c.Scheduler]; !ok {
		return nil, fail("scheduler", "%q is not one of "+schedulerNames, c.Scheduler)
	}
	if len(c.Groups) == 0 {
		return nil, fail("groups", "no groups")
	}
	names := map[string]bool{}
	total := 0
	for i, gr := range c.Groups {
		at := fmt.Sprintf("groups[%d]", i)
		switch {
		case gr.Name == "":
			return nil, fail(at+".name", "missing")
		case names[gr.Name]:
			return nil, fail(at+".name", "a second group named %q", gr.Name)
		case len(gr.Members) == 0:
			return nil, fail(at+".members", "no members")
		case gr.Weights != nil && len(gr.Weights) != len(gr.Members):
			return nil, fail(at+".weights", "%d weights for %d members", len(gr.Weights), len(gr.Members))
		case gr.Weight != nil && *gr.Weight < 0:
			return nil, fail(at+".weight", "negative")
		case gr.Flavour.valid() != nil:
			return nil, fail(at+".flavour", "%q: want %q or %q", gr.Flavour, Presto, Trino)
		}
		if _, ok := schedulers[gr.Scheduler]; !ok && gr.Scheduler != "" {
			return nil, fail(at+".scheduler", "%q is not one of "+schedulerNames, gr.Scheduler)
		}
		names[gr.Name] = true
		for j, w := range gr.Weights {
			if w < 1 {
				return nil, fail(fmt.Sprintf("%s.weights[%d]", at, j), "%d: a weight is at least 1", w)
			}
		}
		for j, m := range gr.Members {
			mem, err := parseMember(m)
			if err != nil {
				return nil, fail(fmt.Sprintf("%s.members[%d]", at, j), "%v", err)
			}
			if mem.node != nil {
				continue
			}
			what := "a ZooKeeper namespace"
			if mem.dsn != nil {
				what = "a DSN"
			}
			switch {
			case len(gr.Members) > 1:
				return nil, fail(fmt.Sprintf("%s.members[%d]", at, j), "%s must be the group's only member", what)
			case gr.Weights != nil:
				return nil, fail(at+".weights", "weights are for coordinator URLs: the coordinators of %s carry their own (a DSN may give its weights key)", what)
			case mem.dsn == nil:
			case gr.Scheduler != "":
				return nil, fail(at+".scheduler", "a DSN's group picks with the DSN's strategy (zooKeeperStrategy, %s by default)", mem.dsn.Strategy)
			case gr.Flavour != "" && gr.Flavour != FlavourFor(mem.dsn.Trino):
				return nil, fail(at+".flavour", "%q, but the member is a %s:// DSN", gr.Flavour, FlavourFor(mem.dsn.Trino))
			}
		}
		total += groupWeight(gr)
	}
	if total == 0 {
		return nil, fail("groups", "every group has weight 0: statements no selector claims would have nowhere to go")
	}
	catchAll := -1 // the first selector without a condition
	for i, s := range c.Selectors {
		at := fmt.Sprintf("selectors[%d]", i)
		if !names[s.TargetGroup] {
			return nil, fail(at+".targetGroup", "no group named %q", s.TargetGroup)
		}
		if catchAll >= 0 {
			// Presto Router's own files end with a catch-all, as their
			// default route; a selector after it is dead configuration.
			return nil, fail(at, "unreachable: selectors[%d] before it has no condition and claims every statement", catchAll)
		}
		if s.catchAll() {
			catchAll = i
		}
		if _, field, err := compileSelector(s); err != nil {
			return nil, fail(at+"."+field, "%v", err)
		}
	}
	if h := c.RoutingGroupHeader; h != nil {
		if h.User == nil && h.Source == nil {
			return nil, fail("routingGroupHeader", "neither user nor source: say whose requests may name a group")
		}
		for field, re := range map[string]*string{"user": h.User, "source": h.Source} {
			if re == nil {
				continue
			}
			if _, err := regexp.Compile(`^(?:` + *re + `)$`); err != nil {
				return nil, fail("routingGroupHeader."+field, "%v", err)
			}
		}
	}
	if c.RoutingKeyHeader != "" && !validHeaderName(c.RoutingKeyHeader) {
		return nil, fail("routingKeyHeader", "%q is no header name", c.RoutingKeyHeader)
	}
	if h := c.ExternalRouting; h != nil {
		if field, err := h.check(); err != nil {
			return nil, fail("externalRouting."+field, "%v", err)
		}
	}
	return &c, nil
}

func groupWeight(gr GroupSpec) int {
	if gr.Weight == nil {
		return 1
	}
	return *gr.Weight
}

// jsonError names the file, the field (for a type error) and the line and
// column of a JSON error.
func jsonError(file string, data []byte, err error) error {
	var off int64 = -1
	where := ""
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
		if typ.Field != "" {
			where = typ.Field + ": "
		}
		err = fmt.Errorf("%s where %s is wanted", typ.Value, typ.Type)
	}
	if off >= 0 && off <= int64(len(data)) {
		line := bytes.Count(data[:off], []byte("\n")) + 1
		col := int(off) - bytes.LastIndexByte(data[:off], '\n')
		return fmt.Errorf("%s:%d:%d: %s%w", file, line, col, where, err)
	}
	return fmt.Errorf("%s: %s%w", file, where, err)
}

// member is one entry of a group's members: a coordinator, a ZooKeeper
// namespace or a zkpresto DSN; one of the three is set.
type member struct {
	node *discovery.Node
	zk   *discovery.ZooKeeperConfig
	dsn  *dsn.Config
}

// parseMember reads a member. Its errors never quote the member, which may
// be a mistyped DSN or a URL with a password in it: ParseDSN's name the key
// at fault.
func parseMember(m string) (member, error) {
	if isDSN(m) {
		cfg, err := dsn.ParseDSN(m)
		if err != nil {
			return member{}, err
		}
		return member{dsn: cfg}, nil
	}
	if rest, ok := strings.CutPrefix(m, "zk://"); ok {
		// Not url.Parse: a host list with IPv6 addresses is no URL host.
		hosts, ns, _ := strings.Cut(rest, "/")
		ns = strings.Trim(ns, "/")
		if hosts == "" || ns == "" || strings.ContainsAny(rest, "@?#") {
			return member{}, errors.New("want zk://host:port[,host:port...]/namespace (a DSN for ZooKeeper auth or TLS)")
		}
		return member{zk: &discovery.ZooKeeperConfig{Servers: strings.Split(hosts, ","), Path: "/" + ns}}, nil
	}
	const want = "want http[s]://host:port, zk://host:port/namespace or a presto:// or trino:// DSN"
	u, err := url.Parse(m)
	if err != nil {
		return member{}, errors.New("malformed: " + want) // url.Parse's error quotes m
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
			return member{}, errors.New("want http[s]://host:port, with no user info, path or query")
		}
		host := u.Host
		if u.Port() == "" {
			host += map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
		}
		addr, err := discovery.CanonicalAddr(host)
		if err != nil {
			return member{}, err
		}
		return member{node: &discovery.Node{Addr: addr, Scheme: u.Scheme, ID: addr, Weight: 1}}, nil
	}
	if len(u.Scheme) <= 16 {
		// A scheme url.Parse accepted: letters, digits, "+-.", no password.
		return member{}, fmt.Errorf("scheme %q: %s", u.Scheme, want)
	}
	return member{}, errors.New(want)
}

// isDSN reports whether m is written as a zkpresto DSN: presto:// or
// trino://, with or without jdbc: before it.
func isDSN(m string) bool {
	s := strings.ToLower(strings.TrimSpace(m))
	s = strings.TrimPrefix(s, "jdbc:")
	return strings.HasPrefix(s, "presto://") || strings.HasPrefix(s, "trino://")
}

// BuildOptions are what building groups needs besides the config.
type BuildOptions struct {
	// Routing is the template of the routing.Config of every group whose
	// member is not a DSN (health, retries, checks); its discovery and
	// strategy fields are set per group. A DSN's group has the DSN's.
	Routing routing.Config
	// Logger receives the groups' logs; nil means none.
	Logger *slog.Logger
	// Now, when set, is the clock of the timeOfDay selectors; nil means
	// time.Now.
	Now func() time.Time
}

// BuildGroups makes the groups of c: one Router per group, over its static
// members (with their weights), its ZooKeeper namespace, or its DSN (with
// the DSN's discovery, health and TLS settings, and a transport of its
// own). The Groups owns the Routers. It does no network I/O.
func BuildGroups(c *RouterConfig, opts BuildOptions) (*Groups, error) {
	var groups []*Group
	closeAll := func() {
		for _, gr := range groups {
			_ = gr.shut()
		}
	}
	for i, spec := range c.Groups {
		gr, err := buildGroup(c, spec, opts)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("groups[%d] (%s): %w", i, spec.Name, err)
		}
		groups = append(groups, gr)
	}
	var selectors []Selector
	for i, s := range c.Selectors {
		sel, field, err := compileSelector(s) // once, at load: a statement only matches
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("selectors[%d].%s: %w", i, field, err)
		}
		selectors = append(selectors, sel)
	}
	gs, err := NewGroups(groups, selectors, true)
	if err != nil {
		closeAll()
		return nil, err
	}
	if h := c.RoutingGroupHeader; h != nil {
		if h.User != nil {
			gs.headerUser = regexp.MustCompile(`^(?:` + *h.User + `)$`) // checked by ParseRouterConfig
		}
		if h.Source != nil {
			gs.headerSource = regexp.MustCompile(`^(?:` + *h.Source + `)$`)
		}
	}
	if c.RoutingKeyHeader != "" {
		gs.keyHeader = http.CanonicalHeaderKey(c.RoutingKeyHeader)
	}
	if opts.Now != nil {
		gs.now = opts.Now
	}
	if c.ExternalRouting != nil {
		if gs.hook, err = newExternalRouting(c.ExternalRouting); err != nil {
			_ = gs.Close()
			return nil, fmt.Errorf("externalRouting: %w", err)
		}
		gs.needSQL = true // the hook gets the statement's kind and tables
	}
	return gs, nil
}

// buildGroup makes the group spec describes; its members were checked by
// ParseRouterConfig.
func buildGroup(c *RouterConfig, spec GroupSpec, opts BuildOptions) (*Group, error) {
	strategyName := schedulers[c.Scheduler]
	if spec.Scheduler != "" {
		strategyName = schedulers[spec.Scheduler]
	}
	gr := &Group{Name: spec.Name, Weight: groupWeight(spec), Flavour: spec.Flavour}
	rc := opts.Routing
	rc.Logger = opts.Logger
	rc.Strategy = strategy.Named(strategyName)
	rc.ZooKeeper, rc.Discoverer = nil, nil
	var nodes []discovery.Node
	for j, m := range spec.Members {
		mem, err := parseMember(m)
		switch {
		case err != nil:
			return nil, err
		case mem.dsn != nil:
			// Its strategy is the DSN's, as everything else it says (its
			// flavour too: ParseRouterConfig refused another).
			dg, err := DSNGroup(spec.Name, mem.dsn, opts.Logger)
			if err != nil {
				return nil, err
			}
			dg.Weight = gr.Weight
			return dg, nil
		case mem.zk != nil:
			mem.zk.Logger = opts.Logger
			rc.ZooKeeper = mem.zk
		default:
			if spec.Weights != nil {
				mem.node.Weight = spec.Weights[j]
			}
			nodes = append(nodes, *mem.node)
		}
	}
	if rc.ZooKeeper == nil {
		rc.Discoverer = discovery.NewStatic("group "+spec.Name, nodes)
	}
	r, err := routing.New(rc)
	if err != nil {
		return nil, err
	}
	gr.Router = r
	return gr, nil
}

// DSNGroup opens the group a DSN describes, named name, with weight 1: the
// DSN's discovery, strategy and health, a transport with its time limits
// and TLS settings, and the flavour of its scheme. Like dsn.Open, which
// builds it, it does no network I/O; the Groups it is put in (owning it)
// closes it.
func DSNGroup(name string, cfg *dsn.Config, log *slog.Logger) (*Group, error) {
	rt, err := dsn.Open(cfg, dsn.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	return &Group{Name: name, Router: rt.Router, Weight: 1, Flavour: FlavourFor(cfg.Trino), Client: rt.Client, TLS: rt.TLS, close: rt.Close}, nil
}

// LoadConfig reads, checks and builds the groups of a router-config.json.
func LoadConfig(file string, opts BuildOptions) (*Groups, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	c, err := ParseRouterConfig(file, data, opts.Logger)
	if err != nil {
		return nil, err
	}
	gs, err := BuildGroups(c, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return gs, nil
}

// ConfigPollInterval is how often WatchConfig looks at the file.
const ConfigPollInterval = 2 * time.Second

// WatchConfig reloads gw's groups from file when hup delivers (SIGHUP) or
// the file changes (another file renamed in, or its modification time or
// size), until ctx is done. A file
// that fails to load keeps the groups in use, and the reason is logged.
// Statements already routed are not affected: they keep the Router they
// started with, which closes when the last of them is done.
func WatchConfig(ctx context.Context, gw *Gateway, file string, opts BuildOptions, hup <-chan os.Signal, interval time.Duration) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if interval <= 0 {
		interval = ConfigPollInterval
	}
	stamp := func() os.FileInfo {
		fi, _ := os.Stat(file)
		return fi
	}
	// A file renamed in is another file, whatever its time and size: a
	// modification time is only as fine as the kernel's clock tick, and two
	// configs of the same size written within one tick look alike.
	same := func(a, b os.FileInfo) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
	}
	last := stamp()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		why := "changed"
		select {
		case <-ctx.Done():
			return
		case <-hup:
			why = "SIGHUP"
		case <-tick.C:
			if same(stamp(), last) {
				continue
			}
		}
		last = stamp()
		gs, err := LoadConfig(file, opts)
		if err != nil {
			log.Error("router config not reloaded; the previous one stays in use", "file", file, "reason", why, "err", err)
			continue
		}
		gw.SetGroups(gs)
		log.Info("router config reloaded", "file", file, "reason", why, "groups", len(gs.Groups()))
	}
}

// validHeaderName reports whether s is an HTTP header field name (a token).
func validHeaderName(s string) bool {
	for _, r := range s {
		if r >= 0x7f || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return s != ""
}
