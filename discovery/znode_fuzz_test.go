package discovery_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

func FuzzParseZnode(f *testing.F) {
	seeds := []struct{ name, data string }{
		{znodeHS2Name, znodeHS2Data},
		{znodeHS2HTTPName, znodeHS2HTTPData},
		{znodeKyuubiName, znodeKyuubiData},
		{znodeKyuubiName, znodeKyuubiConfData},
		{znodeKyuubiEngineName, ""},
		{znodeKyuubiOldName, ""},
		{znodeCuratorID, znodeCuratorData},
		{"coord-2", znodeCuratorPayloadData},
		{"10.0.0.8:8080", ""},
		{"[::1]:8080", ""},
		{znodeOursName, znodeOursData},
		{"serverUri=x:1;sequence=2", " uri = HTTP://Coord-1.Example.com:8080/ ; weight= 7 ;zone=a;;"},
		{"serverUri=[a:b]:1;sequence=1", ""},
		{"c1", `{"address":"h","port":80,"payload":{"weight":2.5}}`},
	}
	for _, s := range seeds {
		f.Add(s.name, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		n, err := discovery.ParseZnode(name, data)
		if err != nil {
			msg := err.Error()
			if msg == "" || len(msg) > znodeMaxErrorLen {
				t.Fatalf("error message of %d bytes: %.300q", len(msg), msg)
			}
			return
		}
		checkZnodeNode(t, n)
		if n.ID == "" {
			t.Errorf("empty ID for %q", name)
		}

		// What we parsed, we can write and read back to the same address,
		// scheme and weight.
		again, err := discovery.ParseZnode(discovery.ZnodeName(n)+"0000000001", discovery.FormatZnodeData(n))
		if err != nil {
			t.Fatalf("re-parsing %+v: %v", n, err)
		}
		if again.Addr != n.Addr || again.Scheme != n.Scheme || again.Weight != n.Weight {
			t.Fatalf("round trip changed %+v into %+v", n, again)
		}
	})
}

// checkZnodeNode asserts what every successfully parsed node must satisfy.
func checkZnodeNode(t *testing.T, n discovery.Node) {
	t.Helper()
	host, port, err := net.SplitHostPort(n.Addr)
	if err != nil {
		t.Fatalf("Addr %q does not split: %v", n.Addr, err)
	}
	if host == "" {
		t.Errorf("Addr %q has an empty host", n.Addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		t.Errorf("Addr %q has port %q out of range", n.Addr, port)
	}
	if net.JoinHostPort(host, port) != n.Addr {
		t.Errorf("Addr %q is not canonical", n.Addr)
	}
	if n.Weight < 1 {
		t.Errorf("Weight %d < 1", n.Weight)
	}
	if n.Scheme != "http" && n.Scheme != "https" {
		t.Errorf("Scheme %q", n.Scheme)
	}
}
