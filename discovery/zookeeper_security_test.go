package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

const (
	alicePassword = "alice-S3cret!pw"
	bobPassword   = "bob-0ther#pw"
)

// startSecureFleet starts a fleet whose namespace /secure only alice (all
// permissions) and bob (read) may use. The fleet's own session is alice's.
func startSecureFleet(t *testing.T, coordinators int) *fleet.Fleet {
	t.Helper()
	f := fleet.StartT(t, fleet.Options{Coordinators: coordinators})
	acl := append(zk.DigestACL(zk.PermAll, "alice", alicePassword), zk.DigestACL(zk.PermRead, "bob", bobPassword)...)
	if err := f.SecureNamespace("secure", "alice", alicePassword, acl); err != nil {
		t.Fatal(err)
	}
	return f
}

func authConfig(servers, user, password string, logs *testutil.Buffer) discovery.ZooKeeperConfig {
	cfg := discovery.ZooKeeperConfig{
		Servers:        strings.Split(servers, ","),
		Path:           "/secure",
		ConnectTimeout: 5 * time.Second,
	}
	if user != "" {
		cfg.AuthScheme, cfg.Auth = "digest", []byte(user+":"+password)
	}
	if logs != nil {
		cfg.Logger = logs.Logger()
	}
	return cfg
}

func TestZooKeeperDigestAuth(t *testing.T) {
	f := startSecureFleet(t, 1)
	c1 := f.Coordinators[0]
	if _, err := f.Register(c1, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	ctx := context.Background()

	for _, tc := range []struct{ name, user, password string }{
		{"no credentials", "", ""},
		{"wrong password", "alice", "not-" + alicePassword},
		{"unknown user", "mallory", alicePassword},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := discovery.OpenZooKeeper(ctx, authConfig(f.Ensemble(), tc.user, tc.password, logs))
			if err == nil {
				d.Close()
				t.Fatal("opened a namespace the credentials may not read")
			}
			msg := err.Error()
			for _, want := range []string{f.Ensemble(), "/secure", "permission denied"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("error %q does not wrap zk.ErrNoAuth", msg)
			}
			if discovery.SharedSessions() != 0 {
				t.Errorf("a failed open left %d shared sessions", discovery.SharedSessions())
			}
		})
	}

	alice := openConfig(t, authConfig(f.Ensemble(), "alice", alicePassword, logs))
	if got := alice.Snapshot().Addrs(); !slices.Equal(got, []string{c1.Addr()}) {
		t.Fatalf("snapshot %v, want [%s]", got, c1.Addr())
	}
	openConfig(t, authConfig(f.Ensemble(), "alice", alicePassword, logs)) // alice again
	if discovery.SharedSessions() != 1 {
		t.Fatalf("same credentials: %d sessions, want 1 shared", discovery.SharedSessions())
	}
	bob := openConfig(t, authConfig(f.Ensemble(), "bob", bobPassword, logs))
	if discovery.SharedSessions() != 2 {
		t.Fatalf("different credentials: %d sessions, want 2", discovery.SharedSessions())
	}
	if !slices.Equal(bob.Snapshot().Addrs(), []string{c1.Addr()}) {
		t.Fatalf("bob sees %v", bob.Snapshot().Addrs())
	}
	for _, key := range discovery.SharedSessionKeys() {
		if strings.Contains(key, alicePassword) || strings.Contains(key, bobPassword) {
			t.Fatalf("shared-session key %q holds a password", key)
		}
	}

	for _, secret := range []string{alicePassword, bobPassword} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("logs contain a password:\n%s", logs.String())
		}
	}
}

// TestZooKeeperPermissionLostLaterIsAProblem takes read permission away
// from a watched namespace. ZooKeeper then sends the session no more
// watch events, so the loss shows at the next listing, here after a
// reconnection.
func TestZooKeeperPermissionLostLaterIsAProblem(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	c1, c2 := f.Coordinators[0], f.Coordinators[1]
	if _, err := f.Register(c1, discovery.FormatHostPort, 1); err != nil {
		t.Fatal(err)
	}
	proxy := tcpproxy.StartT(t, f.Ensemble())
	logs := &testutil.Buffer{}
	cfg := authConfig(proxy.Addr(), "", "", logs)
	cfg.Path = "/" + f.Namespace
	d, err := discovery.OpenZooKeeper(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	if err := f.Conn().AddAuth("digest", []byte("alice:"+alicePassword)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Conn().SetACL(cfg.Path, zk.DigestACL(zk.PermAll, "alice", alicePassword), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Register(c2, discovery.FormatHostPort, 1); err != nil {
		t.Fatal(err)
	}
	proxy.Drop()
	zkWaitUntil(t, "the discoverer to notice the drop", func() bool { return !d.Status().Connected })
	proxy.Heal()
	zkWaitUntil(t, "the permission problem", func() bool { return strings.Contains(d.Status().Problem, "permission denied") })
	if got := d.Snapshot().Addrs(); !slices.Equal(got, []string{c1.Addr()}) {
		t.Fatalf("snapshot %v while the namespace is unreadable, want the last known [%s]", got, c1.Addr())
	}

	// Readable again: the retries (with backoff) pick the change up.
	if _, err := f.Conn().SetACL(cfg.Path, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	waitSnapshot(t, d, "both nodes once readable", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 2 })
	if p := d.Status().Problem; p != "" {
		t.Fatalf("problem %q after the ACL was opened", p)
	}
	if n := strings.Count(logs.String(), "cannot read the namespace"); n != 1 {
		t.Fatalf("permission problem logged %d times, want once:\n%s", n, logs.String())
	}
}

// serverSessions returns the session list of ZooKeeper's "dump" command.
func serverSessions(t *testing.T, f *fleet.Fleet) string {
	t.Helper()
	dump, err := f.ZooKeeper.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return dump
}

func zkWaitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, 5*time.Millisecond, what, cond)
}

// TestZooKeeperSessionExpiryBehindAPartition black-holes the discoverer's
// connection (through a proxy) until ZooKeeper expires its session, while
// the fleet's own session changes the namespace; after healing, the
// discoverer must open a new session, send its credentials again, read the
// namespace again and keep watching.
func TestZooKeeperSessionExpiryBehindAPartition(t *testing.T) {
	f := startSecureFleet(t, 3)
	c1, c2, c3 := f.Coordinators[0], f.Coordinators[1], f.Coordinators[2]
	if _, err := f.Register(c1, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	proxy := tcpproxy.StartT(t, f.Ensemble())

	logs := &testutil.Buffer{}
	cfg := authConfig(proxy.Addr(), "alice", alicePassword, logs)
	// The server's minimum is two ticks: 1s with the harness's tickTime.
	cfg.SessionTimeout = 2 * time.Second
	d, err := discovery.OpenZooKeeper(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	first := d.Status().SessionID
	if first == 0 || !slices.Equal(d.Snapshot().Addrs(), []string{c1.Addr()}) {
		t.Fatalf("status %+v, snapshot %v", d.Status(), d.Snapshot().Addrs())
	}

	proxy.Stall()
	zkWaitUntil(t, "the discoverer to notice the partition", func() bool { return !d.Status().Connected })
	if d.Status().StaleSince.IsZero() {
		t.Fatalf("status %+v: disconnected but not stale", d.Status())
	}
	// Changes made by another client during the partition.
	if _, err := f.Register(c2, discovery.FormatCurator, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Deregister(c1); err != nil {
		t.Fatal(err)
	}
	if got := d.Snapshot().Addrs(); !slices.Equal(got, []string{c1.Addr()}) {
		t.Fatalf("partitioned snapshot %v, want the last known [%s]", got, c1.Addr())
	}
	sid := fmt.Sprintf("0x%x", first)
	zkWaitUntil(t, "ZooKeeper to expire the partitioned session", func() bool {
		return !strings.Contains(serverSessions(t, f), sid)
	})

	proxy.Heal()
	zkWaitUntil(t, "a new session", func() bool {
		st := d.Status()
		return st.Connected && st.SessionID != 0 && st.SessionID != first
	})
	waitSnapshot(t, d, "the changes made during the partition", func(s *discovery.Snapshot) bool {
		return slices.Equal(s.Addrs(), []string{c2.Addr()})
	})
	st := d.Status()
	if st.SessionsExpired != 1 || !st.StaleSince.IsZero() || st.Problem != "" {
		t.Fatalf("status after the new session: %+v", st)
	}
	// The new session watches again (its credentials were sent again, or
	// the listing would be refused).
	if _, err := f.Register(c3, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	waitSnapshot(t, d, "a change after the new session", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 2 })

	out := logs.String()
	for _, want := range []string{"serving the last known coordinators", "session expired", "namespace read again in a new ZooKeeper session"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, alicePassword) {
		t.Errorf("logs contain the password")
	}
}

func TestZooKeeperOverTLS(t *testing.T) {
	f, port := fleet.StartTLST(t, fleet.Options{Coordinators: 2})
	secure, files := port.Addr, port.Files
	c1, c2 := f.Coordinators[0], f.Coordinators[1]
	if _, err := f.Register(c1, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	cfg := discovery.ZooKeeperConfig{
		Servers: []string{secure},
		Path:    "/" + f.Namespace,
		TLS:     &discovery.ZooKeeperTLS{CAFile: files.CAFile, CertFile: files.ClientCertFile, KeyFile: files.ClientKeyFile},
	}
	d := openConfig(t, cfg)
	if got := d.Snapshot().Addrs(); !slices.Equal(got, []string{c1.Addr()}) {
		t.Fatalf("snapshot over TLS %v, want [%s]", got, c1.Addr())
	}
	if _, err := f.Register(c2, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	waitSnapshot(t, d, "a change seen over TLS", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 2 })

	other, err := testtls.Generate(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	short := func(tls *discovery.ZooKeeperTLS) discovery.ZooKeeperConfig {
		return discovery.ZooKeeperConfig{Servers: []string{secure}, Path: "/" + f.Namespace, ConnectTimeout: time.Second, TLS: tls}
	}
	for _, tc := range []struct {
		name  string
		cfg   discovery.ZooKeeperConfig
		wants []string
	}{
		{"wrong CA", short(&discovery.ZooKeeperTLS{CAFile: other.CAFile, CertFile: files.ClientCertFile, KeyFile: files.ClientKeyFile}),
			[]string{secure, "no session within 1s", "TLS to " + secure, "certificate"}},
		{"missing CA file", short(&discovery.ZooKeeperTLS{CAFile: files.CAFile + ".missing"}),
			[]string{secure, "TLS: reading CA file", ".missing"}},
		{"certificate without key", short(&discovery.ZooKeeperTLS{CertFile: files.ClientCertFile}),
			[]string{secure, "both a certificate file and a key file"}},
		{"plain client on the TLS port", short(nil),
			[]string{secure, "no session within 1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := discovery.OpenZooKeeper(context.Background(), tc.cfg)
			if err == nil {
				d.Close()
				t.Fatal("opened")
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}
