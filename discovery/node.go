// Package discovery finds the live Presto coordinators a driver may use.
//
// A Discoverer keeps an immutable Snapshot of the current nodes. Reading the
// snapshot never does I/O, so a strategy can pick on every connection without
// touching the network; a change of membership publishes a new Snapshot and
// tells the subscribers. Status says, also without I/O, whether the source
// is reachable and why a snapshot may be empty. Two implementations ship: ZooKeeper (one shared,
// watched session per ensemble, namespace and credentials in a process) and
// Static (a fixed host list).
package discovery

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/hostport"
)

// Format says which znode layout a node was read from.
type Format uint8

const (
	// FormatStatic is a node from a fixed host list, not from ZooKeeper.
	FormatStatic Format = iota
	// FormatHive is a Hive/Kyuubi child name such as
	// "serverUri=host:port;version=V;sequence=N", with empty, host:port or k=v; data.
	FormatHive
	// FormatCurator is an Apache Curator ServiceInstance stored as JSON data.
	FormatCurator
	// FormatHostPort is a plain "host:port" child name with empty data.
	FormatHostPort
	// FormatZkpresto is what `zkpresto register` writes: a Hive-style name plus
	// k=v; data carrying uri=, weight=, zone= and version=.
	FormatZkpresto
)

var formatNames = [...]string{"static", "hive", "curator", "hostport", "zkpresto"}

// String returns the lower-case name of the format.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "format(" + strconv.Itoa(int(f)) + ")"
}

// Node is one coordinator. Nodes inside a Snapshot are shared between
// goroutines and must be treated as read-only, Metadata included.
type Node struct {
	// Addr is "host:port" (IPv6 hosts in brackets), the node's identity,
	// written as CanonicalAddr writes it.
	Addr string
	// Scheme is "http" or "https".
	Scheme string
	// Weight is the node's relative capacity, at least 1.
	Weight int
	// Zone is the node's zone or rack, for zone-aware strategies; may be empty.
	Zone string
	// Version is the server version the node registered with; may be empty.
	Version string
	// ID names the node's registration: the znode child name, a Curator
	// instance id, or the address for static nodes.
	ID string
	// Format is the layout the node was read from.
	Format Format
	// Metadata holds the remaining key/value pairs of the registration.
	Metadata map[string]string
	// Load is what the coordinator published about its own load (zkpresto
	// registrations with load=; see PublishedLoad). A malformed figure is
	// left out, so the node is balanced as one that publishes nothing.
	Load PublishedLoad
	// NotReady, when not empty, is why the coordinator's registrar says it
	// must get no new statement although it answers: "starting", a node
	// state such as "SHUTTING_DOWN", "workers:0/1" (fewer active workers
	// than the registrar requires) or "drained" (an operator's mark; see
	// `zkpresto drain`). Routing skips such a node while another is ready.
	// Only zkpresto registrations carry it (notready=); every other format
	// is ready.
	NotReady string
}

// Ready reports whether the node takes new statements: its registration
// carries no notready= mark.
func (n *Node) Ready() bool { return n.NotReady == "" }

// MetadataWebUI is the Metadata key of the address users reach the
// coordinator's web UI at, http[s]://host[:port][/prefix], when it is not
// the coordinator's own (a proxy or an ingress in front of the UI): the
// gateway sends a query's infoUri there. zkpresto register --web-ui writes
// it.
const MetadataWebUI = "webUI"

// WebUI returns the base URL of the coordinator's web UI: the registration's
// MetadataWebUI when set, else URL.
func (n *Node) WebUI() string {
	if ui := strings.TrimSuffix(n.Metadata[MetadataWebUI], "/"); ui != "" {
		return ui
	}
	return n.URL()
}

// URL returns the coordinator's base URL, e.g. "http://10.0.0.1:8080".
func (n *Node) URL() string {
	scheme := n.Scheme
	if scheme == "" {
		scheme = "http"
	}
	return scheme + "://" + n.Addr
}

// Host returns the host part of Addr, without brackets.
func (n *Node) Host() string {
	host, _, err := net.SplitHostPort(n.Addr)
	if err != nil {
		return n.Addr
	}
	return host
}

// Snapshot is an immutable view of the live nodes at one moment. Nodes are
// sorted by Addr and unique by Addr, so strategies see a stable order; see
// NewSnapshot for which registration of an address wins.
type Snapshot struct {
	// Nodes are the live coordinators, sorted by Addr.
	Nodes []Node
	// Source names where the nodes came from, e.g. "zk1:2181,zk2:2181/presto";
	// it appears in errors and logs and never carries credentials.
	Source string
	// Generation increases with every snapshot a discoverer publishes.
	Generation uint64
}

// NewSnapshot builds a snapshot from nodes: it writes each Addr that
// CanonicalAddr accepts in its canonical form, fills defaults (scheme http,
// weight 1, ID = Addr) and sorts by Addr.
//
// When several nodes have the same Addr (one coordinator registered twice,
// perhaps in two spellings such as "[::1]:8080" and
// "[0:0:0:0:0:0:0:1]:8080"), the one whose ID sorts first wins; for
// ZooKeeper nodes the ID is the child name, or the Curator instance id. Ties
// go to the lower Format, then scheme, weight, zone, version and metadata,
// so the winner never depends on the order of nodes, which for ZooKeeper
// children is not stable. The nodes slice is copied; the caller may reuse it.
func NewSnapshot(source string, generation uint64, nodes []Node) *Snapshot {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		if addr, err := canonicalAddr(n.Addr); err == nil {
			n.Addr = addr
		}
		if n.Scheme == "" {
			n.Scheme = "http"
		}
		if n.Weight < 1 {
			n.Weight = 1
		}
		if n.ID == "" {
			n.ID = n.Addr
		}
		out = append(out, n)
	}
	slices.SortFunc(out, compareNodes)
	out = slices.CompactFunc(out, func(a, b Node) bool { return a.Addr == b.Addr })
	return &Snapshot{Nodes: slices.Clip(out), Source: source, Generation: generation}
}

// compareNodes orders nodes by Addr and, within one Addr, puts the
// registration that wins first.
func compareNodes(a, b Node) int {
	return cmp.Or(
		strings.Compare(a.Addr, b.Addr),
		strings.Compare(a.ID, b.ID),
		cmp.Compare(a.Format, b.Format),
		strings.Compare(a.Scheme, b.Scheme),
		cmp.Compare(a.Weight, b.Weight),
		strings.Compare(a.Zone, b.Zone),
		strings.Compare(a.Version, b.Version),
		compareMetadata(a.Metadata, b.Metadata),
	)
}

// compareMetadata orders metadata maps by their sorted key/value pairs.
func compareMetadata(a, b map[string]string) int {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if c := cmp.Or(strings.Compare(ka[i], kb[i]), strings.Compare(a[ka[i]], b[kb[i]])); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ka), len(kb))
}

// CanonicalAddr returns hostport ("host:port", or "[v6]:port") in the one
// spelling by which nodes are known: an IP address in its canonical text
// form (netip's: IPv6 compressed and in lower case, an IPv4-mapped IPv6
// address as IPv4; a zone is kept as written), a host name in lower case,
// and the port in decimal without leading zeros. So "[0:0:0:0:0:0:0:1]:8080",
// as Java (and so Apache Curator) writes the address, and "[::1]:8080" are
// the same node. ParseZnode and NewSnapshot write every Addr this way; the
// driver does the same with the DSN's hosts and weights= keys.
func CanonicalAddr(hostport string) (string, error) {
	addr, err := canonicalAddr(hostport)
	if err != nil {
		return "", fmt.Errorf("discovery: address %s: %w", znodeQuote(hostport), err)
	}
	return addr, nil
}

// canonicalAddr is CanonicalAddr with errors that do not quote the address.
func canonicalAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var addrErr *net.AddrError
		if errors.As(err, &addrErr) {
			// net's messages say "missing port in address" and the like.
			return "", errors.New(addrErr.Err)
		}
		return "", err
	}
	if err := checkZnodeHost(host); err != nil {
		return "", err
	}
	p, err := parseZnodePort(port)
	if err != nil {
		return "", err
	}
	return hostport.Join(host, p), nil
}

// Addrs returns the addresses of the snapshot's nodes, in order.
func (s *Snapshot) Addrs() []string {
	addrs := make([]string, len(s.Nodes))
	for i := range s.Nodes {
		addrs[i] = s.Nodes[i].Addr
	}
	return addrs
}

// Discoverer supplies the current set of coordinators.
//
// Implementations are safe for concurrent use. Snapshot never blocks on I/O.
type Discoverer interface {
	// Snapshot returns the latest snapshot. It may hold no nodes.
	Snapshot() *Snapshot
	// Subscribe calls fn with every snapshot published after the call, in
	// order, from one goroutine at a time. fn must not block for long. The
	// returned function stops the calls.
	Subscribe(fn func(*Snapshot)) (cancel func())
	// Status reports whether the discoverer can see its source and why its
	// snapshot may be empty or out of date, without I/O.
	Status() Status
	// Close releases the discoverer's resources.
	Close() error
}

// Status describes a discoverer's view of its source, for errors, logs and
// operators. Discoverer.Status returns it, so a caller can report on any
// discoverer without knowing which kind it holds; fields that mean nothing
// for a source (a session for a static list) stay zero.
type Status struct {
	// Connected is true while the discoverer can see its source: a live
	// ZooKeeper session; always true for a static list.
	Connected bool
	// StaleSince is when the connection was lost; zero while connected.
	StaleSince time.Time
	// LastChange is when the node set last changed; for a static list,
	// when it was created.
	LastChange time.Time
	// Nodes is the number of nodes in the current snapshot.
	Nodes int
	// Skipped is the number of children that could not be parsed.
	Skipped int
	// Problem explains an empty snapshot, e.g. a missing namespace, or why
	// the snapshot may be out of date, e.g. the namespace cannot be read
	// without credentials; empty otherwise.
	Problem string
	// Server is the ensemble member the session is connected to; empty
	// while disconnected and for a static list.
	Server string
	// SessionID is the current session's id (ZooKeeper's logs and
	// four-letter commands show it in hex); 0 while there is none.
	SessionID int64
	// SessionsExpired counts the sessions that expired and were replaced by
	// a new one.
	SessionsExpired int
}

// publisher holds the current snapshot and the subscribers; the ZooKeeper
// and static discoverers embed it.
type publisher struct {
	current atomic.Pointer[Snapshot]

	publishMu sync.Mutex // serialises publish, so subscribers see snapshots in order
	mu        sync.Mutex // guards subs; never held while a subscriber runs
	subs      map[int]func(*Snapshot)
	nextID    int
}

func (p *publisher) Snapshot() *Snapshot { return p.current.Load() }

func (p *publisher) Subscribe(fn func(*Snapshot)) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subs == nil {
		p.subs = make(map[int]func(*Snapshot))
	}
	id := p.nextID
	p.nextID++
	p.subs[id] = fn
	return func() {
		p.mu.Lock()
		delete(p.subs, id)
		p.mu.Unlock()
	}
}

// publish stores s and tells the subscribers. Only publishMu is held while
// they run, so a subscriber may cancel its own subscription.
func (p *publisher) publish(s *Snapshot) {
	p.publishMu.Lock()
	defer p.publishMu.Unlock()
	p.current.Store(s)
	p.mu.Lock()
	fns := make([]func(*Snapshot), 0, len(p.subs))
	for _, fn := range p.subs {
		fns = append(fns, fn)
	}
	p.mu.Unlock()
	for _, fn := range fns {
		fn(s)
	}
}

// Static is a Discoverer over a fixed list of nodes.
type Static struct {
	publisher
	created time.Time
}

// NewStatic returns a discoverer that always serves nodes. source names the
// list in errors, e.g. the DSN's host list.
func NewStatic(source string, nodes []Node) *Static {
	s := &Static{created: time.Now()}
	s.current.Store(NewSnapshot(source, 1, nodes))
	return s
}

// Status reports a list that is always available: connected, with its node
// count, changed last when it was created, and no problem. An empty list is
// what the caller gave, not something to explain.
func (s *Static) Status() Status {
	return Status{Connected: true, LastChange: s.created, Nodes: len(s.Snapshot().Nodes)}
}

// Close does nothing; a static list holds no resources.
func (s *Static) Close() error { return nil }

var _ Discoverer = (*Static)(nil)
