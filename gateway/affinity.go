package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/gateway/token"
	"github.com/zkpresto/zkpresto/strategy"
)

// AffinityCookieName is the name of the gateway's affinity cookie (see
// Config.AffinityCookie).
const AffinityCookieName = "zkpresto_affinity"

// MaxAffinityCookieAge bounds Config.AffinityCookie: the cookie keeps a
// client's session on one coordinator for a run of statements, not for
// good.
const MaxAffinityCookieAge = 24 * time.Hour

// affinityPurpose labels the keys affinity cookies are signed with,
// derived from the routing-token keys (token.Keys.Derive): a cookie is no
// routing token and a routing token no cookie.
const affinityPurpose = "affinity cookie v1"

// affinityBinding is what every cookie's MAC is bound to, besides its
// contents.
const affinityBinding = "zkpresto affinity"

// An affinity cookie is a token of the derived keys whose coordinator part
// carries "expiry addr group": the expiry in Unix seconds, the
// coordinator's host:port, the group's name (which may hold spaces: it
// comes last). Any replica with the same secret verifies it.

// The outcomes of affinity cookies, as the metrics count them.
const (
	affinitySet        = iota // a cookie was handed out
	affinityFollowed          // a valid cookie's coordinator took the statement
	affinityInvalid           // forged, malformed, another purpose's or an unknown key's
	affinityExpired           // valid but past its expiry
	affinityOtherGroup        // valid, but the routing chose another group
	affinityUnusable          // valid, but its coordinator is not listed, ready or usable, or failed the statement
	affinityOutcomes
)

var affinityOutcomeNames = [affinityOutcomes]string{"set", "followed", "invalid", "expired", "other group", "unusable"}

// affinity is a gateway's affinity cookie: on when maxAge > 0.
type affinity struct {
	keys   *token.Keys
	maxAge time.Duration
	counts [affinityOutcomes]atomic.Uint64
	now    func() time.Time
}

// newAffinity returns the affinity cookie of maxAge, signed by keys
// derived from routing.
func newAffinity(routing *token.Keys, maxAge time.Duration) (*affinity, error) {
	if maxAge < 0 || maxAge > MaxAffinityCookieAge || (maxAge > 0 && maxAge < time.Second) {
		return nil, fmt.Errorf("gateway: affinity cookie max age %s: want 0 (no cookie) or 1s to %s", maxAge, MaxAffinityCookieAge)
	}
	return &affinity{keys: routing.Derive(affinityPurpose), maxAge: maxAge, now: time.Now}, nil
}

func (a *affinity) on() bool { return a != nil && a.maxAge > 0 }

func (a *affinity) count(outcome int) { a.counts[outcome].Add(1) }

// AffinityCount is how many affinity cookies had one outcome.
type AffinityCount struct {
	// Outcome is set (handed out with an answer), followed (its
	// coordinator took the statement), invalid (forged, malformed, signed
	// for another purpose or by a key no longer held), expired, other
	// group (the routing chose another group than the cookie's) or
	// unusable (its coordinator is no longer listed, ready or usable, or
	// failed the statement before it was sent).
	Outcome string `json:"outcome"`
	// Count is the number of such cookies.
	Count uint64 `json:"count"`
}

// AffinityCookies returns the counts of affinity cookies by outcome, every
// outcome listed; nil when the gateway hands out none.
func (g *Gateway) AffinityCookies() []AffinityCount {
	if !g.affinity.on() {
		return nil
	}
	out := make([]AffinityCount, affinityOutcomes)
	for i := range out {
		out[i] = AffinityCount{Outcome: affinityOutcomeNames[i], Count: g.affinity.counts[i].Load()}
	}
	return out
}

// sign returns the cookie's value for the coordinator at addr of group.
func (a *affinity) sign(addr, group string) (string, error) {
	exp := a.now().Add(a.maxAge).Unix()
	return a.keys.Sign(strconv.FormatInt(exp, 10)+" "+addr+" "+group, affinityBinding)
}

// verify returns the coordinator and group of a cookie's value, or the
// outcome that sets it aside (affinityInvalid or affinityExpired).
func (a *affinity) verify(value string) (addr, group string, outcome int) {
	payload, err := a.keys.Verify(value, affinityBinding)
	if err != nil {
		return "", "", affinityInvalid
	}
	parts := strings.SplitN(payload, " ", 3)
	if len(parts) != 3 {
		return "", "", affinityInvalid // a payload this gateway never signs
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || parts[1] == "" {
		return "", "", affinityInvalid
	}
	if a.now().Unix() >= exp {
		return "", "", affinityExpired
	}
	return parts[1], parts[2], -1
}

// takeCookie removes the affinity cookies from header (the coordinator
// has no use for them, and they must end up in no log) and returns their
// values, in order (takeCookies).
func takeCookie(header http.Header) []string {
	return takeCookies(header, func(name string) bool { return name == AffinityCookieName })
}

// preferred returns the coordinator the affinity cookies in header name
// for a statement the routing sends to group: the first cookie that is
// valid, unexpired and of that group. Cookies set aside are counted, the
// first's outcome only, never answered with an error. The cookies are
// taken out of header either way.
func (a *affinity) preferred(header http.Header, group string) string {
	values := takeCookie(header)
	if !a.on() || len(values) == 0 {
		return ""
	}
	first := -1
	for _, v := range values {
		addr, of, outcome := a.verify(v)
		if outcome < 0 && of != group {
			outcome = affinityOtherGroup
		}
		if outcome < 0 {
			return addr
		}
		if first < 0 {
			first = outcome
		}
	}
	a.count(first)
	return ""
}

// setCookie adds to an accepted statement's answer header h the cookie
// that sends the client's next statements to the coordinator at addr of
// group: HttpOnly, SameSite=Strict, Secure for a client on TLS (or a
// gateway whose public URL is https), for the statement path only.
func (g *Gateway) setCookie(h http.Header, r *http.Request, addr, group string) {
	value, err := g.affinity.sign(addr, group)
	if err != nil {
		// A group name too long to carry: no cookie, the statements are
		// routed as without one.
		g.log.Debug("no affinity cookie", "group", group, "err", err)
		return
	}
	path := "/v1/statement"
	if g.public != nil {
		path = g.public.Path + path
	}
	c := &http.Cookie{
		Name: AffinityCookieName, Value: value, Path: path,
		MaxAge: int(g.affinity.maxAge / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || (g.public != nil && g.public.Scheme == "https"),
	}
	h.Add("Set-Cookie", c.String())
	g.affinity.count(affinitySet)
}

// affinityAnswer counts what came of the cookie of a statement that the
// coordinator at addr of group answered, and adds to its answer (resp's
// header, relayed to the client) a fresh cookie naming that coordinator
// when it accepted the statement.
func (g *Gateway) affinityAnswer(r *http.Request, req *strategy.Request, resp *http.Response, addr, group string) {
	if !g.affinity.on() {
		return
	}
	switch {
	case req.Prefer == "":
	case req.Prefer == addr:
		g.affinity.count(affinityFollowed)
	default:
		g.affinity.count(affinityUnusable)
	}
	if resp.StatusCode == http.StatusOK {
		g.setCookie(resp.Header, r, addr, group)
	}
}
