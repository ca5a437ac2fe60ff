package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/gateway/token"
	"github.com/zkpresto/zkpresto/internal/pool"
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
	// submission and, where the gateway makes it, its first GET
	// (dispatchFirst): Presto answers the POST at once and the GET within
	// its short wait, queued or dispatched. It is well under a client's
	// request timeout (trino-python-client's 30 s), after which the client
	// sends its POST again.
	SubmitTimeout = 20 * time.Second
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
	// ForwardedFor sends the coordinators X-Forwarded-For naming each
	// client, for their query logs. Off by default: Trino refuses every
	// request that carries an X-Forwarded-* header with 406 unless
	// http-server.process-forwarded=true is set on it (airlift's default
	// is false; seen on Trino 476), and PrestoDB reads it only as a log
	// entry.
	ForwardedFor bool
	// ForwardedProto sends the coordinators X-Forwarded-Proto: https for a
	// client whose own connection to the gateway is TLS, and nothing for
	// one on plain http; the client's own forwarding headers are always
	// dropped, so that no client can claim TLS it did not use. A
	// coordinator with http-server.process-forwarded=true then takes such
	// a request as secure and accepts a password on its http port (Trino
	// refuses passwords over plain http). Off by default, for the same 406
	// as ForwardedFor. A gateway behind a proxy that terminates TLS for it
	// sees plain http and sends nothing.
	ForwardedProto bool
	// ClientCertJWT, when set, replaces the Authorization of a client that
	// presented a verified TLS client certificate with a short-lived JWT
	// the gateway signs for it (see CertJWT); the listener must ask for
	// client certificates (tls.VerifyClientCertIfGiven and ClientCAs).
	ClientCertJWT *CertJWT
	// AffinityCookie, when positive, is the Max-Age of the affinity cookie
	// the answer to every accepted statement sets (AffinityCookieName,
	// signed with keys derived from Keys): a client that keeps cookies
	// (python's requests, as dbt-trino's sessions) sends its next
	// statements to the same coordinator, through any replica, while that
	// coordinator is listed, ready and usable in the group the routing
	// chooses. 0 sets none; at most MaxAffinityCookieAge.
	AffinityCookie time.Duration
}

// Gateway is an http.Handler that routes the Presto/Trino client protocol
// to the coordinators its Router picks. It is safe for concurrent use.
type Gateway struct {
	groups atomic.Pointer[Groups]
	reach  reach // the coordinators', unless their group has its own
	keys   *token.Keys
	// oauth2Keys sign the OAuth2 callback cookies: derived from keys, so
	// that a cookie is no routing token and a routing token no cookie.
	oauth2Keys *token.Keys
	public     *url.URL
	log        *slog.Logger
	started    time.Time

	forwardedFor   bool        // Config.ForwardedFor
	forwardedProto bool        // Config.ForwardedProto
	certJWT        *certMinter // Config.ClientCertJWT; nil without
	affinity       *affinity

	draining atomic.Bool
	serving  serving // the requests in flight, for a drain
	members  members
	queries  queryTable
	running  running // queries awaiting a follow-up, for a drain
	stats    counters
	recent   statementLog // the last statements, for the status page
	outages  *outages     // the groups without a coordinator, since when
	latency  latencies    // how long requests took, by kind
	hook     hookStats    // what the external routing hooks did
	checks   dispatchChecks

	submitTimeout time.Duration    // SubmitTimeout; shorter in tests
	now           func() time.Time // time.Now; the OAuth2 cookies' clock, set by tests
}

// New returns a Gateway for cfg. It does no network I/O.
func New(cfg Config) (*Gateway, error) {
	if (cfg.Router == nil) == (cfg.Groups == nil) {
		return nil, errors.New("gateway: exactly one of Router and Groups must be set")
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
		return nil, fmt.Errorf("gateway: routing-token secret: %w", err)
	}
	g := &Gateway{keys: keys, log: cfg.Logger, started: time.Now(), outages: newOutages(cfg.NoCoordinatorGrace), submitTimeout: SubmitTimeout, now: time.Now, oauth2Keys: keys.Derive(oauth2CookiePurpose)}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Flavour.valid(); err != nil {
		return nil, err
	}
	g.reach = newReach(cfg.Client, cfg.TLS, cfg.Flavour, cfg.StandardTransport)
	g.forwardedFor, g.forwardedProto = cfg.ForwardedFor, cfg.ForwardedProto
	if cfg.ClientCertJWT != nil {
		if g.certJWT, err = newCertMinter(*cfg.ClientCertJWT); err != nil {
			return nil, err
		}
	}
	if g.affinity, err = newAffinity(keys, cfg.AffinityCookie); err != nil {
		return nil, err
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("gateway: public URL %q: want http[s]://host[:port][/prefix]", cfg.PublicURL)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		g.public = u
	}
	g.groups.Store(groups)
	g.serving.since = g.started
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
	g.serving.begin(start)
	// Also when a handler ends by cutting the connection (a panic).
	defer func() {
		end := time.Now()
		g.latency.observe(requestKind(r), end.Sub(start))
		g.serving.end(end)
	}()
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
	case path == OAuth2CallbackPath:
		g.serveOAuth2Callback(w, r)
	default:
		g.stats.add("other", http.StatusNotFound)
		writeError(w, http.StatusNotFound, errGatewayName, "", "zkpresto gateway: no such resource: "+r.Method+" "+shownPath(path))
	}
}

// shownPath is path as an error may quote it: its first two segments, the
// rest elided, since a deeper one may carry a token (OAuth2's
// /oauth2/token/{id}) and the error may end up in a client's log.
func shownPath(path string) string {
	n := 0
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			if n++; n == 2 {
				return path[:i+1] + "…"
			}
		}
	}
	return path
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
