package discovery_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openZK opens a discoverer of f's namespace that logs to logs (if not
// nil), closed at the test's end.
func openZK(t *testing.T, f *fleet.Fleet, logs *testutil.Buffer) *discovery.ZooKeeper {
	t.Helper()
	cfg := discovery.ZooKeeperConfig{Servers: strings.Split(f.Ensemble(), ","), Path: "/" + f.Namespace}
	if logs != nil {
		cfg.Logger = logs.Logger()
	}
	return openConfig(t, cfg)
}

// openConfig opens a discoverer with cfg, closed at the test's end.
func openConfig(t *testing.T, cfg discovery.ZooKeeperConfig) *discovery.ZooKeeper {
	t.Helper()
	d, err := discovery.OpenZooKeeper(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func waitSnapshot(t *testing.T, d discovery.Discoverer, what string, cond func(*discovery.Snapshot) bool) *discovery.Snapshot {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := d.Snapshot()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last snapshot %v", what, s.Addrs())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestZooKeeperFollowsChildrenAndData(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	logs := &testutil.Buffer{}
	c1, c2, c3 := f.Coordinators[0], f.Coordinators[1], f.Coordinators[2]
	if _, err := f.Register(c1, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	d := openZK(t, f, logs)
	if got := d.Snapshot().Addrs(); !slices.Equal(got, []string{c1.Addr()}) {
		t.Fatalf("first snapshot %v, want [%s]", got, c1.Addr())
	}
	st := d.Status()
	if !st.Connected || st.Nodes != 1 || st.Problem != "" {
		t.Fatalf("status %+v", st)
	}

	var mu sync.Mutex
	var published []uint64
	cancel := d.Subscribe(func(s *discovery.Snapshot) {
		mu.Lock()
		published = append(published, s.Generation)
		mu.Unlock()
	})
	defer cancel()

	path2, err := f.Register(c2, discovery.FormatZkpresto, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Register(c3, discovery.FormatCurator, 2); err != nil {
		t.Fatal(err)
	}
	s := waitSnapshot(t, d, "three nodes", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 3 })
	for _, n := range s.Nodes {
		want := map[string]int{c1.Addr(): 1, c2.Addr(): 5, c3.Addr(): 2}[n.Addr]
		if n.Weight != want {
			t.Errorf("node %s weight %d, want %d (format %s)", n.Addr, n.Weight, want, n.Format)
		}
	}

	// A data change (a new weight) is seen without a membership change.
	updated := discovery.FormatZnodeData(discovery.Node{Addr: c2.Addr(), Weight: 7, Version: "0.289"})
	if _, err := f.Conn().Set(path2, updated, -1); err != nil {
		t.Fatal(err)
	}
	waitSnapshot(t, d, "the new weight", func(s *discovery.Snapshot) bool {
		for _, n := range s.Nodes {
			if n.Addr == c2.Addr() {
				return n.Weight == 7
			}
		}
		return false
	})

	// A malformed child is skipped and logged once; the others stay.
	if _, err := f.Conn().Create("/"+f.Namespace+"/not a coordinator", []byte("{broken"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := f.Deregister(c1); err != nil {
		t.Fatal(err)
	}
	s = waitSnapshot(t, d, "c1 gone", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 2 })
	if slices.Contains(s.Addrs(), c1.Addr()) {
		t.Fatalf("removed node still listed: %v", s.Addrs())
	}
	if st := d.Status(); st.Skipped != 1 {
		t.Fatalf("status %+v, want one skipped child", st)
	}
	if n := strings.Count(logs.String(), "skipping a child"); n != 1 {
		t.Fatalf("malformed child logged %d times:\n%s", n, logs.String())
	}

	mu.Lock()
	defer mu.Unlock()
	if len(published) == 0 || !slices.IsSorted(published) {
		t.Fatalf("subscriber saw generations %v, want increasing", published)
	}
}

func TestZooKeeperSharesOneSessionPerEnsembleAndPath(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	if _, err := f.Register(f.Coordinators[0], discovery.FormatHostPort, 1); err != nil {
		t.Fatal(err)
	}
	a := openZK(t, f, nil)
	b := openZK(t, f, nil)
	if discovery.SharedSessions() != 1 {
		t.Fatalf("%d shared sessions for one ensemble and path, want 1", discovery.SharedSessions())
	}
	if a.Snapshot() != b.Snapshot() {
		t.Fatal("two handles of one namespace see different snapshots")
	}
	a.Close()
	if discovery.SharedSessions() != 1 {
		t.Fatal("closing one handle closed the shared session")
	}
	if len(b.Snapshot().Nodes) != 1 {
		t.Fatal("the remaining handle lost its nodes")
	}
	b.Close()
	if n := discovery.SharedSessions(); n != 0 {
		t.Fatalf("%d shared sessions after the last close, want 0", n)
	}
}

func TestZooKeeperNamespaceCreatedLater(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	f.Namespace = "later/presto"
	d := openZK(t, f, nil)
	if st := d.Status(); len(d.Snapshot().Nodes) != 0 || !strings.Contains(st.Problem, "/later/presto does not exist") {
		t.Fatalf("status %+v for a missing namespace", st)
	}
	if err := fleet.CreatePath(f.Conn(), "/later/presto"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Register(f.Coordinators[0], discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	waitSnapshot(t, d, "the node in the new namespace", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 1 })
	if st := d.Status(); st.Problem != "" {
		t.Fatalf("status %+v after the namespace appeared", st)
	}
}

// TestCloseLogsNoWarning checks that closing the discoverer, an ordinary
// shutdown, is not logged as a lost connection.
func TestCloseLogsNoWarning(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{})
	var logs testutil.Buffer
	cfg := discovery.ZooKeeperConfig{Servers: strings.Split(f.Ensemble(), ","), Path: "/" + f.Namespace, Logger: logs.Logger()}
	d, err := discovery.OpenZooKeeper(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	opened := len(logs.String()) // the empty namespace is a warning of Open's
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if closing := logs.String()[opened:]; strings.Contains(closing, "WARN") {
		t.Fatalf("Close logged a warning:\n%s", closing)
	}
}

// TestRefusedEnsembleFailsFast checks that an ensemble whose every server
// refuses the connection is reported as soon as each has refused, not
// after the whole connect timeout, with the ensemble named.
func TestRefusedEnsembleFailsFast(t *testing.T) {
	var servers []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, l.Addr().String())
		l.Close() // a closed loopback port refuses at once
	}
	cfg := discovery.ZooKeeperConfig{Servers: servers, Path: "/presto", ConnectTimeout: 10 * time.Second}
	start := time.Now()
	d, err := discovery.OpenZooKeeper(context.Background(), cfg)
	if err == nil {
		d.Close()
		t.Fatal("opened a discoverer on two closed ports")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v to report refused ports, want well under the 10s connect timeout", took)
	}
	if !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), cfg.Ensemble()) {
		t.Fatalf("error %q does not name the ensemble and the refusal", err)
	}
}
