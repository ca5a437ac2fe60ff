package discovery_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

func TestCanonicalAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[0:0:0:0:0:0:0:1]:8080", "[::1]:8080"},
		{"[::1]:8080", "[::1]:8080"},
		{"[0000:0000:0000:0000:0000:0000:0000:0001]:8080", "[::1]:8080"},
		{"[2001:DB8:0:0:0:0:0:A]:9000", "[2001:db8::a]:9000"},
		{"[2001:db8:0:0:1:0:0:1]:1", "[2001:db8::1:0:0:1]:1"},
		{"[::ffff:10.0.0.1]:8080", "10.0.0.1:8080"},
		{"[::FFFF:0a00:0001]:8080", "10.0.0.1:8080"},
		{"[fe80::1%eth0]:8080", "[fe80::1%eth0]:8080"},
		{"[FE80:0::1%Eth0]:8080", "[fe80::1%Eth0]:8080"},
		{"10.0.0.1:8080", "10.0.0.1:8080"},
		{"10.0.0.1:0080", "10.0.0.1:80"},
		{"Coordinator-1.Example.COM:8443", "coordinator-1.example.com:8443"},
		{"localhost:65535", "localhost:65535"},
		// Not an IP literal (a leading zero), so a host name.
		{"010.0.0.1:8080", "010.0.0.1:8080"},
	} {
		got, err := discovery.CanonicalAddr(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CanonicalAddr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if again, err := discovery.CanonicalAddr(got); err != nil || again != got {
			t.Errorf("CanonicalAddr(%q) = %q, %v; want it unchanged", got, again, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"host", "missing port"},
		{"host:", "missing port"},
		{"host:0", "out of range"},
		{"host:65536", "out of range"},
		{"host:+1", "not a number"},
		{":8080", "empty host"},
		{"a:b:8080", "too many colons"},
		{"[::1]", "missing port"},
		{"[zz::1]:8080", "not an IPv6 address"},
		{"h/x:8080", "host contains"},
	} {
		got, err := discovery.CanonicalAddr(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "discovery: address ") {
			t.Errorf("CanonicalAddr(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.want)
		}
	}
}

// TestParseZnodeCanonicalAddr checks that every layout writes the address in
// its canonical form, whichever spelling registered it.
func TestParseZnodeCanonicalAddr(t *testing.T) {
	for _, tc := range []struct{ name, child, data, want string }{
		{"curator, as Java writes IPv6", "f3e1b2c4-uuid", `{"name":"presto","id":"i1","address":"0:0:0:0:0:0:0:1","port":8080}`, "[::1]:8080"},
		{"curator, upper-case host", "f3e1b2c4-uuid", `{"address":"Coord1.EXAMPLE.com","sslPort":8443}`, "coord1.example.com:8443"},
		{"hive serverUri", "serverUri=[0:0:0:0:0:0:0:1]:8080;version=1;sequence=0000000001", "", "[::1]:8080"},
		{"hive bind host", "serverUri=x:1;sequence=1", "hive.server2.thrift.bind.host=0:0:0:0:0:0:0:1;hive.server2.thrift.port=8080", "[::1]:8080"},
		{"hive instance uri", "serverUri=x:1;sequence=1", "hive.server2.instance.uri=[2001:DB8::1]:10000", "[2001:db8::1]:10000"},
		{"plain name", "[0:0::1]:8080", "", "[::1]:8080"},
		{"plain data", "serverUri=x:1;sequence=1", "HS2.example.com:0010000", "hs2.example.com:10000"},
		{"ours", "serverUri=x:1;sequence=1", "uri=https://[0:0:0:0:0:0:0:1]:8443/;weight=2", "[::1]:8443"},
	} {
		n, err := discovery.ParseZnode(tc.child, []byte(tc.data))
		if err != nil || n.Addr != tc.want {
			t.Errorf("%s: ParseZnode(%q, %q) = %q, %v; want Addr %q", tc.name, tc.child, tc.data, n.Addr, err, tc.want)
		}
	}
}

// duplicateRegistrations are one coordinator, [::1]:8080, registered four
// times in four spellings and layouts, each with its own weight.
var duplicateRegistrations = []struct {
	child, data string
}{
	{"serverUri=[0:0:0:0:0:0:0:1]:8080;version=1;sequence=0000000007", "uri=[0:0:0:0:0:0:0:1]:8080;weight=7"},
	{"serverUri=[::1]:8080;version=1;sequence=0000000003", "uri=[::1]:8080;weight=3"},
	{"0b6f0b0e-curator", `{"id":"0b6f0b0e-curator","address":"0:0:0:0:0:0:0:1","port":8080,"payload":{"weight":5}}`},
	{"[0000::1]:8080", ""},
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// TestSnapshotDuplicateWinnerIsStable publishes the duplicate registrations
// in every order and expects one node, always the same: the one whose ID
// (child name or Curator instance id) sorts first.
func TestSnapshotDuplicateWinnerIsStable(t *testing.T) {
	var nodes []discovery.Node
	for _, r := range duplicateRegistrations {
		n, err := discovery.ParseZnode(r.child, []byte(r.data))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	other := discovery.Node{Addr: "10.0.0.2:8080", ID: "other"}
	var first *discovery.Snapshot
	for _, perm := range permutations(len(nodes)) {
		in := []discovery.Node{other}
		for _, i := range perm {
			in = append(in, nodes[i])
		}
		s := discovery.NewSnapshot("test", 1, in)
		if len(s.Nodes) != 2 {
			t.Fatalf("order %v: %d nodes %v, want 2", perm, len(s.Nodes), s.Addrs())
		}
		if first == nil {
			first = s
			continue
		}
		if !reflect.DeepEqual(s.Nodes, first.Nodes) {
			t.Fatalf("order %v gives %+v, another order %+v", perm, s.Nodes, first.Nodes)
		}
	}
	if got := first.Nodes[1]; got.ID != "0b6f0b0e-curator" || got.Addr != "[::1]:8080" || got.Weight != 5 {
		t.Errorf("winner %+v, want the Curator instance (its ID sorts first)", got)
	}
}

// TestSnapshotCanonicalisesStaticAddrs checks that nodes given by hand, as
// a static list, meet the ZooKeeper spelling of the same address.
func TestSnapshotCanonicalisesStaticAddrs(t *testing.T) {
	s := discovery.NewStatic("test", []discovery.Node{
		{Addr: "[0:0:0:0:0:0:0:1]:8080", Format: discovery.FormatStatic},
		{Addr: "[::1]:8080", Format: discovery.FormatStatic},
		{Addr: "C1:8080", Format: discovery.FormatStatic},
		{Addr: "not an address", Format: discovery.FormatStatic},
	}).Snapshot()
	want := []string{"[::1]:8080", "c1:8080", "not an address"}
	if got := s.Addrs(); !reflect.DeepEqual(got, want) {
		t.Errorf("Addrs() = %v, want %v", got, want)
	}
	if s.Nodes[0].ID != "[::1]:8080" {
		t.Errorf("ID = %q, want the canonical address", s.Nodes[0].ID)
	}
}

// TestZooKeeperDuplicateWinnerIsStable registers one coordinator several
// times in ZooKeeper, in different orders, and expects the same winner
// every time.
func TestZooKeeperDuplicateWinnerIsStable(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{})
	conn := f.Conn()
	path := "/" + f.Namespace
	d := openZK(t, f, nil)
	for round, perm := range permutations(len(duplicateRegistrations))[:6] {
		for _, i := range perm {
			r := duplicateRegistrations[i]
			if _, err := conn.Create(path+"/"+r.child, []byte(r.data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		s := waitSnapshot(t, d, fmt.Sprintf("round %d: one node", round), func(s *discovery.Snapshot) bool {
			return len(s.Nodes) == 1 && s.Nodes[0].ID == "0b6f0b0e-curator"
		})
		if n := s.Nodes[0]; n.Addr != "[::1]:8080" || n.Weight != 5 {
			t.Fatalf("round %d: winner %+v", round, n)
		}
		for _, i := range perm {
			if err := conn.Delete(path+"/"+duplicateRegistrations[i].child, -1); err != nil {
				t.Fatal(err)
			}
		}
		waitSnapshot(t, d, "no nodes", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 0 })
	}
}
