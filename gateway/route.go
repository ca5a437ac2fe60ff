package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/strategy"
)

// DefaultRoutingKeyHeader is the header whose value consistent_hash routes
// by instead of the user, unless the config names another.
const DefaultRoutingKeyHeader = "X-Zkpresto-Routing-Key"

// routeInput is what routing reads of a statement.
type routeInput struct {
	user, source string
	tags         []string
	clientInfo   string
	estimates    map[string]float64 // nanoseconds or bytes, by estimate name
	facts        statementFacts     // read only when a selector needs them
	sqlRead      bool
	now          time.Time
	group        string // the routing group the request names
	key          string // its routing key
	catalog      string // the session's, for the hook
	schema       string // see catalog
	header       http.Header
	hooked       hookAnswer // what the external routing hook answered
}

// input reads what routing needs of a statement: its header (either
// flavour) and, when a selector looks at it, its text.
func (gs *Groups) input(h http.Header, sql string) routeInput {
	in := routeInput{
		user:       clientHeader(h, "User"),
		source:     clientHeader(h, "Source"),
		tags:       clientTags(h),
		clientInfo: clientHeader(h, "Client-Info"),
		now:        gs.now(),
		group:      strings.TrimSpace(clientHeader(h, "Routing-Group")),
		key:        h.Get(gs.keyHeader),
		catalog:    clientHeader(h, "Catalog"),
		schema:     clientHeader(h, "Schema"),
		header:     h,
	}
	if gs.needEstimates {
		in.estimates = resourceEstimates(h)
	}
	if gs.needSQL {
		in.facts = readStatement(sql, clientHeader(h, "Catalog"), clientHeader(h, "Schema"), strings.Join(append(h.Values("X-Presto-Prepared-Statement"), h.Values("X-Trino-Prepared-Statement")...), ","))
		in.sqlRead = true
	}
	return in
}

// clientTags are the statement's client tags (X-Presto-Client-Tags or
// X-Trino-Client-Tags, comma-separated), for the selectors.
func clientTags(h http.Header) []string {
	var tags []string
	for _, t := range strings.Split(clientHeader(h, "Client-Tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}

// RouteError is a statement the routing refuses: it names a routing group
// that does not exist, or one its user or source may not name, or the
// external routing hook refuses it.
type RouteError struct {
	// Status is the HTTP status the client gets.
	Status int
	// Message says why.
	Message string
	// Name is the error name the client gets; empty means
	// ZKPRESTO_ROUTING_GROUP.
	Name string
}

func (e *RouteError) Error() string { return e.Message }

// Decision is where routing sends a statement, and why.
type Decision struct {
	// Group is the group's name; empty when the groups' weights choose
	// (no selector claimed the statement).
	Group string
	// Selector is the index of the selector that chose the group, -1 when
	// none did (the routing group header, or the weights).
	Selector int
	// Why says what chose the group, for --explain.
	Why string
	// By says in short what chose the group, for the status page:
	// "selectors[N]", "routing group header", "routing hook" or "weights".
	By string
	// Key is the statement's routing key, which consistent_hash hashes
	// instead of the user; empty when it has none.
	Key string
	// Hook says what the config's external routing hook answered (or
	// that it failed open); empty when it has none, or was not asked.
	Hook string
}

// decide is the routing of in: the routing group it names, where its
// user or source may name one; else the group the external routing hook
// answered (in.hooked); else the first selector that matches; else Group
// is empty and the weights choose. A group named that does not exist, or
// named by a user or source the config does not let, or the hook's
// refusal, is a *RouteError.
func (gs *Groups) decide(in routeInput) (Decision, error) {
	d := Decision{Selector: -1, Key: in.key}
	if in.group != "" {
		if !gs.mayNameGroup(in) {
			return d, &RouteError{Status: http.StatusForbidden, Message: fmt.Sprintf("zkpresto gateway: user %q (source %q) may not choose a routing group (X-Trino-Routing-Group/X-Presto-Routing-Group); the router config's routingGroupHeader says who may", in.user, in.source)}
		}
		if gs.byName[in.group] == nil {
			return d, &RouteError{Status: http.StatusBadRequest, Message: fmt.Sprintf("zkpresto gateway: no routing group named %q (groups: %s)", in.group, strings.Join(gs.names(), ", "))}
		}
		d.Group, d.Why, d.By = in.group, "the request's routing group header names it", "routing group header"
		return d, nil
	}
	if gs.hook != nil {
		d.Hook = in.hooked.describe(gs.hook.budget)
		switch {
		case in.hooked.refuse != "":
			return d, hookRefusal(in.hooked.refuse)
		case in.hooked.group != "":
			d.Group, d.Why, d.By = in.hooked.group, "the external routing hook answers it", "routing hook"
			return d, nil
		}
	}
	for i := range gs.selectors {
		if why, ok := gs.selectors[i].match(in); ok {
			d.Group, d.Selector, d.Why, d.By = gs.selectors[i].Group, i, fmt.Sprintf("selectors[%d] matches: %s", i, why), fmt.Sprintf("selectors[%d]", i)
			return d, nil
		}
	}
	d.Why, d.By = "no selector matches: the groups' weights choose", "weights"
	return d, nil
}

// mayNameGroup reports whether the config lets in's user or source name
// its routing group.
func (gs *Groups) mayNameGroup(in routeInput) bool {
	return (gs.headerUser != nil && gs.headerUser.MatchString(in.user)) ||
		(gs.headerSource != nil && gs.headerSource.MatchString(in.source))
}

func (gs *Groups) names() []string {
	var out []string
	for _, gr := range gs.groups {
		out = append(out, gr.Name)
	}
	return out
}

// route returns what the strategy sees of a statement, the group its
// routing sends it to, from the groups in force, which the caller releases
// when the statement is done with them, and the decision. The affinity
// cookie, taken out of header, makes its coordinator req.Prefer when it
// is of that group (affinity.go). When ok is false the client was
// answered (a *RouteError, counted as a request of kind) and there is
// nothing to release.
func (g *Gateway) route(w http.ResponseWriter, header http.Header, body []byte, kind string) (req *strategy.Request, gr *Group, gs *Groups, d Decision, ok bool) {
	gs = g.acquire()
	var sql string
	if gs.needSQL {
		sql = string(body)
	}
	in := gs.input(header, sql)
	// The hook's budget bounds its wait, whether the client waits or not.
	in.hooked = gs.askHook(context.Background(), in, &g.hook, g.log)
	d, err := gs.decide(in)
	var re *RouteError
	if errors.As(err, &re) {
		gs.release()
		g.stats.add(kind, re.Status)
		writeError(w, re.Status, cmp.Or(re.Name, errRouting), "", re.Message)
		return nil, nil, nil, d, false
	}
	gr = gs.pickGroup(d)
	req = &strategy.Request{User: in.user, Source: in.source, Key: d.Key, Prefer: g.affinity.preferred(header, gr.Name)}
	return req, gr, gs, d, true
}

// pickGroup is d's group, or the next by weight when d names none (smooth
// weighted round robin: deterministic, a 3:1 split sends exactly 3 of
// every 4 to the first).
func (gs *Groups) pickGroup(d Decision) *Group {
	if d.Group != "" {
		return gs.byName[d.Group]
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	best, total := -1, 0
	for i, gr := range gs.groups {
		gs.current[i] += gr.Weight
		total += gr.Weight
		if gr.Weight > 0 && (best < 0 || gs.current[i] > gs.current[best]) {
			best = i
		}
	}
	gs.current[best] -= total
	return gs.groups[best]
}

// match reports whether s matches in, and says by what.
func (s *Selector) match(in routeInput) (why string, ok bool) {
	var by []string
	re := func(field string, r *regexp.Regexp, v string) bool {
		if r == nil {
			return true
		}
		by = append(by, fmt.Sprintf("%s %q matches %q", field, r.String(), v))
		return r.MatchString(v)
	}
	if !re("user", s.User, in.user) || !re("source", s.Source, in.source) || !re("clientInfo", s.ClientInfo, in.clientInfo) {
		return "", false
	}
	for _, t := range s.ClientTags {
		if !slices.Contains(in.tags, t) {
			return "", false
		}
	}
	if len(s.ClientTags) > 0 {
		by = append(by, fmt.Sprintf("clientTags %q all given", s.ClientTags))
	}
	if len(s.Kinds) > 0 {
		if !slices.Contains(s.Kinds, in.facts.Kind) {
			return "", false
		}
		by = append(by, "statementKind "+in.facts.Kind)
	}
	if s.Catalog != nil || s.Schema != nil || s.Table != nil {
		i := slices.IndexFunc(in.facts.Tables, func(t tableRef) bool {
			return (s.Catalog == nil || s.Catalog.MatchString(t.Catalog)) &&
				(s.Schema == nil || s.Schema.MatchString(t.Schema)) &&
				(s.Table == nil || s.Table.MatchString(t.Table))
		})
		if i < 0 {
			return "", false
		}
		by = append(by, "it names table "+in.facts.Tables[i].String())
	}
	for _, c := range s.estimates {
		v, given := in.estimates[c.name]
		if !given || !c.holds(v) {
			return "", false
		}
		by = append(by, "resource estimate "+c.name+" "+c.text)
	}
	if s.window != nil {
		if !s.window.contains(in.now) {
			return "", false
		}
		by = append(by, fmt.Sprintf("time of day %s in %s", in.now.In(s.window.loc).Format("15:04"), s.window.text))
	}
	if len(by) == 0 {
		return "no condition (a catch-all)", true
	}
	return strings.Join(by, "; "), true
}

// needsSQL reports whether s reads the statement's text.
func (s *Selector) needsSQL() bool {
	return len(s.Kinds) > 0 || s.Catalog != nil || s.Schema != nil || s.Table != nil
}

// estimateCond is a selector's condition on one resource estimate.
type estimateCond struct {
	name  string  // EXECUTION_TIME, CPU_TIME or PEAK_MEMORY
	op    string  // >=, >, <= or <
	value float64 // nanoseconds or bytes
	text  string  // as configured
}

func (c estimateCond) holds(v float64) bool {
	switch c.op {
	case ">=":
		return v >= c.value
	case ">":
		return v > c.value
	case "<=":
		return v <= c.value
	default:
		return v < c.value
	}
}

// estimateKinds are the resource estimates clients send
// (X-*-Resource-Estimate: NAME=value), and how their values read.
var estimateKinds = map[string]func(string) (float64, error){
	"EXECUTION_TIME": parseDuration,
	"CPU_TIME":       parseDuration,
	"PEAK_MEMORY":    parseDataSize,
}

// parseEstimateCond reads a condition such as ">=10GB" on estimate name.
func parseEstimateCond(name, text string) (estimateCond, error) {
	parse, ok := estimateKinds[name]
	if !ok {
		return estimateCond{}, errors.New("unknown resource estimate (known: CPU_TIME, EXECUTION_TIME, PEAK_MEMORY)")
	}
	t := strings.TrimSpace(text)
	op := ""
	for _, o := range []string{">=", "<=", ">", "<"} {
		if strings.HasPrefix(t, o) {
			op = o
			break
		}
	}
	if op == "" {
		return estimateCond{}, fmt.Errorf("%q: want an operator (>=, >, <=, <) and a value, as \">=10GB\" or \"<5m\"", text)
	}
	v, err := parse(strings.TrimSpace(t[len(op):]))
	if err != nil {
		return estimateCond{}, fmt.Errorf("%q: %w", text, err)
	}
	return estimateCond{name: name, op: op, value: v, text: t}, nil
}

// resourceEstimates reads X-Presto-Resource-Estimate and
// X-Trino-Resource-Estimate (NAME=value, comma-separated, in one header or
// several); values that do not read are left out.
func resourceEstimates(h http.Header) map[string]float64 {
	out := map[string]float64{}
	for _, v := range append(h.Values("X-Presto-Resource-Estimate"), h.Values("X-Trino-Resource-Estimate")...) {
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			k = strings.ToUpper(strings.TrimSpace(k))
			if parse, ok := estimateKinds[k]; ok {
				if f, err := parse(strings.TrimSpace(val)); err == nil {
					out[k] = f
				}
			}
		}
	}
	return out
}

var unitValue = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([a-zA-Z]+)$`)

// parseDuration reads a duration as Presto and Trino write one (10m,
// 1.5h, 250ms, 2d), in nanoseconds.
func parseDuration(s string) (float64, error) {
	return parseUnit(s, map[string]float64{"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9, "d": 86400e9}, "ns, us, ms, s, m, h, d")
}

// parseDataSize reads a data size as Presto and Trino write one (10GB,
// 512MB, 1.5TB; units of 1024), in bytes.
func parseDataSize(s string) (float64, error) {
	return parseUnit(strings.ToUpper(s), map[string]float64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40, "PB": 1 << 50}, "B, kB, MB, GB, TB, PB")
}

func parseUnit(s string, units map[string]float64, known string) (float64, error) {
	m := unitValue.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("want a number and a unit (%s)", known)
	}
	unit, ok := units[m[2]]
	if !ok {
		return 0, fmt.Errorf("unit %q: want one of %s", m[2], known)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	return f * unit, nil
}

// dayWindow is a time of day window, [from, to) in minutes after
// midnight in loc; from > to wraps around midnight.
type dayWindow struct {
	from, to int
	loc      *time.Location
	text     string
}

func (w *dayWindow) contains(t time.Time) bool {
	t = t.In(w.loc)
	m := t.Hour()*60 + t.Minute()
	if w.from < w.to {
		return m >= w.from && m < w.to
	}
	return m >= w.from || m < w.to
}

// parseDayWindow reads "HH:MM-HH:MM" in the zone named (UTC when empty).
func parseDayWindow(text, zone string) (*dayWindow, error) {
	from, to, ok := strings.Cut(text, "-")
	f, err1 := minuteOfDay(strings.TrimSpace(from))
	t, err2 := minuteOfDay(strings.TrimSpace(to))
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%q: want HH:MM-HH:MM (22:00-06:00 wraps midnight)", text)
	}
	if f == t {
		return nil, fmt.Errorf("%q: an empty window", text)
	}
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("timeZone %q: %w", zone, err)
		}
	}
	return &dayWindow{from: f, to: t, loc: loc, text: text + " " + loc.String()}, nil
}

func minuteOfDay(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, err
	}
	return t.Hour()*60 + t.Minute(), nil
}

// Explanation is what Explain tells of a sample request.
type Explanation struct {
	Decision
	// Weights lists each group's weight, when the weights choose.
	Weights map[string]int
	// Coordinators are the addresses the group's discovery lists now
	// (empty when the weights choose), and Discovery the error of a
	// discovery that could not say.
	Coordinators []string
	Discovery    error
}

// Explain says where the gateway would route a statement with header and
// text sql at time at (now, when zero), and why, by the same rules it
// routes by; it lists the coordinators the group has now, opening its
// discovery within ctx. It asks the config's external routing hook, as
// the gateway does (Decision.Hook says what it answered). A request the
// gateway would refuse gets its *RouteError. It picks no coordinator and
// moves no weight.
func (gs *Groups) Explain(ctx context.Context, header http.Header, sql string, at time.Time) (Explanation, error) {
	in := gs.input(header, sql)
	if !at.IsZero() {
		in.now = at
	}
	in.hooked = gs.askHook(ctx, in, nil, nil)
	d, err := gs.decide(in)
	if err != nil {
		return Explanation{Decision: d}, err
	}
	e := Explanation{Decision: d}
	if d.Group == "" {
		e.Weights = map[string]int{}
		for _, gr := range gs.groups {
			e.Weights[gr.Name] = gr.Weight
		}
		return e, nil
	}
	snap, err := gs.byName[d.Group].Router.Snapshot(ctx)
	if err != nil {
		e.Discovery = err
		return e, nil
	}
	for _, n := range snap.Nodes {
		e.Coordinators = append(e.Coordinators, n.Addr)
	}
	return e, nil
}
