package discovery_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// childWatches asks the ZooKeeper server for its data watches by path (the
// wchp four-letter word) and returns how many are set on children of ns.
func childWatches(t *testing.T, ensemble, ns string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.Split(ensemble, ",")[0], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "wchp"); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(reply)) {
		if strings.HasPrefix(line, "/"+ns+"/") {
			n++
		}
	}
	return n
}

// registerLoaded registers a zkpresto node at addr publishing total
// queries and returns its znode path.
func registerLoaded(t *testing.T, f *fleet.Fleet, addr string, total int) string {
	t.Helper()
	node := discovery.Node{Addr: addr, Scheme: "http", Weight: 1,
		Load: discovery.PublishedLoad{Running: total, Slots: 4, ReadAt: time.Now()}}
	name, data, flags, err := fleet.Znode(discovery.FormatZkpresto, node)
	if err != nil {
		t.Fatal(err)
	}
	path, err := f.Conn().Create("/"+f.Namespace+"/"+name, data, flags, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// watchedOf splits a snapshot's nodes into watched and unwatched addresses.
func watchedOf(s *discovery.Snapshot) (watched, unwatched []string) {
	for _, n := range s.Nodes {
		if n.Load.Unwatched {
			unwatched = append(unwatched, n.Addr)
		} else {
			watched = append(watched, n.Addr)
		}
	}
	return watched, unwatched
}

// With LoadWatchSubset 2 of six children, the server holds exactly two data
// watches for this session, the snapshot still lists all six (four marked
// unwatched, with no figure), a write to an unwatched child changes
// nothing here while one to a watched child shows, and a watched child that
// leaves is replaced by an unwatched one.
func TestZooKeeperLoadWatchSubset(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{})
	paths := map[string]string{}
	for i := range 6 {
		addr := fmt.Sprintf("10.0.0.%d:8080", i+1)
		paths[addr] = registerLoaded(t, f, addr, i)
	}
	if n := childWatches(t, f.Ensemble(), f.Namespace); n != 0 {
		t.Fatalf("%d child data watches before any discoverer", n)
	}
	d := openConfig(t, discovery.ZooKeeperConfig{Servers: strings.Split(f.Ensemble(), ","), Path: "/" + f.Namespace, LoadWatchSubset: 2})
	s := waitSnapshot(t, d, "six nodes", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 6 })
	watched, unwatched := watchedOf(s)
	if len(watched) != 2 || len(unwatched) != 4 {
		t.Fatalf("watched %v, unwatched %v: want 2 and 4", watched, unwatched)
	}
	for _, n := range s.Nodes {
		if n.Load.Unwatched == n.Load.Known() {
			t.Errorf("%s: load %+v: a watched node with its figure, an unwatched one without", n.Addr, n.Load)
		}
	}
	if n := childWatches(t, f.Ensemble(), f.Namespace); n != 2 {
		t.Errorf("%d child data watches on the server, want 2", n)
	}

	// A write to an unwatched child is not seen; one to a watched child is.
	set := func(addr string, total int) {
		node := discovery.Node{Addr: addr, Scheme: "http", Weight: 1,
			Load: discovery.PublishedLoad{Running: total, Slots: 4, ReadAt: time.Now()}}
		if _, err := f.Conn().Set(paths[addr], discovery.FormatZnodeData(node), -1); err != nil {
			t.Fatal(err)
		}
	}
	set(unwatched[0], 77)
	set(watched[0], 55)
	s = waitSnapshot(t, d, "the watched node's new figure", func(s *discovery.Snapshot) bool {
		for _, n := range s.Nodes {
			if n.Addr == watched[0] {
				return n.Load.Running == 55
			}
		}
		return false
	})
	for _, n := range s.Nodes {
		if n.Addr == unwatched[0] && (!n.Load.Unwatched || n.Load.Running != 0) {
			t.Errorf("unwatched %s shows %+v after its write", n.Addr, n.Load)
		}
	}

	// A watched child leaves: another takes its place.
	if err := f.Conn().Delete(paths[watched[1]], -1); err != nil {
		t.Fatal(err)
	}
	s = waitSnapshot(t, d, "five nodes, two watched", func(s *discovery.Snapshot) bool {
		w, _ := watchedOf(s)
		return len(s.Nodes) == 5 && len(w) == 2
	})
	now, _ := watchedOf(s)
	for _, addr := range now {
		if addr == watched[1] {
			t.Errorf("watched %v include the node that left", now)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for childWatches(t, f.Ensemble(), f.Namespace) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d child data watches on the server after the change, want 2", childWatches(t, f.Ensemble(), f.Namespace))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Without a subset every child's data is watched; a bad subset is refused.
func TestZooKeeperLoadWatchSubsetAllAndBad(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{})
	for i := range 3 {
		registerLoaded(t, f, fmt.Sprintf("10.0.1.%d:8080", i+1), i)
	}
	d := openConfig(t, discovery.ZooKeeperConfig{Servers: strings.Split(f.Ensemble(), ","), Path: "/" + f.Namespace})
	s := waitSnapshot(t, d, "three nodes", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 3 })
	if w, _ := watchedOf(s); len(w) != 3 {
		t.Errorf("watched %v, want all three", w)
	}
	if n := childWatches(t, f.Ensemble(), f.Namespace); n != 3 {
		t.Errorf("%d child data watches, want 3", n)
	}
	// A subset larger than the namespace watches every child.
	d5 := openConfig(t, discovery.ZooKeeperConfig{Servers: strings.Split(f.Ensemble(), ","), Path: "/" + f.Namespace, LoadWatchSubset: 5})
	s = waitSnapshot(t, d5, "three nodes", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 3 })
	if w, _ := watchedOf(s); len(w) != 3 {
		t.Errorf("subset 5 of 3: watched %v, want all three", w)
	}
	for _, bad := range []int{-1, discovery.MaxLoadWatchSubset + 1} {
		_, err := discovery.OpenZooKeeper(t.Context(), discovery.ZooKeeperConfig{Servers: strings.Split(f.Ensemble(), ","), Path: "/" + f.Namespace, LoadWatchSubset: bad})
		if err == nil || !strings.Contains(err.Error(), "load watch subset") {
			t.Errorf("subset %d: %v, want an error naming the setting", bad, err)
		}
	}
}
