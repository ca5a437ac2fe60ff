package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/pool"
	"github.com/zkpresto/zkpresto/routing"
)

// DefaultGroup names the one group of a gateway made from a single Router
// (zkpresto gateway --dsn).
const DefaultGroup = "default"

// Group is one routing group: a name and the Router that picks among its
// coordinators (a static list or one ZooKeeper namespace).
type Group struct {
	// Name is the group's name, as selectors target it.
	Name string
	// Router picks the group's coordinators.
	Router *routing.Router
	// Weight is the group's share of the statements no selector claims; 0
	// means it only gets statements a selector sends it.
	Weight int
	// Flavour is the header flavour the group's coordinators speak; empty
	// means the gateway's (Config.Flavour).
	Flavour Flavour
	// Client, when set, sends the requests to the group's coordinators
	// through its Transport (TLS settings, dial and response limits); nil
	// means the gateway's (Config.Client). Its Timeout, Jar and redirect
	// policy are not used.
	Client *http.Client
	// TLS makes the gateway talk https to the group's coordinators,
	// whatever their registrations say (as Config.TLS does for all).
	TLS bool

	close func() error // closes Router and what it came with
}

// Selector sends the statements it matches to a group: every set field must
// match (regular expressions the whole value, every client tag present), the
// first selector that matches wins; one with no field set matches every
// statement.
type Selector struct {
	// User, when set, must match the whole user name.
	User *regexp.Regexp
	// Source, when set, must match the whole client source.
	Source *regexp.Regexp
	// ClientTags must all be among the statement's client tags.
	ClientTags []string
	// ClientInfo, when set, must match the whole X-*-Client-Info.
	ClientInfo *regexp.Regexp
	// Kinds, when set, are the statement kinds (KindSelect...) of which
	// the statement must be one.
	Kinds []string
	// Catalog, Schema and Table, those set, must match the whole catalog,
	// schema and table name of one table the statement names (the session's
	// catalog and schema where it leaves them out).
	Catalog, Schema, Table *regexp.Regexp
	// Group is the target group's name.
	Group string

	estimates []estimateCond // on X-*-Resource-Estimate, from the config
	window    *dayWindow     // the time of day, from the config
}

// Groups is the routing a gateway does at one time: its groups, selectors
// and the split of unclaimed statements between groups. A gateway swaps a
// whole Groups at once on reload; the Groups it replaced closes its
// Routers when the last statement that picked through it is done.
type Groups struct {
	groups    []*Group
	selectors []Selector
	byName    map[string]*Group
	owned     bool // close the Routers when retired
	// transports are those of the groups with a Client, made by NewGroups
	// (their transport and inline): kept here, not in the caller's Group,
	// which may be in other Groups.
	transports map[*Group]reach

	// refs counts the gateway's own reference (until the swap) plus one
	// per statement picking through these groups; at 0 the Routers close.
	refs atomic.Int64

	mu      sync.Mutex
	current []int // smooth weighted round robin state, per group

	// What the config says of the routing inputs besides selectors.
	headerUser, headerSource *regexp.Regexp   // who may name a routing group
	keyHeader                string           // the routing key's header
	now                      func() time.Time // the clock of time of day selectors
	needSQL, needEstimates   bool             // a selector reads them
	hook                     *externalRouting // the external routing hook; nil without
}

// NewGroups returns the routing of groups and selectors. With own set, the
// Groups closes the Routers once it is replaced and no statement uses it
// any more (or on Close); otherwise the caller closes them.
func NewGroups(groups []*Group, selectors []Selector, own bool) (*Groups, error) {
	if len(groups) == 0 {
		return nil, errors.New("gateway: no groups")
	}
	gs := &Groups{groups: groups, selectors: selectors, byName: map[string]*Group{}, owned: own, current: make([]int, len(groups)), transports: map[*Group]reach{},
		keyHeader: DefaultRoutingKeyHeader, now: time.Now}
	total := 0
	for _, gr := range groups {
		if gr.Router == nil {
			return nil, errors.New("gateway: group " + gr.Name + " has no Router")
		}
		if _, dup := gs.byName[gr.Name]; dup {
			return nil, errors.New("gateway: two groups named " + gr.Name)
		}
		gs.byName[gr.Name] = gr
		total += gr.Weight
		if gr.Client != nil {
			gs.transports[gr] = newReach(gr.Client, false, "", false)
		}
	}
	if total == 0 {
		return nil, errors.New("gateway: every group has weight 0: statements no selector claims would have nowhere to go")
	}
	for _, s := range selectors {
		if gs.byName[s.Group] == nil {
			return nil, errors.New("gateway: a selector targets group " + s.Group + ", which does not exist")
		}
		gs.needSQL = gs.needSQL || s.needsSQL()
		gs.needEstimates = gs.needEstimates || len(s.estimates) > 0
	}
	gs.refs.Store(1)
	return gs, nil
}

// Groups returns the groups, in their configured order.
func (gs *Groups) Groups() []*Group { return gs.groups }

// Close closes the Routers now, if the Groups owns them, whatever runs,
// and the idle connections of the transports it made for its groups'
// Clients, which stay usable: the queries of the groups' coordinators page
// on through them (see members).
func (gs *Groups) Close() error {
	if gs.hook != nil {
		gs.hook.close()
	}
	for _, t := range gs.transports {
		if t.inline != nil {
			t.inline.CloseIdleConnections()
		}
	}
	if !gs.owned {
		return nil
	}
	var errs []error
	for _, gr := range gs.groups {
		errs = append(errs, gr.shut())
	}
	return errors.Join(errs...)
}

// shut closes gr's Router, with what it came with (a DSN's discovery).
func (gr *Group) shut() error {
	if gr.close != nil {
		return gr.close()
	}
	return gr.Router.Close()
}

// release drops one reference; the last one closes the Routers.
func (gs *Groups) release() {
	if gs.refs.Add(-1) == 0 {
		_ = gs.Close()
	}
}

// acquire returns the current groups with a reference the caller releases:
// groups replaced meanwhile stay open until their last user is done.
func (g *Gateway) acquire() *Groups {
	for {
		gs := g.groups.Load()
		n := gs.refs.Load()
		if n > 0 && gs.refs.CompareAndSwap(n, n+1) {
			return gs
		}
		// Retired between the load and the count: the new one is in place.
	}
}

// SetGroups makes the gateway route new statements through gs. Statements
// already picking through the groups it replaces go on with them; those
// groups close their Routers when the last one is done. Follow-ups need no
// group: their token names the coordinator.
func (g *Gateway) SetGroups(gs *Groups) {
	old := g.groups.Swap(gs)
	if old != nil && old != gs {
		old.release()
	}
}

// Close closes the groups the gateway routes through now, if it owns them,
// and its idle connections to coordinators. The groups stay in place: a
// request still running after a drain's deadline gets an error from a
// closed Router, not a crash.
func (g *Gateway) Close() error {
	// The gateway's pool, and those of groups a reload dropped, which
	// follow-ups to their coordinators went on using.
	pools := []*pool.InlineTransport{g.reach.inline}
	g.members.mu.Lock()
	for _, rc := range g.members.seen {
		if rc.inline != nil && !slices.Contains(pools, rc.inline) {
			pools = append(pools, rc.inline)
		}
	}
	g.members.mu.Unlock()
	for _, p := range pools {
		if p != nil {
			p.CloseIdleConnections()
		}
	}
	return g.groups.Load().Close()
}

// snapshots returns the current snapshot of every group whose discovery
// is open, with its Router and reach. With wait set it also opens the
// others, all at once, and waits for them; a group whose discovery fails to
// open is left out. Without it, nothing waits: a group whose ZooKeeper does
// not answer holds up no request of the others.
func (g *Gateway) snapshots(ctx context.Context, wait bool) []routerSnapshot {
	gs := g.acquire()
	defer gs.release()
	out := make([]routerSnapshot, len(gs.groups))
	var opening sync.WaitGroup
	for i, gr := range gs.groups {
		if snap, open := gr.Router.OpenSnapshot(); open {
			out[i] = routerSnapshot{gr.Router, snap, g.reachOf(gs, gr)}
			continue
		}
		if !wait {
			continue
		}
		opening.Add(1)
		go func() {
			defer opening.Done()
			if snap, err := gr.Router.Snapshot(ctx); err == nil {
				out[i] = routerSnapshot{gr.Router, snap, g.reachOf(gs, gr)}
			}
		}()
	}
	opening.Wait()
	return slices.DeleteFunc(out, func(rs routerSnapshot) bool { return rs.snap == nil })
}

type routerSnapshot struct {
	router *routing.Router
	snap   *discovery.Snapshot
	reach  reach // how the group's coordinators are reached
}

// reachOf is how the gateway reaches the coordinators of gr, of gs: the group's
// transport, TLS and flavour where it has them, else the gateway's.
func (g *Gateway) reachOf(gs *Groups, gr *Group) reach {
	rc := g.reach
	if t, ok := gs.transports[gr]; ok {
		rc.transport, rc.inline = t.transport, t.inline
	}
	rc.tls = rc.tls || gr.TLS
	if gr.Flavour != "" {
		rc.flavour = gr.Flavour
	}
	return rc
}

// Open opens every group's discovery, for a health check, and returns an
// error naming each group that lists no coordinator: one such group is
// enough to fail, since the statements sent to it fail.
func (g *Gateway) Open(ctx context.Context) error {
	gs := g.acquire()
	defer gs.release()
	var errs []error
	for _, gr := range gs.groups {
		if err := gr.Router.Open(ctx); err != nil {
			if len(gs.groups) > 1 {
				err = fmt.Errorf("group %s: %w", gr.Name, err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reportFailure counts a coordinator's failure in every group's health
// tracker (a coordinator may be in several groups).
func (g *Gateway) reportFailure(ctx context.Context, base string, err error) {
	for _, rs := range g.snapshots(ctx, false) { // a group not open has no health to tell
		for i := range rs.snap.Nodes {
			if rs.reach.base(&rs.snap.Nodes[i]) == base {
				rs.router.Health().Failure(hostOf(base), err)
				break
			}
		}
	}
}

// Groups returns the groups the gateway routes through now, for metrics
// and status pages; a reload may close their Routers afterwards.
func (g *Gateway) Groups() []*Group {
	gs := g.acquire()
	defer gs.release()
	return gs.groups
}
