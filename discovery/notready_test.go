package discovery_test

import (
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

// A registrar's notready= mark reads back as Node.NotReady; a registration
// without it, and every foreign layout, is ready, whatever keys it carries.
func TestNotReadyMark(t *testing.T) {
	n := discovery.Node{Addr: "10.0.0.1:8080", Scheme: "http", Weight: 1, NotReady: "workers:0/1"}
	data := discovery.FormatZnodeData(n)
	if want := "uri=10.0.0.1:8080;weight=1;notready=workers:0/1;"; string(data) != want {
		t.Fatalf("FormatZnodeData = %q, want %q", data, want)
	}
	got, err := discovery.ParseZnode(discovery.ZnodeName(n)+"0000000001", data)
	if err != nil {
		t.Fatal(err)
	}
	if got.NotReady != "workers:0/1" || got.Ready() || got.Metadata != nil {
		t.Fatalf("read back NotReady %q, ready %v, metadata %v", got.NotReady, got.Ready(), got.Metadata)
	}
	n.NotReady = ""
	if got, _ := discovery.ParseZnode(discovery.ZnodeName(n)+"0000000001", discovery.FormatZnodeData(n)); !got.Ready() {
		t.Fatalf("a registration without the mark reads as not ready: %q", got.NotReady)
	}
	// A reason that cannot be written is left out rather than corrupting
	// what follows: the node then reads as ready, as before the mark.
	n.NotReady = "a;b"
	if got, _ := discovery.ParseZnode(discovery.ZnodeName(n)+"0000000001", discovery.FormatZnodeData(n)); !got.Ready() {
		t.Fatalf("a reason holding ';' was written: %q", got.NotReady)
	}
	foreign := []struct{ name, data string }{
		{"serverUri=10.0.0.2:10009;version=1.7.0;sequence=0000000001", "hive.server2.thrift.bind.host=10.0.0.2;hive.server2.thrift.port=10009;notready=x"},
		{"10.0.0.3:8080", ""},
		{"c1", `{"name":"presto","id":"c1","address":"10.0.0.4","port":8080,"payload":{"notready":"x"}}`},
	}
	for _, f := range foreign {
		got, err := discovery.ParseZnode(f.name, []byte(f.data))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if !got.Ready() {
			t.Errorf("%s (%s) reads as not ready: %q", f.name, got.Format, got.NotReady)
		}
	}
}
