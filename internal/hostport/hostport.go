// Package hostport writes a coordinator's host and port in the one
// spelling by which zkpresto knows it. Package discovery names every node
// this way; package wire compares the URIs a coordinator hands out with
// the node it runs on this way. It is a leaf: the rules of the wire do not
// import discovery to compare two addresses.
package hostport

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Join returns host and port as "host:port" ("[v6]:port") in canonical
// form: an IP address in netip's canonical text form (IPv6 compressed and
// in lower case, an IPv4-mapped IPv6 address as IPv4; a zone is kept as
// written), a host name in lower case, and the port in decimal. It checks
// nothing: whether host is a valid host is the caller's to decide.
func Join(host string, port int) string {
	return net.JoinHostPort(Host(host), strconv.Itoa(port))
}

// Host writes an IP address in netip's canonical form and a host name in
// lower case.
func Host(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().String()
	}
	return strings.ToLower(host)
}
