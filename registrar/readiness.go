package registrar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/zkconn"
)

// Reasons a registration is marked not ready with (discovery.Node.NotReady),
// besides a leaving node state written as the coordinator names it
// ("SHUTTING_DOWN", "DRAINING", "DRAINED").
const (
	// NotReadyStarting: GET /v1/info says "starting": true.
	NotReadyStarting = "starting"
	// NotReadyDrained: an operator drained the coordinator (SetDrained,
	// `zkpresto drain`).
	NotReadyDrained = "drained"
	// notReadyWorkers prefixes "workers:N/M": N active workers, fewer than
	// the M of Config.MinWorkers.
	notReadyWorkers = "workers:"
)

// workersCandidate is one place a server publishes its active workers.
type workersCandidate struct {
	path  string
	trino bool // Trino's JMX resource: X-Trino-User, an mbean's ActiveNodeCount
}

// The places a coordinator's active workers are read from, in the order
// tried for an unknown server.
//
// Trino: the node manager mbean's ActiveNodeCount, through the JMX resource
// every Trino server mounts (airlift's MBeanResource). Up to Trino 476 the
// mbean is io.trino.metadata.DiscoveryNodeManager (getActiveNodeCount,
// @Managed: getAllNodes().getActiveNodes().size()); later releases moved it
// to io.trino.node.CoordinatorNodeManager, with the same attribute. The
// count includes the coordinator itself, which is taken off here: with
// node-scheduler.include-coordinator=true run the registrar with
// MinWorkers 0.
//
// PrestoDB: GET /v1/cluster (ClusterStatsResource.getClusterStats):
// activeWorkers is the active nodes less the resource managers'
// dispatchers, and less the coordinator unless
// node-scheduler.include-coordinator is set.
var (
	workersTrino = []workersCandidate{
		{path: "/v1/jmx/mbean/" + url.PathEscape("trino.metadata:name=DiscoveryNodeManager"), trino: true},
		{path: "/v1/jmx/mbean/" + url.PathEscape("trino.node:name=CoordinatorNodeManager"), trino: true},
	}
	workersPresto = []workersCandidate{{path: "/v1/cluster"}}
)

// workersReader reads a coordinator's active workers, from the first
// candidate that answers; it keeps to the one that answered last.
type workersReader struct {
	http       *http.Client
	base       string
	candidates []workersCandidate
	last       int
	user, pass string
}

func newWorkersReader(client *http.Client, coordinator string, source LoadSource, user, pass string) *workersReader {
	var c []workersCandidate
	switch source {
	case LoadFromTrino:
		c = workersTrino
	case LoadFromPresto:
		c = workersPresto
	default:
		c = append(append(c, workersTrino...), workersPresto...)
	}
	if user == "" {
		user = DefaultLoadUser
	}
	return &workersReader{http: client, base: strings.TrimRight(coordinator, "/"), candidates: c, user: user, pass: pass}
}

// ActiveWorkers reads, once, the active workers of the coordinator at
// coordinatorURL as the registrar does for Config.MinWorkers: source says
// which server it is (empty: each is tried), user and password are sent
// with the read (user default DefaultLoadUser). client nil means
// http.DefaultClient.
func ActiveWorkers(ctx context.Context, client *http.Client, coordinatorURL string, source LoadSource, user, password string) (int, error) {
	if client == nil {
		client = http.DefaultClient
	}
	return newWorkersReader(client, coordinatorURL, source, user, password).read(ctx)
}

// read returns the coordinator's active workers.
func (w *workersReader) read(ctx context.Context) (int, error) {
	var errs []error
	for i := range w.candidates {
		k := (w.last + i) % len(w.candidates)
		n, err := w.readOne(ctx, w.candidates[k])
		if err == nil {
			w.last = k
			return n, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return 0, errors.Join(errs...)
}

func (w *workersReader) readOne(ctx context.Context, c workersCandidate) (int, error) {
	u := w.base + c.path
	body, err := getCoordinatorJSON(ctx, w.http, u, c.trino, w.user, w.pass)
	if err != nil {
		return 0, err
	}
	var n int64
	if c.trino {
		var mbean struct {
			Attributes []struct {
				Name  string          `json:"name"`
				Value json.RawMessage `json:"value"`
			} `json:"attributes"`
		}
		if err := json.Unmarshal(body, &mbean); err != nil {
			return 0, fmt.Errorf("GET %s: %w", u, err)
		}
		found := false
		for _, a := range mbean.Attributes {
			if a.Name == "ActiveNodeCount" {
				if err := json.Unmarshal(a.Value, &n); err != nil {
					return 0, fmt.Errorf("GET %s: ActiveNodeCount: %w", u, err)
				}
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("GET %s: no ActiveNodeCount attribute", u)
		}
		n-- // the coordinator itself
	} else {
		var stats struct {
			ActiveWorkers *int64 `json:"activeWorkers"`
		}
		if err := json.Unmarshal(body, &stats); err != nil {
			return 0, fmt.Errorf("GET %s: %w", u, err)
		}
		if stats.ActiveWorkers == nil {
			return 0, fmt.Errorf("GET %s: no activeWorkers", u)
		}
		n = *stats.ActiveWorkers
	}
	return int(min(max(n, 0), loadMaxQueries)), nil
}

// DrainPath is the persistent znode that marks the coordinator at addr
// (host:port, as discovery.CanonicalAddr writes it) drained in namespace:
// /<namespace>-drain/<addr>, beside the namespace as Kyuubi's counter is
// (/<namespace>-counter), so that no reader of the namespace sees it. Its
// registrar watches it and, while it exists, marks the coordinator's
// registration notready=drained.
func DrainPath(namespace, addr string) string {
	return "/" + strings.Trim(namespace, "/") + "-drain/" + addr
}

// drainSessionWait bounds how long SetDrained waits for a session.
const drainSessionWait = 10 * time.Second

// SetDrained marks the coordinator at addr (host:port, or
// http(s)://host:port) drained (on) or takes the mark away, in the
// ZooKeeper ensemble and namespace of cfg (Servers, Namespace, Auth, TLS
// and SessionTimeout are used; the rest is ignored). The mark is a
// persistent znode (DrainPath): it outlives the registrar's session, the
// clients' and the gateways', until it is taken away. Marking a marked
// coordinator, or unmarking an unmarked one, does nothing.
func SetDrained(ctx context.Context, cfg Config, addr string, on bool) error {
	if i := strings.Index(addr, "://"); i >= 0 {
		addr = strings.TrimSuffix(addr[i+3:], "/")
	}
	canon, err := discovery.CanonicalAddr(addr)
	if err != nil {
		return fmt.Errorf("registrar: coordinator address %q: %w", addr, err)
	}
	servers, err := zkconn.Servers(cfg.Servers)
	if err != nil {
		return fmt.Errorf("registrar: %w", err)
	}
	ns := strings.Trim(cfg.Namespace, "/")
	if ns == "" {
		ns = DefaultNamespace
	}
	if _, err := zkconn.Path(ns); err != nil {
		return fmt.Errorf("registrar: namespace %q: %w", cfg.Namespace, err)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	zc := zkconn.Config{Servers: servers, SessionTimeout: cfg.SessionTimeout, TLS: cfg.TLS, Logger: cfg.Logger}
	acl := zk.WorldACL(zk.PermAll)
	if cfg.Auth != nil {
		zc.AuthScheme, zc.Auth = cfg.Auth.Scheme, cfg.Auth.Credentials
		acl = append(zk.WorldACL(zk.PermRead), zk.AuthACL(zk.PermAll)...)
	}
	conn, err := zkconn.Connect(zc, nil)
	if err != nil {
		return fmt.Errorf("registrar: ZooKeeper %s: %w", strings.Join(servers, ","), err)
	}
	defer conn.Close()
	wait, cancel := context.WithTimeout(ctx, drainSessionWait)
	defer cancel()
	for conn.State() != zk.StateHasSession {
		select {
		case <-wait.Done():
			return fmt.Errorf("registrar: ZooKeeper %s: no session within %s", strings.Join(servers, ","), drainSessionWait)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if cfg.Auth != nil {
		if err := zkconn.AddAuth(wait, conn, zc); err != nil {
			return fmt.Errorf("registrar: ZooKeeper %s: %w", strings.Join(servers, ","), err)
		}
	}
	path := DrainPath(ns, canon)
	if !on {
		if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("registrar: deleting %s: %w", path, err)
		}
		return nil
	}
	parent := path[:strings.LastIndex(path, "/")]
	if _, err := conn.Create(parent, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("registrar: creating %s: %w", parent, err)
	}
	data := []byte("drained at " + time.Now().UTC().Format(time.RFC3339))
	if _, err := conn.Create(path, data, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("registrar: creating %s: %w", path, err)
	}
	return nil
}

// drainMarked reports whether the coordinator's drain mark exists, setting
// a watch on it that nudges the loop when it appears or goes. A failed
// read keeps the last answer.
func (r *Registrar) drainMarked(conn *zk.Conn) bool {
	if r.drainWatchArmed.Load() {
		return r.drainMark.Load()
	}
	exists, _, events, err := conn.ExistsW(r.drainPath)
	if err != nil {
		return r.drainMark.Load()
	}
	r.drainMark.Store(exists)
	r.drainWatchArmed.Store(true)
	r.watchers.Add(1)
	go func() {
		defer r.watchers.Done()
		select {
		case <-events:
			r.drainWatchArmed.Store(false)
			r.nudge()
		case <-r.stopWatches:
		}
	}()
	return exists
}
