// Package fleet runs a local ZooKeeper and local Presto or Trino
// coordinator simulators, and registers the coordinators in ZooKeeper in any
// of the node formats the driver reads, with any weight, one at a time:
// the parts package zkprestotest builds its clusters from, for tests that
// need registrations of their own (several formats side by side, weights,
// secured namespaces, an external ensemble). Like zkprestotest it needs
// Debian's "zookeeper" package (see package zkserver).
package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Options configure a Fleet.
type Options struct {
	// Coordinators is how many coordinators to start (named c1..cN).
	Coordinators int
	// Namespace is the znode under which coordinators register; default "presto".
	Namespace string
	// Ensemble, when set, is an external ZooKeeper to use instead of starting one.
	Ensemble string
	// ZooKeeper configures the ZooKeeper the fleet starts.
	ZooKeeper zkserver.Options
	// Coordinator is the template for every coordinator (Name is replaced).
	Coordinator coordinator.Options
}

// Fleet is a running ZooKeeper and coordinators. Its own ZooKeeper session
// owns the registrations, which are ephemeral.
type Fleet struct {
	// ZooKeeper is the server the fleet started; nil with Options.Ensemble.
	ZooKeeper *zkserver.Server
	// Coordinators are the running coordinators, c1..cN.
	Coordinators []*coordinator.Coordinator
	// Namespace is the registration namespace, without slashes.
	Namespace string

	ensemble string
	conn     *zk.Conn

	mu         sync.Mutex
	registered map[string]string // coordinator addr → znode path
}

// Start starts ZooKeeper (unless opts.Ensemble is set) and the coordinators,
// and creates the namespace. Nothing is registered yet.
func Start(opts Options) (f *Fleet, err error) {
	f = &Fleet{Namespace: strings.Trim(opts.Namespace, "/"), registered: map[string]string{}}
	if f.Namespace == "" {
		f.Namespace = "presto"
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	f.ensemble = opts.Ensemble
	if f.ensemble == "" {
		if f.ZooKeeper, err = zkserver.Start(opts.ZooKeeper); err != nil {
			return nil, err
		}
		f.ensemble = f.ZooKeeper.Addr()
	}
	if opts.Coordinators > 0 {
		if f.Coordinators, err = coordinator.StartFleet(opts.Coordinators, opts.Coordinator); err != nil {
			return nil, err
		}
	}
	if f.conn, err = Dial(f.ensemble); err != nil {
		return nil, err
	}
	if err = CreatePath(f.conn, "/"+f.Namespace); err != nil {
		return nil, err
	}
	return f, nil
}

// Dial opens a ZooKeeper session to ensemble and waits for it, at most 10s.
func Dial(ensemble string) (*zk.Conn, error) {
	conn, events, err := zk.Connect(strings.Split(ensemble, ","), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, fmt.Errorf("fleet: ZooKeeper %s: %w", ensemble, err)
	}
	deadline := time.After(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			conn.Close()
			return nil, fmt.Errorf("fleet: ZooKeeper %s: no session within 10s", ensemble)
		}
	}
	return conn, nil
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// CreatePath creates path and its parents as persistent znodes.
func CreatePath(conn *zk.Conn, path string) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("fleet: creating %s: %w", cur, err)
		}
	}
	return nil
}

// Registrations reads the registrations under path through conn, by znode
// name, as discovery reads them. A path that does not exist holds none; a
// znode discovery cannot read is an error.
func Registrations(conn *zk.Conn, path string) (map[string]discovery.Node, error) {
	names, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: listing %s: %w", path, err)
	}
	out := make(map[string]discovery.Node, len(names))
	for _, name := range names {
		data, _, err := conn.Get(path + "/" + name)
		if errors.Is(err, zk.ErrNoNode) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("fleet: reading %s/%s: %w", path, name, err)
		}
		n, err := discovery.ParseZnode(name, data)
		if err != nil {
			return nil, fmt.Errorf("fleet: unreadable registration %s: %w", name, err)
		}
		out[name] = n
	}
	return out, nil
}

// Ensemble returns the ZooKeeper connect string.
func (f *Fleet) Ensemble() string { return f.ensemble }

// Conn returns the fleet's own ZooKeeper session.
func (f *Fleet) Conn() *zk.Conn { return f.conn }

// DSN returns a zkpresto DSN for the fleet's namespace, with extra appended
// (";key=value" and/or "?key=value" parts).
func (f *Fleet) DSN(extra string) string { return f.DSNFor("presto", f.ensemble, extra) }

// DSNFor is DSN with another scheme ("presto" or "trino") and ZooKeeper
// connect string, such as a proxy's address in front of the fleet's
// ZooKeeper.
func (f *Fleet) DSNFor(scheme, ensemble, extra string) string {
	return scheme + "://" + ensemble + "/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=" + f.Namespace + extra
}

// SecureNamespace authenticates the fleet's session as user with
// ZooKeeper's digest scheme, creates the namespace /name with acl, and makes
// it the fleet's namespace: the fleet then registers there as user.
func (f *Fleet) SecureNamespace(name, user, password string, acl []zk.ACL) error {
	if err := f.conn.AddAuth("digest", []byte(user+":"+password)); err != nil {
		return fmt.Errorf("fleet: authenticating as %s: %w", user, err)
	}
	if _, err := f.conn.Create("/"+name, nil, 0, acl); err != nil {
		return fmt.Errorf("fleet: creating /%s: %w", name, err)
	}
	f.Namespace = name
	return nil
}

// Register writes c's registration in the given format with weight (ignored
// by formats that cannot carry one) and returns the znode path.
func (f *Fleet) Register(c *coordinator.Coordinator, format discovery.Format, weight int) (string, error) {
	name, data, flags, err := Znode(format, discovery.Node{Addr: c.Addr(), Scheme: c.Scheme(), Weight: weight, Version: "0.289"})
	if err != nil {
		return "", err
	}
	path, err := f.conn.Create("/"+f.Namespace+"/"+name, data, flags, zk.WorldACL(zk.PermAll))
	if err != nil {
		return "", fmt.Errorf("fleet: registering %s: %w", c.Name(), err)
	}
	f.mu.Lock()
	f.registered[c.Addr()] = path
	f.mu.Unlock()
	return path, nil
}

// Deregister deletes c's registration.
func (f *Fleet) Deregister(c *coordinator.Coordinator) error {
	f.mu.Lock()
	path, ok := f.registered[c.Addr()]
	delete(f.registered, c.Addr())
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("fleet: %s is not registered", c.Name())
	}
	if err := f.conn.Delete(path, -1); err != nil {
		return fmt.Errorf("fleet: deregistering %s: %w", c.Name(), err)
	}
	return nil
}

// Znode returns the child name, data and create flags that register node in
// the given format, as the systems that use each format write it.
func Znode(format discovery.Format, node discovery.Node) (name string, data []byte, flags int32, err error) {
	host, portStr, err := net.SplitHostPort(node.Addr)
	if err != nil {
		return "", nil, 0, fmt.Errorf("fleet: address %q: %w", node.Addr, err)
	}
	port, _ := strconv.Atoi(portStr)
	switch format {
	case discovery.FormatZkpresto:
		return discovery.ZnodeName(node), discovery.FormatZnodeData(node), zk.FlagEphemeral | zk.FlagSequence, nil
	case discovery.FormatHive:
		// As Kyuubi names its servers; the data is what HiveServer2 writes.
		name = "serverUri=" + node.Addr + ";version=" + node.Version + ";sequence="
		data = []byte("hive.server2.thrift.bind.host=" + host + ";hive.server2.thrift.port=" + portStr + ";hive.server2.transport.mode=binary")
		return name, data, zk.FlagEphemeral | zk.FlagSequence, nil
	case discovery.FormatCurator:
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", port, time.Now().UnixNano()&0xffffffffffff)
		instance := map[string]any{
			"name": "presto", "id": id, "address": host, "port": port, "sslPort": nil,
			"payload":             map[string]any{"weight": node.Weight, "version": node.Version},
			"registrationTimeUTC": time.Now().UnixMilli(), "serviceType": "DYNAMIC",
			"uriSpec": map[string]any{"parts": []map[string]any{{"value": "scheme", "variable": true}}},
		}
		data, err = json.Marshal(instance)
		return id, data, zk.FlagEphemeral, err
	case discovery.FormatHostPort:
		return node.Addr, nil, zk.FlagEphemeral, nil
	}
	return "", nil, 0, fmt.Errorf("fleet: cannot write format %s", format)
}

// Close deletes the registrations (by closing the session) and stops
// everything the fleet started.
func (f *Fleet) Close() error {
	if f.conn != nil {
		f.conn.Close()
	}
	for _, c := range f.Coordinators {
		c.Close()
	}
	if f.ZooKeeper != nil {
		return f.ZooKeeper.Close()
	}
	return nil
}
