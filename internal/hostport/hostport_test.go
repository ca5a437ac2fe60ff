package hostport

import "testing"

// Every spelling of one node's address comes out the same, and a
// canonical address is left as it is.
func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{"10.0.0.1", 8080, "10.0.0.1:8080"},
		{"0:0:0:0:0:0:0:1", 8080, "[::1]:8080"},
		{"::FFFF:10.0.0.1", 443, "10.0.0.1:443"},
		{"FE80::1%eth0", 80, "[fe80::1%eth0]:80"},
		{"Coord.Example.COM", 8443, "coord.example.com:8443"},
		{"coord", 80, "coord:80"},
	} {
		if got := Join(tc.host, tc.port); got != tc.want {
			t.Errorf("Join(%q, %d) = %q, want %q", tc.host, tc.port, got, tc.want)
		}
		if got := Join(Host(tc.host), tc.port); got != tc.want {
			t.Errorf("Join of the canonical %q = %q, want it unchanged", Host(tc.host), got)
		}
	}
}
