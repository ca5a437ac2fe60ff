package discovery_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

func TestStaticStatus(t *testing.T) {
	before := time.Now()
	var d discovery.Discoverer = discovery.NewStatic("c1:8080,c2:8080", []discovery.Node{
		{Addr: "c1:8080"}, {Addr: "c2:8080"}, {Addr: "c1:8080"}, // a duplicate counts once
	})
	defer d.Close()
	st := d.Status()
	if !st.Connected || st.Nodes != 2 || st.Problem != "" || st.Skipped != 0 {
		t.Fatalf("status %+v, want connected with 2 nodes and no problem", st)
	}
	if st.LastChange.Before(before) || st.LastChange.After(time.Now()) {
		t.Errorf("LastChange %v, want the creation time", st.LastChange)
	}
	if !st.StaleSince.IsZero() || st.Server != "" || st.SessionID != 0 || st.SessionsExpired != 0 {
		t.Errorf("status %+v: a static list has no session", st)
	}

	empty := discovery.NewStatic("", nil)
	if st := empty.Status(); !st.Connected || st.Nodes != 0 || st.Problem != "" {
		t.Errorf("empty list: status %+v", st)
	}
}

// These are refused before any connection is tried, so they need no
// ZooKeeper.
func TestOpenZooKeeperRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  discovery.ZooKeeperConfig
		want []string
	}{
		{"no servers", discovery.ZooKeeperConfig{Path: "/presto"}, []string{"no ZooKeeper servers given"}},
		{"bad port", discovery.ZooKeeperConfig{Servers: []string{"zk1:2181", "zk2:x"}, Path: "/presto"},
			[]string{`"zk2:x"`, "bad port"}},
		{"bare IPv6", discovery.ZooKeeperConfig{Servers: []string{"::1"}, Path: "/presto"},
			[]string{`"::1"`, "brackets"}},
		{"empty segment", discovery.ZooKeeperConfig{Servers: []string{"zk1:2181"}, Path: "/a//b"},
			[]string{"zk1:2181", `"/a//b"`, "empty path segment"}},
		{"relative segment", discovery.ZooKeeperConfig{Servers: []string{"zk1"}, Path: "/a/../b"},
			[]string{"zk1:2181", `".."`}},
		{"auth without scheme", discovery.ZooKeeperConfig{Servers: []string{"zk1:2181"}, Path: "/p", Auth: []byte("u:s3cret")},
			[]string{"zk1:2181", "without an auth scheme"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := discovery.OpenZooKeeper(context.Background(), tc.cfg)
			if err == nil {
				d.Close()
				t.Fatal("opened")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q holds the credentials", err)
			}
		})
	}
	if n := discovery.SharedSessions(); n != 0 {
		t.Fatalf("%d shared sessions left", n)
	}
}

// A discoverer of a closed port gives up after ConnectTimeout, says why,
// and its go-zookeeper log lines reach the logger without the password.
func TestOpenZooKeeperClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	// The password is text go-zookeeper's failed-connect line holds, so an
	// unmasked logger would print it.
	const password = "connection refused"
	logs := &testutil.Buffer{}
	start := time.Now()
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers:        []string{dead},
		Path:           "/presto",
		ConnectTimeout: 300 * time.Millisecond,
		AuthScheme:     "digest",
		Auth:           []byte("alice:" + password),
		Logger:         logs.Logger(),
	})
	if err == nil {
		d.Close()
		t.Fatal("opened a closed port")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %s, want about 300ms", took)
	}
	for _, want := range []string{dead, "every server refused the connection", "last connection error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if !strings.Contains(logs.String(), "zookeeper: failed to connect to "+dead) {
		t.Errorf("go-zookeeper's lines did not reach the logger:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the logs hold the password:\n%s", logs.String())
	}
}
