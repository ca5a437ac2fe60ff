package discovery_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

// logLines returns the lines of logs that hold every one of parts.
func logLines(logs *testutil.Buffer, parts ...string) []string {
	var out []string
	for line := range strings.Lines(logs.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// waitLogLine waits for a line holding every one of parts and returns it;
// every discovery change line names the ensemble and the path.
func waitLogLine(t *testing.T, logs *testutil.Buffer, f *fleet.Fleet, parts ...string) string {
	t.Helper()
	parts = append(parts, "ensemble="+f.Ensemble(), "path=/"+f.Namespace)
	zkWaitUntil(t, strings.Join(parts, " "), func() bool { return len(logLines(logs, parts...)) > 0 })
	return logLines(logs, parts...)[0]
}

func TestDiscoveryLogsEachMembershipChangeOnce(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	c1, c2 := f.Coordinators[0], f.Coordinators[1]
	logs := &testutil.Buffer{}
	d := openZK(t, f, logs)
	waitLogLine(t, logs, f, "level=WARN", `msg="no coordinator is registered: the namespace is empty"`)

	if _, err := f.Register(c1, discovery.FormatHive, 1); err != nil {
		t.Fatal(err)
	}
	waitLogLine(t, logs, f, "level=INFO", `msg="coordinator joined"`, "node="+c1.Addr(), "nodes=1")
	if _, err := f.Register(c2, discovery.FormatZkpresto, 1); err != nil {
		t.Fatal(err)
	}
	waitLogLine(t, logs, f, `msg="coordinator joined"`, "node="+c2.Addr(), "nodes=2")
	if err := f.Deregister(c1); err != nil {
		t.Fatal(err)
	}
	waitLogLine(t, logs, f, "level=INFO", `msg="coordinator left"`, "node="+c1.Addr(), "nodes=1")
	if err := f.Deregister(c2); err != nil {
		t.Fatal(err)
	}
	waitLogLine(t, logs, f, `msg="coordinator left"`, "node="+c2.Addr(), "nodes=0")
	waitLogLine(t, logs, f, "level=WARN", `msg="no coordinator is registered any more: the namespace is empty"`)
	waitSnapshot(t, d, "no node", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 0 })
	for _, msg := range []string{`msg="coordinator joined"`, `msg="coordinator left"`} {
		if n := len(logLines(logs, msg)); n != 2 {
			t.Errorf("%s logged %d times, want 2 (once per coordinator):\n%s", msg, n, logs.String())
		}
	}
}

func TestDiscoveryLogsTheCoordinatorsItFindsFirst(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 2})
	for _, c := range f.Coordinators {
		if _, err := f.Register(c, discovery.FormatHostPort, 1); err != nil {
			t.Fatal(err)
		}
	}
	logs := &testutil.Buffer{}
	openZK(t, f, logs)
	line := waitLogLine(t, logs, f, "level=INFO", `msg="coordinators found"`, "nodes=2")
	for _, c := range f.Coordinators {
		if !strings.Contains(line, c.Addr()) {
			t.Errorf("the first listing's line does not name %s: %s", c.Addr(), line)
		}
	}
	if n := len(logLines(logs, "joined")); n != 0 {
		t.Errorf("the first listing also logged %d joins:\n%s", n, logs.String())
	}
}

func TestDiscoveryLogsAnUnreachableEnsembleOncePerOutage(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{})
	proxy, err := tcpproxy.Start(f.Ensemble())
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	cfg := discovery.ZooKeeperConfig{Servers: []string{proxy.Addr()}, Path: "/" + f.Namespace, Logger: logs.Logger()}
	d, err := discovery.OpenZooKeeper(context.Background(), cfg)
	if err != nil {
		proxy.Close()
		t.Fatal(err)
	}
	defer d.Close()
	proxy.Close() // connections refused from now on
	unreachable := []string{"level=WARN", `msg="ZooKeeper unreachable: no server of the ensemble answers; retrying"`, "ensemble=" + proxy.Addr(), "path=/" + f.Namespace, "refused"}
	zkWaitUntil(t, "the unreachable line", func() bool { return len(logLines(logs, unreachable...)) > 0 })
	// go-zookeeper dials on (and says so at debug level); the outage is
	// logged once all the same.
	zkWaitUntil(t, "three more dials", func() bool { return len(logLines(logs, "level=DEBUG", "refused")) >= 4 })
	if n := len(logLines(logs, "unreachable")); n != 1 {
		t.Fatalf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}
}

// A discoverer that cannot open is closed and the next use opens another:
// the outage they both meet is logged once.
func TestAnUnreachableEnsembleIsLoggedOnceAcrossOpens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	logs := &testutil.Buffer{}
	cfg := discovery.ZooKeeperConfig{Servers: []string{dead}, Path: "/presto", ConnectTimeout: 2 * time.Second, Logger: logs.Logger()}
	for range 3 {
		if d, err := discovery.OpenZooKeeper(context.Background(), cfg); err == nil {
			d.Close()
			t.Fatal("opened a closed port")
		}
	}
	if n := len(logLines(logs, "level=WARN", "ZooKeeper unreachable", "ensemble="+dead)); n != 1 {
		t.Fatalf("three failed opens logged the outage %d times, want once:\n%s", n, logs.String())
	}
}
