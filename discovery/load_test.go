package discovery_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// A published load survives FormatZnodeData and ParseZnode exactly, to the
// millisecond it was read at.
func TestPublishedLoadRoundTrip(t *testing.T) {
	at := time.UnixMilli(1764620000123)
	n := discovery.Node{Addr: "10.0.0.1:8080", Scheme: "http", Weight: 2,
		Load: discovery.PublishedLoad{Running: 12, Queued: 3, Slots: 16, ReadAt: at}}
	data := discovery.FormatZnodeData(n)
	got, err := discovery.ParseZnode(discovery.ZnodeName(n)+"0000000001", data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Load.Equal(n.Load) || got.Load.Total() != 15 {
		t.Fatalf("load %+v from %q, want %+v", got.Load, data, n.Load)
	}
	if _, ok := got.Metadata["load"]; ok {
		t.Errorf("load= also went to Metadata: %v", got.Metadata)
	}
}

// A malformed or hostile figure costs the cluster nothing: the node is kept,
// without a figure, as if it published none; other formats' load= keys are
// not ours to read.
func TestPublishedLoadMalformedIsIgnored(t *testing.T) {
	for _, v := range []string{
		"", "1,2,3", "1,2,3,4,5", "-1,0,0,1764620000123", "1,x,0,1764620000123",
		"1,2,3,0", "1,2,3,-5", "1,2,3,99999999999999999999", "2000000,0,0,1764620000123",
		"1,2,3,1764620000123.5",
	} {
		name := "serverUri=10.0.0.1:8080;version=;sequence=0000000001"
		n, err := discovery.ParseZnode(name, []byte("uri=10.0.0.1:8080;weight=1;load="+v+";"))
		if err != nil {
			t.Errorf("load=%q: the node was refused: %v", v, err)
			continue
		}
		if n.Load.Known() {
			t.Errorf("load=%q: parsed as %+v, want no figure", v, n.Load)
		}
		if _, err := discovery.ParsePublishedLoad(v); err == nil {
			t.Errorf("ParsePublishedLoad(%q) accepted it", v)
		}
	}
	// Hive-style data with a load key: not a zkpresto registration.
	n, err := discovery.ParseZnode("serverUri=10.0.0.1:8080;sequence=1", []byte("hive.server2.instance.uri=10.0.0.1:8080;load=1,2,3,1764620000123"))
	if err != nil {
		t.Fatal(err)
	}
	if n.Load.Known() {
		t.Errorf("a Hive registration's load= was read as %+v", n.Load)
	}
}

// A change of the published load alone is a new snapshot, so that pickers
// see it: the node set, weights and names stay the same.
func TestZooKeeperFollowsPublishedLoad(t *testing.T) {
	f := fleet.StartT(t, fleet.Options{Coordinators: 1})
	c := f.Coordinators[0]
	path, err := f.Register(c, discovery.FormatZkpresto, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := openZK(t, f, nil)
	for _, running := range []int{5, 6} {
		n := discovery.Node{Addr: c.Addr(), Weight: 2, Version: "0.289",
			Load: discovery.PublishedLoad{Running: running, Queued: 1, ReadAt: time.UnixMilli(1_764_620_000_000 + int64(running))}}
		if _, err := f.Conn().Set(path, discovery.FormatZnodeData(n), -1); err != nil {
			t.Fatal(err)
		}
		waitSnapshot(t, d, fmt.Sprintf("%d running published", running), func(s *discovery.Snapshot) bool {
			return len(s.Nodes) == 1 && s.Nodes[0].Load.Running == running && s.Nodes[0].Load.Queued == 1
		})
	}
}
