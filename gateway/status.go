package gateway

import (
	"bytes"
	"cmp"
	"context"

	_ "embed"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/internal/wire"
)

// RecentStatements is how many statements the status page lists: the
// gateway keeps the last ones it answered in a ring.
const RecentStatements = 50

// Status is what the status page shows: the gateway, its request counts
// and its groups. It is what GET /_zk/status.json answers.
type Status struct {
	// Now is when the figures were taken.
	Now time.Time `json:"now"`
	// Started is when the gateway was created.
	Started time.Time `json:"started"`
	// Uptime is the time since Started, in seconds.
	Uptime float64 `json:"uptimeSeconds"`
	// Draining is true once the gateway refuses new statements.
	Draining bool `json:"draining"`
	// Requests are the gateway's request counts by kind and status,
	// ordered by kind then status.
	Requests []RequestCount `json:"requests"`
	// Groups are the groups of coordinators the gateway routes to.
	Groups []GroupStatus `json:"groups"`
}

// GroupStatus is one group of coordinators and the Router that picks among them.
type GroupStatus struct {
	// Name names the group.
	Name string `json:"name"`
	// Strategy is the name of the group's strategy.
	Strategy string `json:"strategy"`
	// Discovery describes where the group's coordinators are listed.
	Discovery DiscoveryStatus `json:"discovery"`
	// Coordinators are the coordinators discovery lists now, in address order.
	Coordinators []CoordinatorStatus `json:"coordinators"`
	// Statements are the group's recent statements, newest first, those no
	// coordinator took included.
	Statements []StatementRecord `json:"statements"`
}

// DiscoveryStatus describes a group's discovery source.
type DiscoveryStatus struct {
	// Source names the ensemble and path, or the static host list.
	Source string `json:"source"`
	// Open is false until discovery was first used.
	Open bool `json:"open"`
	// Connected is true while the ZooKeeper session is live (always for a
	// static list).
	Connected bool `json:"connected"`
	// StaleSince is when the connection was lost; absent while connected.
	StaleSince time.Time `json:"staleSince,omitzero"`
	// LastChange is when the list last changed; absent if never.
	LastChange time.Time `json:"lastChange,omitzero"`
	// Generation counts the lists discovery published.
	Generation uint64 `json:"generation"`
	// Skipped is the number of registrations that could not be read.
	Skipped int `json:"skipped"`
	// Problem explains an empty list.
	Problem string `json:"problem,omitempty"`
}

// CoordinatorStatus is what the gateway knows of one coordinator.
type CoordinatorStatus struct {
	// Address is host:port.
	Address string `json:"address"`
	// Scheme is http or https.
	Scheme string `json:"scheme"`
	// Weight is the coordinator's relative capacity.
	Weight int `json:"weight"`
	// Zone and Version are what the coordinator registered with, if anything.
	Zone    string `json:"zone,omitempty"`
	Version string `json:"version,omitempty"`
	// State sums up the health: usable, "not ready: REASON" (its
	// registration is marked notready=, see NotReady), ejected, unhealthy
	// or unused (listed but not a candidate, e.g. left out by the
	// strategy).
	State string `json:"state"`
	// NotReady is why the coordinator's registrar marked it not ready
	// (starting, SHUTTING_DOWN, workers:0/1, drained): it gets no new
	// statement while another coordinator is ready, and its running and
	// queued queries (In flight) fall to zero as they finish.
	NotReady string `json:"notReady,omitempty"`
	// Usable is true when the coordinator is a candidate for new statements.
	Usable bool `json:"usable"`
	// Ejected and EjectedUntil describe a current ejection.
	Ejected      bool      `json:"ejected"`
	EjectedUntil time.Time `json:"ejectedUntil,omitzero"`
	// Unhealthy is an active health check's verdict.
	Unhealthy bool `json:"unhealthy"`
	// LastError is the coordinator's latest failure, if any.
	LastError string `json:"lastError,omitempty"`
	// Ejections is how many times the coordinator was ejected.
	Ejections uint64 `json:"ejections"`
	// InFlight is the number of statements running there now.
	InFlight int64 `json:"inFlight"`
	// Picks is the number of statements started there; Failures those
	// that ended with an error; Failovers those moved elsewhere because it
	// failed before accepting them.
	Picks     uint64 `json:"picks"`
	Failures  uint64 `json:"failures"`
	Failovers uint64 `json:"failovers"`
	// LatencyMillis is the moving average of statement latency.
	LatencyMillis float64 `json:"latencyMs"`
	// Recent are the recent statements sent there, newest first.
	Recent []StatementRecord `json:"recent"`
}

// StatementRecord is one statement the gateway answered. It holds no
// header but the client's user and source names, and never the SQL.
type StatementRecord struct {
	// Time is when the statement was answered (or failed).
	Time time.Time `json:"time"`
	// Group is the group it was routed in.
	Group string `json:"group"`
	// ChosenBy says what chose the group: "selectors[N]" (the config's
	// selector of that index), "routing group header", "routing hook"
	// (the config's external routing hook answered it) or "weights" (no
	// selector claimed it; also the one group of a gateway without a
	// config).
	ChosenBy string `json:"chosenBy"`
	// PickedBy says what chose the coordinator, when the group's strategy
	// did not alone: "affinity cookie" (the client's cookie named it),
	// "routing key" (the strategy hashed the routing key header) or
	// "transaction" (the statement's transaction is there).
	PickedBy string `json:"pickedBy,omitempty"`
	// User and Source are the client's X-Presto-/X-Trino-User and -Source.
	User   string `json:"user"`
	Source string `json:"source,omitempty"`
	// Coordinator is the address of the coordinator that took it; empty
	// when none did.
	Coordinator string `json:"coordinator,omitempty"`
	// QueryID is the query id the coordinator gave it.
	QueryID string `json:"queryId,omitempty"`
	// Status is the HTTP status the client got.
	Status int `json:"status"`
	// Outcome is finished, failed (the query failed, or a coordinator
	// failed after it may have had it), cancelled, accepted (running, or
	// its follow-ups went through another replica), refused (the
	// coordinator answered an error status), not routed (no coordinator
	// took it), bad request or client gone.
	Outcome string `json:"outcome"`
	// State is the query's latest state this replica saw, e.g. QUEUED,
	// FINISHED or FAILED.
	State string `json:"state,omitempty"`
	// ErrorName is a failed query's error name, e.g. GENERIC_USER_ERROR.
	ErrorName string `json:"errorName,omitempty"`
	// Error is why it failed, if it did.
	Error string `json:"error,omitempty"`
	// Ended is when this replica saw the query end; ElapsedMillis the
	// time from the first answer (Time) to then.
	Ended         time.Time `json:"ended,omitzero"`
	ElapsedMillis float64   `json:"elapsedMs,omitempty"`
}

// Status returns what the status page shows. It does no I/O.
func (g *Gateway) Status() Status {
	now := time.Now()
	st := Status{Now: now, Started: g.started, Uptime: now.Sub(g.started).Seconds(), Draining: g.draining.Load()}
	st.Requests = g.Requests()
	slices.SortFunc(st.Requests, func(a, b RequestCount) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Status, b.Status))
	})
	recent := g.recent.newestFirst()
	for _, group := range g.Groups() {
		st.Groups = append(st.Groups, groupStatus(group, recent))
	}
	return st
}

// groupStatus is what the status page shows of one group.
func groupStatus(group *Group, recent []StatementRecord) GroupStatus {
	rs := group.Router.Stats()
	grp := GroupStatus{
		Name:     group.Name,
		Strategy: rs.Strategy,
		Discovery: DiscoveryStatus{
			Source: rs.Discovery.Source, Open: rs.Discovery.Open, Connected: rs.Discovery.Connected,
			StaleSince: rs.Discovery.StaleSince, LastChange: rs.Discovery.LastChange,
			Generation: rs.Discovery.Generation, Skipped: rs.Discovery.Skipped, Problem: rs.Discovery.Problem,
		},
		Coordinators: []CoordinatorStatus{},
		Statements:   []StatementRecord{},
	}
	for _, rec := range recent {
		if rec.Group == grp.Name {
			grp.Statements = append(grp.Statements, rec)
		}
	}
	for _, n := range rs.Nodes {
		c := CoordinatorStatus{
			Address: n.Node.Addr, Scheme: cmp.Or(n.Node.Scheme, "http"), Weight: n.Node.Weight,
			Zone: n.Node.Zone, Version: n.Node.Version, NotReady: n.Node.NotReady,
			Usable: n.Usable, Ejected: n.Ejected, Unhealthy: n.Unhealthy, LastError: clip(n.LastError),
			Ejections: n.Ejections, InFlight: n.InFlight, Picks: n.Picks, Failures: n.Failures, Failovers: n.Failovers,
			LatencyMillis: float64(n.Latency.Microseconds()) / 1000,
			Recent:        []StatementRecord{},
		}
		if n.Ejected {
			c.EjectedUntil = n.EjectedUntil
		}
		switch {
		case !n.Node.Ready() && !n.Usable:
			c.State = "not ready: " + n.Node.NotReady
		case n.Ejected:
			c.State = "ejected"
		case n.Unhealthy:
			c.State = "unhealthy"
		case n.Usable:
			c.State = "usable"
		default:
			c.State = "unused"
		}
		for _, rec := range grp.Statements {
			if rec.Coordinator == c.Address {
				c.Recent = append(c.Recent, rec)
			}
		}
		grp.Coordinators = append(grp.Coordinators, c)
	}
	return grp
}

//go:embed status.html
var statusHTML string

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("15:04:05")
	},
	"ms": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"chosen": func(s StatementRecord) string {
		if s.PickedBy == "" {
			return s.ChosenBy
		}
		return s.ChosenBy + "; " + s.PickedBy
	},
	"slug":   func(s string) string { return "s-" + strings.ReplaceAll(s, " ", "-") },
	"uptime": func(s float64) string { return (time.Duration(s) * time.Second).String() },
}).Parse(statusHTML))

// HandleStatus mounts the status page on mux: GET /_zk/status (HTML, first
// view rendered by the server, then refreshed by its script every 2 s) and
// GET /_zk/status.json (the Status). Both are read-only and show no
// secret: no header but the client's user and source names, no SQL, no key.
func (g *Gateway) HandleStatus(mux *http.ServeMux) {
	mux.HandleFunc("GET /_zk/status", g.serveStatusPage)
	mux.HandleFunc("GET /_zk/status.json", g.serveStatusJSON)
}

func statusHeaders(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

func (g *Gateway) serveStatusPage(w http.ResponseWriter, _ *http.Request) {
	statusHeaders(w, "text/html; charset=utf-8")
	// Everything inline, nothing from elsewhere, no form to post.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, g.Status()); err != nil {
		http.Error(w, "zkpresto gateway: rendering the status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(buf.Bytes())
}

func (g *Gateway) serveStatusJSON(w http.ResponseWriter, _ *http.Request) {
	statusHeaders(w, "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(g.Status())
}

// hasCoordinators reports whether any group lists a coordinator: one that
// is open, else, waiting for them, any.
func (g *Gateway) hasCoordinators(ctx context.Context) bool {
	for _, wait := range []bool{false, true} {
		for _, rs := range g.snapshots(ctx, wait) {
			if len(rs.snap.Nodes) > 0 {
				return true
			}
		}
	}
	return false
}

func (g *Gateway) serveInfo(w http.ResponseWriter, r *http.Request) {
	starting := !g.hasCoordinators(r.Context())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"nodeVersion": map[string]string{"version": "zkpresto-gateway"},
		"environment": "zkpresto-gateway",
		"coordinator": true,
		"starting":    starting,
		"uptime":      wire.AirliftDuration(time.Since(g.started)),
	})
}

func (g *Gateway) serveInfoState(w http.ResponseWriter, r *http.Request) {
	state := "ACTIVE"
	switch {
	case g.draining.Load():
		state = "SHUTTING_DOWN"
	case !g.hasCoordinators(r.Context()):
		state = "INACTIVE"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(state)
}

// counters are the gateway's request figures, for Stats.
type counters struct {
	mu sync.Mutex
	m  map[counterKey]uint64
}

type counterKey struct {
	kind   string
	status int
}

func (c *counters) add(kind string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[counterKey]uint64{}
	}
	c.m[counterKey{kind, status}]++
}

// RequestCount is how many requests of one kind got one status.
type RequestCount struct {
	// Kind is submit, followup, query, info, oauth2 or other.
	Kind string `json:"kind"`
	// Status is the HTTP status answered.
	Status int `json:"status"`
	// Count is the number of such requests.
	Count uint64 `json:"count"`
}

// Requests returns the gateway's request counts so far.
func (g *Gateway) Requests() []RequestCount {
	g.stats.mu.Lock()
	defer g.stats.mu.Unlock()
	out := make([]RequestCount, 0, len(g.stats.m))
	for k, n := range g.stats.m {
		out = append(out, RequestCount{Kind: k.kind, Status: k.status, Count: n})
	}
	return out
}
