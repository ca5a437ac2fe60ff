package registrar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
)

// LoadSource names where the registrar reads its coordinator's own count of
// running and queued queries.
type LoadSource string

const (
	// LoadFromPresto reads PrestoDB's GET /v1/cluster (ClusterStatsResource:
	// runningQueries and queuedQueries).
	LoadFromPresto LoadSource = "presto"
	// LoadFromTrino reads Trino's query manager through the JMX resource
	// every Trino server mounts, GET
	// /v1/jmx/mbean/trino.execution:name=QueryManager (airlift's
	// MBeanResource; attributes RunningQueries and QueuedQueries). It needs
	// no configuration on the coordinator, where OpenMetrics needs the
	// mbean exported first (openmetrics.jmx-object-names).
	LoadFromTrino LoadSource = "trino"
)

// Defaults for the zero values of LoadPublishing, the settings the
// simulator chose (zkpresto-lab simulate --json; see BENCHMARKS.md).
const (
	// DefaultLoadInterval is how often the registrar reads its coordinator:
	// often enough that a coordinator gaining its first free slot or losing
	// its last is written within a few tens of milliseconds.
	DefaultLoadInterval = 25 * time.Millisecond
	// DefaultLoadThreshold is how far running+queued must move from the
	// figure last written for a new write.
	DefaultLoadThreshold = 3
	// DefaultLoadMinGap is the mean least time between two writes: the
	// write budget, 10 a second.
	DefaultLoadMinGap = 100 * time.Millisecond
	// DefaultLoadBurst is how many writes may come closer than MinGap
	// after quieter spells (LoadGate.Burst), so that a free/full crossing
	// right after a write is not held back.
	DefaultLoadBurst = 3
	// DefaultLoadRefresh is the longest an unchanged figure goes unwritten,
	// so that clients can tell a quiet coordinator from a stale figure
	// (strategy.DefaultPublishedStaleAfter is three of these).
	DefaultLoadRefresh = 5 * time.Second
	// DefaultLoadUser is the user the figures are read as when
	// LoadPublishing names none: Trino answers its JMX resource only to a
	// request that names a user (401 "Basic authentication or
	// X-Trino-Original-User or X-Trino-User must be sent", from
	// server/security/InsecureAuthenticator.java), so a registrar that sent
	// none published no load at all.
	DefaultLoadUser = "zkpresto"
	// loadReadTimeout bounds one read of the coordinator's figures.
	loadReadTimeout = time.Second
)

// LoadPublishing configures how the registrar publishes its coordinator's
// load in its znode's data (load=running,queued,slots,ms; see
// discovery.PublishedLoad), for shared_p2c.
type LoadPublishing struct {
	// Source says which endpoint to read; required.
	Source LoadSource
	// Interval is how often the coordinator is read; default
	// DefaultLoadInterval.
	Interval time.Duration
	// Threshold is how far running+queued must move for a write; default
	// DefaultLoadThreshold.
	Threshold int
	// MinGap is the mean least time between writes; default
	// DefaultLoadMinGap.
	MinGap time.Duration
	// Burst is how many writes may come closer than MinGap after quieter
	// spells; default DefaultLoadBurst.
	Burst int
	// Refresh is the longest an unchanged figure goes unwritten; default
	// DefaultLoadRefresh. At least MinGap.
	Refresh time.Duration
	// Slots, when positive, is published as the coordinator's concurrency
	// (a resource group's hard limit): shared_p2c then counts a node's load
	// as at least its slots, so that a free slot beats a queue, and the
	// gate writes when the last slot fills or the first one frees.
	Slots int
	// User is sent as the user of the reads (X-Presto-User or
	// X-Trino-User), and with Password as HTTP basic authentication;
	// default DefaultLoadUser. Password is never logged.
	User, Password string
}

func (p LoadPublishing) withDefaults() (LoadPublishing, error) {
	switch p.Source {
	case LoadFromPresto, LoadFromTrino:
	default:
		return p, fmt.Errorf("load source %q: want %q or %q", p.Source, LoadFromPresto, LoadFromTrino)
	}
	if p.Interval == 0 {
		p.Interval = DefaultLoadInterval
	}
	if p.Threshold == 0 {
		p.Threshold = DefaultLoadThreshold
	}
	if p.MinGap == 0 {
		p.MinGap = DefaultLoadMinGap
	}
	if p.Burst == 0 {
		p.Burst = DefaultLoadBurst
	}
	if p.Refresh == 0 {
		p.Refresh = max(DefaultLoadRefresh, p.MinGap)
	}
	switch {
	case p.Interval < 0 || p.Threshold < 0 || p.MinGap < 0 || p.Burst < 0 || p.Refresh < 0 || p.Slots < 0:
		return p, errors.New("load publishing: negative setting")
	case p.Refresh < p.MinGap:
		return p, fmt.Errorf("load publishing: refresh %s is shorter than the minimum gap %s", p.Refresh, p.MinGap)
	case p.Slots > 1_000_000:
		return p, fmt.Errorf("load publishing: %d slots, want at most 1000000", p.Slots)
	case p.Password != "" && p.User == "":
		return p, errors.New("load publishing: a password without a user")
	}
	return p, nil
}

// LoadGate decides when a coordinator's figure is worth a write into its
// znode: never sooner than MinGap after the last (the write budget), and
// then when running+queued moved by Threshold, when the coordinator gained
// its first free slot or lost its last one (with Slots known: running below
// Slots or not), when the last write is Refresh old, or when the figure
// appears or goes. The free/full crossing is what clients most need to see
// soon (a free slot starts a statement at once, a full node queues it), so
// it spends the budget even when the total moved by less than Threshold.
// The registrar and the load simulator run this same gate. The zero value
// with the fields set is ready; it is not safe for concurrent use.
type LoadGate struct {
	Threshold       int
	MinGap, Refresh time.Duration
	// Burst is how many writes may follow each other closer than MinGap
	// when earlier gaps were longer: the budget is a bucket of Burst
	// writes refilled at one per MinGap, so writes average at most one per
	// MinGap over any long span. 0 means 1, every two writes MinGap apart.
	Burst int
	// Slots is the coordinator's concurrency; 0 unknown, and no crossing is
	// tracked.
	Slots int

	wrote    bool // a figure was written since registering
	spent    bool // the bucket was drawn on since registering
	known    bool // the last write carried a figure
	last     int  // its running+queued
	lastFree bool // its running was below Slots
	lastAt   time.Time
	tokens   float64 // writes left in the bucket at tokensAt
	tokensAt time.Time
}

// available returns the writes the budget allows at now.
func (g *LoadGate) available(now time.Time) float64 {
	burst := float64(max(g.Burst, 1))
	if !g.spent {
		return burst
	}
	if g.MinGap <= 0 {
		return math.Inf(1)
	}
	return min(burst, g.tokens+float64(now.Sub(g.tokensAt))/float64(g.MinGap))
}

// Spend records a write of the znode that carried no new figure (the
// registrar's readiness change): it takes its write from the budget, and
// leaves the figures' own rules (Threshold, Refresh) as they were.
func (g *LoadGate) Spend(now time.Time) {
	g.tokens = max(g.available(now)-1, 0)
	g.spent, g.tokensAt = true, now
}

// Due reports whether to write now the figures running and queued (known
// false: no figure, the read failed).
func (g *LoadGate) Due(now time.Time, running, queued int, known bool) bool {
	if g.available(now) < 1 {
		return false
	}
	switch {
	case !g.wrote:
		return known
	case known != g.known:
		return true
	case !known:
		return false // nothing to refresh
	case g.Slots > 0 && (running < g.Slots) != g.lastFree:
		return true
	}
	return abs(running+queued-g.last) >= g.Threshold || now.Sub(g.lastAt) >= g.Refresh
}

// Written records a write of the figures.
func (g *LoadGate) Written(now time.Time, running, queued int, known bool) {
	g.Spend(now)
	g.wrote, g.known, g.last, g.lastFree, g.lastAt = true, known, running+queued, running < g.Slots, now
}

func abs(x int) int { return max(x, -x) }

// loadReader reads one coordinator's figures.
type loadReader struct {
	http   *http.Client
	url    string
	source LoadSource
	user   string
	pass   string
}

func newLoadReader(client *http.Client, coordinator string, p LoadPublishing) *loadReader {
	path := "/v1/cluster"
	if p.Source == LoadFromTrino {
		path = "/v1/jmx/mbean/" + url.PathEscape("trino.execution:name=QueryManager")
	}
	user := p.User
	if user == "" {
		user = DefaultLoadUser
	}
	return &loadReader{http: client, url: strings.TrimRight(coordinator, "/") + path, source: p.Source, user: user, pass: p.Password}
}

// loadMaxBody bounds what a figures' answer may be; the QueryManager mbean
// lists a few hundred attributes.
const loadMaxBody = 1 << 20

// read returns the coordinator's running and queued queries.
func (l *loadReader) read(ctx context.Context) (running, queued int, err error) {
	body, err := getCoordinatorJSON(ctx, l.http, l.url, l.source == LoadFromTrino, l.user, l.pass)
	if err != nil {
		return 0, 0, err
	}
	if l.source == LoadFromTrino {
		running, queued, err = parseTrinoQueryManager(body)
	} else {
		running, queued, err = parsePrestoCluster(body)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("GET %s: %w", l.url, err)
	}
	return running, queued, nil
}

// getCoordinatorJSON GETs u from a coordinator as user (X-Trino-User to
// Trino, else X-Presto-User; with basic authentication when pass is set),
// within loadReadTimeout, and returns the body of a 200 answer of at most
// loadMaxBody bytes. Its errors begin "GET u: ".
func getCoordinatorJSON(ctx context.Context, client *http.Client, u string, trino bool, user, pass string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, loadReadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if user != "" {
		header := "X-Presto-User"
		if trino {
			header = "X-Trino-User"
		}
		req.Header.Set(header, user)
		if pass != "" {
			req.SetBasicAuth(user, pass)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, loadMaxBody+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("GET %s: %w", u, err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	case len(body) > loadMaxBody:
		return nil, fmt.Errorf("GET %s: answer larger than %d bytes", u, loadMaxBody)
	}
	return body, nil
}

// parsePrestoCluster reads /v1/cluster's ClusterStats.
func parsePrestoCluster(body []byte) (running, queued int, err error) {
	var stats struct {
		Running *int64 `json:"runningQueries"`
		Queued  *int64 `json:"queuedQueries"`
	}
	if err := json.Unmarshal(body, &stats); err != nil {
		return 0, 0, fmt.Errorf("cluster stats: %w", err)
	}
	if stats.Running == nil || stats.Queued == nil {
		return 0, 0, errors.New("cluster stats without runningQueries and queuedQueries")
	}
	return checkFigures(*stats.Running, *stats.Queued)
}

// parseTrinoQueryManager reads the QueryManager mbean's attributes.
func parseTrinoQueryManager(body []byte) (running, queued int, err error) {
	var mbean struct {
		Attributes []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"attributes"`
	}
	if err := json.Unmarshal(body, &mbean); err != nil {
		return 0, 0, fmt.Errorf("QueryManager mbean: %w", err)
	}
	var r, q *int64
	for _, a := range mbean.Attributes {
		var dst **int64
		switch a.Name {
		case "RunningQueries":
			dst = &r
		case "QueuedQueries":
			dst = &q
		default:
			continue
		}
		var v int64
		if err := json.Unmarshal(a.Value, &v); err != nil {
			return 0, 0, fmt.Errorf("QueryManager mbean: attribute %s: %w", a.Name, err)
		}
		*dst = &v
	}
	if r == nil || q == nil {
		return 0, 0, errors.New("QueryManager mbean without RunningQueries and QueuedQueries")
	}
	return checkFigures(*r, *q)
}

// loadMaxQueries is the largest figure published, as discovery reads it.
const loadMaxQueries = 1_000_000

func checkFigures(running, queued int64) (int, int, error) {
	if running < 0 || queued < 0 || running > loadMaxQueries || queued > loadMaxQueries {
		return 0, 0, fmt.Errorf("figures out of range: %d running, %d queued", running, queued)
	}
	return int(running), int(queued), nil
}

// publishLoad reads the coordinator's figures and writes them into the
// znode when the gate says they are worth it. A read that fails takes the
// figure out, so that clients fall back to their own counts at once rather
// than when it goes stale.
func (r *Registrar) publishLoad(ctx context.Context) {
	if r.znode == "" || r.conn.State() != zk.StateHasSession || r.conn.SessionID() != r.znodeSession {
		return
	}
	running, queued, err := r.loadReader.read(ctx)
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	known := err == nil
	if err != nil {
		r.problems.warn(groupLoad, err.Error(), false, "cannot read the coordinator's load; publishing none",
			"coordinator", r.cfg.CoordinatorURL, "err", err)
	} else {
		r.problems.recover(groupLoad, "reading the coordinator's load again", "coordinator", r.cfg.CoordinatorURL)
	}
	if !r.loadGate.Due(now, running, queued, known) {
		return
	}
	node, err := r.desired()
	if err != nil {
		return // reconcile reports it
	}
	if known {
		node.Load = discovery.PublishedLoad{Running: running, Queued: queued, Slots: r.load.Slots, ReadAt: now}
	}
	if _, err := r.conn.Set(r.znode, discovery.FormatZnodeData(node), -1); err != nil {
		_ = r.fail(err, "publishing the load in "+r.znode) // transient: a fatal error shows in reconcile
		return
	}
	r.loadGate.Written(now, running, queued, known)
	r.update(func(s *Status) {
		s.LoadWrites++
		s.Load = node.Load
	})
}
