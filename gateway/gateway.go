package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/gateway/token"
	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/routing"
)

// Limits and defaults.
const (
	// MaxStatementBytes bounds a statement's body. The gateway holds a
	// statement until a coordinator accepted it, to send it elsewhere when
	// one refuses.
	MaxStatementBytes = 16 << 20
	// MaxHeaderBytes is what a gateway server should accept: prepared
	// statements travel in headers, and Presto servers allow about 2 MB.
	MaxHeaderBytes = 4 << 20
	// SubmitTimeout bounds how long a coordinator may take to answer a
	// submission (Presto answers at once with a queued state).
	SubmitTimeout = 60 * time.Second
	// queryFanOutTimeout bounds the search for an unknown query id.
	queryFanOutTimeout = 5 * time.Second
	// rememberedQueries bounds the query id → coordinator table that lets
	// /v1/query/{id} go straight to its coordinator.
	rememberedQueries = 100_000
)

// Config is what a Gateway needs.
type Config struct {
	// Router picks coordinators; the gateway does not close it. Exactly
	// one of Router and Groups is set.
	Router *routing.Router
	// Groups routes statements through groups and selectors (a Presto
	// Router config, see LoadConfig); SetGroups replaces them later.
	Groups *Groups
	// Client sends requests to the coordinators (TLS applied); nil means
	// a default client. Its redirect policy is not used: the gateway
	// follows no redirect.
	Client *http.Client
	// TLS makes the gateway talk https to every coordinator, whatever the
	// registrations say.
	TLS bool
	// Keys is the text of the routing-token secret (see ParseKeys' format
	// in docs/gateway.md): one or two keys, the first signs, both verify.
	Keys string
	// PublicURL is the base URL clients reach the gateway at (a load
	// balancer in front of the replicas); empty means the scheme and host
	// each request came in on.
	PublicURL string
	// Logger receives the gateway's logs; nil means none.
	Logger *slog.Logger
	// StandardTransport sends to the coordinators with Client's transport
	// as it is (Go's http.Transport by default) instead of the gateway's
	// pool of connections (see newReach), which spares each exchange two
	// goroutines and peeks at every idle connection before its reuse. The
	// groups of a Router config that have a transport of their own (a DSN
	// member's) keep it as it is.
	StandardTransport bool
	// Flavour is the header flavour the coordinators speak (Presto or
	// Trino): clients of the other one have their session headers renamed
	// on the way in and the session changes renamed back. Empty renames
	// nothing on the way in.
	Flavour Flavour
	// NoCoordinatorGrace is how long a group may have no coordinator that
	// takes statements before the gateway answers them with a failed
	// query (NO_NODES_AVAILABLE, naming the group and where it looked),
	// which every client shows, instead of a 503, which clients send
	// again for up to a minute or until their deadline: a brief blip stays
	// invisible, an outage is explained. 0 means
	// DefaultNoCoordinatorGrace; negative, none.
	NoCoordinatorGrace time.Duration
}

// Gateway is an http.Handler that routes the Presto/Trino client protocol
// to the coordinators its Router picks. It is safe for concurrent use.
type Gateway struct {
	groups  atomic.Pointer[Groups]
	reach   reach // the coordinators', unless their group has its own
	keys    *token.Keys
	public  *url.URL
	log     *slog.Logger
	started time.Time

	draining atomic.Bool
	members  members
	queries  queryTable
	running  running // queries awaiting a follow-up, for a drain
	stats    counters
	recent   statementLog // the last statements, for the status page
	outages  *outages     // the groups without a coordinator, since when
	latency  latencies    // how long requests took, by kind
}

// New returns a Gateway for cfg. It does no network I/O.
func New(cfg Config) (*Gateway, error) {
	if (cfg.Router == nil) == (cfg.Groups == nil) {
		return nil, errors.New("zkpresto: gateway: exactly one of Router and Groups must be set")
	}
	groups := cfg.Groups
	if groups == nil {
		var err error
		if groups, err = NewGroups([]*Group{{Name: DefaultGroup, Router: cfg.Router, Weight: 1}}, nil, false); err != nil {
			return nil, err
		}
	}
	keys, err := token.ParseKeys(cfg.Keys)
	if err != nil {
		return nil, fmt.Errorf("zkpresto: gateway: routing-token secret: %w", err)
	}
	g := &Gateway{keys: keys, log: cfg.Logger, started: time.Now(), outages: newOutages(cfg.NoCoordinatorGrace)}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Flavour.valid(); err != nil {
		return nil, err
	}
	g.reach = newReach(cfg.Client, cfg.TLS, cfg.Flavour, cfg.StandardTransport)
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("zkpresto: gateway: public URL %q: want http[s]://host[:port][/prefix]", cfg.PublicURL)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		g.public = u
	}
	g.groups.Store(groups)
	g.members.init()
	g.queries.init(rememberedQueries)
	return g, nil
}

// Drain makes the gateway refuse new statements (with 503 and Connection:
// close, which clients and load balancers retry elsewhere: nothing was
// sent) while the queries it routes go on (see WaitQueries).
func (g *Gateway) Drain() { g.draining.Store(true) }

// Draining reports whether Drain was called: a health check then fails,
// so that a load balancer sends new statements to another replica.
func (g *Gateway) Draining() bool { return g.draining.Load() }

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Also when a handler ends by cutting the connection (a panic).
	defer func() { g.latency.observe(requestKind(r), time.Since(start)) }()
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, token.PathPrefix):
		g.serveToken(w, r)
	case strings.HasPrefix(path, failedQueryPrefix):
		g.serveFailedQuery(w, r)
	case path == "/v1/statement" && r.Method == http.MethodPost:
		g.serveSubmit(w, r)
	case path == "/v1/statement" && r.Method == http.MethodHead:
		g.serveStatementHead(w, r)
	case strings.HasPrefix(path, "/v1/query/"):
		g.serveQuery(w, r)
	case path == "/v1/info" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		g.serveInfo(w, r)
	case path == "/v1/info/state" && r.Method == http.MethodGet:
		g.serveInfoState(w, r)
	default:
		g.stats.add("other", http.StatusNotFound)
		writeError(w, http.StatusNotFound, errGatewayName, "", "zkpresto gateway: no such resource: "+r.Method+" "+path)
	}
}

// reach is how the gateway reaches some coordinators: through which
// transport, over https or as they registered, speaking which flavour.
type reach struct {
	transport http.RoundTripper     // renames headers between flavours, then sends
	inline    *pool.InlineTransport // transport's pool, when made from an http.Transport
	tls       bool                  // https whatever the registrations say
	flavour   Flavour
}

// newReach returns the reach of coordinators that client (nil: Go's default
// transport) sends to. An http.Transport is replaced by a pool of
// connections used on the goroutine of the request (inline, for its owner
// to close): each request the gateway serves makes one exchange with a
// coordinator, which needs none of the two goroutines Go's transport hands
// each exchange to; unless standard, which keeps the transport as it is.
func newReach(client *http.Client, tls bool, flavour Flavour, standard bool) reach {
	var t http.RoundTripper = http.DefaultTransport
	if client != nil && client.Transport != nil {
		t = client.Transport
	}
	var inline *pool.InlineTransport
	if ht, ok := t.(*http.Transport); ok && !standard {
		inline = pool.NewInlineTransport(ht)
		t = inline
	}
	return reach{transport: flavourTransport{next: t}, inline: inline, tls: tls, flavour: flavour}
}

// base is the base URL node is reached at.
func (rc reach) base(node *discovery.Node) string {
	if rc.tls || node.Scheme == "https" {
		return "https://" + node.Addr
	}
	return "http://" + node.Addr
}

// publicBase is the gateway's own base URL for the URIs it hands out in
// answer to r.
func (g *Gateway) publicBase(r *http.Request) string {
	if g.public != nil {
		return g.public.String()
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
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

// members tracks, per replica, which coordinators it has seen listed and
// which of those, having left discovery, then failed: a token naming a
// listed coordinator is forwarded; one naming a coordinator that left is
// forwarded while it answers (its running queries finish: a rolling
// restart loses nothing); once it failed, it is gone for good, so that no
// old token ever reaches an unrelated server that later listens there.
//
// A coordinator is reached as the group that listed it last reaches it
// (its transport, TLS and flavour), also once that group is gone: a reload
// that drops a group does not strand the queries running on its
// coordinators.
type members struct {
	mu   sync.Mutex
	gens map[*routing.Router]uint64 // the snapshot generation last read, per group
	seen map[string]reach           // base URL → its group's reach, when it was last listed
	gone map[string]bool
}

func (m *members) init() {
	m.gens = map[*routing.Router]uint64{}
	m.seen = map[string]reach{}
	m.gone = map[string]bool{}
}

// memberState is what a token's coordinator is to this replica.
type memberState int

const (
	memberUnknown  memberState = iota // never listed: refused
	memberListed                      // listed now
	memberDeparted                    // listed once, left, still answering
	memberGone                        // left and failed since: refused
)

// stateOf returns base's state, reading the current snapshots (a
// coordinator is listed when any group lists it), and how its group
// reached it when it was last listed.
//
// Only groups whose discovery is open are read for a coordinator this
// replica has seen listed (one listed by a group not open yet passes for
// departed meanwhile, which is forwarded all the same): a group whose
// ZooKeeper does not answer must not hold up the follow-ups of every
// other group's queries. For one it has not seen, every group is asked.
func (g *Gateway) stateOf(ctx context.Context, base string) (memberState, reach) {
	snaps := g.snapshots(ctx, false)
	listed := listedIn(snaps, base)
	if !listed && !g.seen(base) {
		snaps = g.snapshots(ctx, true)
		listed = listedIn(snaps, base)
	}
	m := &g.members
	m.mu.Lock()
	defer m.mu.Unlock()
	gens := make(map[*routing.Router]uint64, len(snaps))
	for _, rs := range snaps {
		gens[rs.router] = rs.snap.Generation
		if gen, ok := m.gens[rs.router]; ok && gen == rs.snap.Generation {
			continue
		}
		for i := range rs.snap.Nodes {
			b := rs.reach.base(&rs.snap.Nodes[i])
			m.seen[b] = rs.reach
			delete(m.gone, b) // listed again: a new registration
		}
	}
	// Only the current groups' Routers: those of a replaced config go.
	m.gens = gens
	rc, seen := m.seen[base]
	switch {
	case listed:
		return memberListed, rc
	case m.gone[base]:
		return memberGone, rc
	case seen:
		return memberDeparted, rc
	}
	return memberUnknown, g.reach
}

// listedIn reports whether one of snaps lists base.
func listedIn(snaps []routerSnapshot, base string) bool {
	for _, rs := range snaps {
		for i := range rs.snap.Nodes {
			if rs.reach.base(&rs.snap.Nodes[i]) == base {
				return true
			}
		}
	}
	return false
}

// seen reports whether base was listed once.
func (g *Gateway) seen(base string) bool {
	g.members.mu.Lock()
	defer g.members.mu.Unlock()
	_, ok := g.members.seen[base]
	return ok
}

// markGone records that a coordinator that left discovery failed.
func (g *Gateway) markGone(base string) {
	g.members.mu.Lock()
	defer g.members.mu.Unlock()
	g.members.gone[base] = true
}

// noteListed records that base, reached through rc, was listed when a
// token was signed for it.
func (g *Gateway) noteListed(base string, rc reach) {
	g.members.mu.Lock()
	defer g.members.mu.Unlock()
	g.members.seen[base] = rc
}

// queryTable remembers which coordinator runs a query, from the answers
// this replica relayed, for /v1/query/{id}; the oldest entries go first.
type queryTable struct {
	mu    sync.Mutex
	limit int
	byID  map[string]string
	order []string
	next  int
}

func (q *queryTable) init(limit int) {
	q.limit = limit
	q.byID = map[string]string{}
}

func (q *queryTable) remember(id, base string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.byID[id]; ok {
		q.byID[id] = base
		return
	}
	if len(q.order) < q.limit {
		q.order = append(q.order, id)
	} else {
		delete(q.byID, q.order[q.next])
		q.order[q.next] = id
		q.next = (q.next + 1) % q.limit
	}
	q.byID[id] = base
}

func (q *queryTable) lookup(id string) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	base, ok := q.byID[id]
	return base, ok
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
	// Kind is submit, followup, query, info or other.
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
