package dsn

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkpresto/zkpresto/discovery"
)

// parseHostList parses "host[:port],..." into host:port addresses.
func parseHostList(list string, defaultPort int) ([]string, error) {
	if list == "" {
		return nil, errors.New("no hosts: want presto://host[:port][,host[:port]...]")
	}
	hosts := make([]string, 0, strings.Count(list, ",")+1)
	// A set, not a search of hosts: that made a list of n hosts take n²/2
	// comparisons, tens of seconds for 100,000.
	seen := make(map[string]bool, cap(hosts))
	for _, hp := range strings.Split(list, ",") {
		if hp == "" {
			return nil, fmt.Errorf("empty host in host list %q", list)
		}
		addr, err := parseHostPort(hp, defaultPort)
		if err != nil {
			return nil, err
		}
		if seen[addr] {
			return nil, fmt.Errorf("host %q listed twice in host list %q", addr, list)
		}
		seen[addr] = true
		hosts = append(hosts, addr)
	}
	return hosts, nil
}

// parseHostPort validates "host[:port]" or "[ipv6][:port]" and returns it
// as host:port in the form discovery.CanonicalAddr writes, the form in which
// discovery names nodes, with defaultPort when none is given (0: a port is
// required).
func parseHostPort(hp string, defaultPort int) (string, error) {
	var host, port string
	hasPort := false
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", fmt.Errorf("missing \"]\" in host %q", hp)
		}
		host = hp[1:end]
		if after := hp[end+1:]; after != "" {
			if after[0] != ':' {
				return "", fmt.Errorf("unexpected %q after \"]\" in host %q", after, hp)
			}
			port, hasPort = after[1:], true
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || !addr.Is6() {
			return "", fmt.Errorf("bad IPv6 address %q in host %q", host, hp)
		}
		if addr.Zone() != "" {
			return "", fmt.Errorf("IPv6 zone in host %q is not supported", hp)
		}
	} else {
		if strings.Count(hp, ":") > 1 {
			return "", fmt.Errorf("IPv6 address in host %q must be in brackets, as in [::1]:8080", hp)
		}
		host, port, hasPort = strings.Cut(hp, ":")
		if host == "" {
			return "", fmt.Errorf("empty host name in host %q", hp)
		}
		for _, r := range host {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
				return "", fmt.Errorf("bad character %q in host %q", r, hp)
			}
		}
	}
	portNumber := defaultPort
	if !hasPort && defaultPort == 0 {
		return "", fmt.Errorf("missing port in host %q", hp)
	}
	if hasPort {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return "", fmt.Errorf("bad port %q in host %q", port, hp)
		}
		portNumber = int(n)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(portNumber))
	if canonical, err := discovery.CanonicalAddr(addr); err == nil {
		addr = canonical
	}
	return addr, nil
}

// checkNamespace checks a ZooKeeper path without leading or trailing
// slashes the way ZooKeeper checks paths, so a bad one fails here rather
// than on connect.
func checkNamespace(ns string) error {
	if !utf8.ValidString(ns) {
		return errors.New("not valid UTF-8")
	}
	for i, segment := range strings.Split(ns, "/") {
		switch segment {
		case "":
			return errors.New("empty path segment")
		case ".", "..":
			return fmt.Errorf("relative path segment %q", segment)
		}
		if i == 0 && segment == "zookeeper" {
			return errors.New(`"/zookeeper" is reserved by ZooKeeper`)
		}
		for _, r := range segment {
			if zooKeeperForbids(r) {
				return fmt.Errorf("character %U not allowed in a ZooKeeper path", r)
			}
		}
	}
	return nil
}

// zooKeeperForbids reports whether ZooKeeper rejects r in a path. Java
// strings hold runes above U+FFFF as surrogates, which ZooKeeper rejects.
func zooKeeperForbids(r rune) bool {
	return r <= 0x1f ||
		r >= 0x7f && r <= 0x9f ||
		r >= 0xd800 && r <= 0xf8ff ||
		r >= 0xfff0
}

// setDuration sets *dst to v, a positive Go duration.
func setDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration such as \"10s\": %w", err)
	}
	if d <= 0 {
		// In a Config zero means the default; in a DSN it is a bad value.
		return errNotPositive
	}
	*dst = d
	return nil
}

// errNotPositive is the error for a duration that is zero or negative.
var errNotPositive = errors.New("must be positive")

// How setBool matches the words true and false.
const (
	boolAnyCase   = true
	boolExactCase = false
)

// setBool sets *dst to v: true, false, 1 or 0, the words in any case when
// anyCase is set.
func setBool(dst *bool, v string, anyCase bool) error {
	if anyCase {
		v = strings.ToLower(v)
	}
	switch v {
	case "true", "1":
		*dst = true
	case "false", "0":
		*dst = false
	default:
		return errors.New("want true, false, 1 or 0")
	}
	return nil
}

// parseWeights parses "host[:port]=weight,...". It returns what it has
// read so far with an error, so that the caller may keep it or not.
// (*Config).Validate checks the range of the weights.
func parseWeights(v string) (map[string]int, error) {
	weights := make(map[string]int)
	for _, entry := range strings.Split(v, ",") {
		if entry == "" {
			return nil, fmt.Errorf("empty entry in %q", v)
		}
		i := strings.LastIndexByte(entry, '=')
		if i < 0 {
			return nil, fmt.Errorf("entry %q: want host:port=weight", entry)
		}
		addr, err := parseHostPort(entry[:i], defaultPrestoPort)
		if err != nil {
			return nil, err
		}
		weight, err := strconv.Atoi(entry[i+1:])
		if err != nil {
			return nil, badWeight(entry[i+1:], addr)
		}
		if _, dup := weights[addr]; dup {
			return nil, fmt.Errorf("%q listed twice", addr)
		}
		weights[addr] = weight
	}
	return weights, nil
}

// badWeight is the error for a weight that is not a whole number in range.
func badWeight(weight, addr string) error {
	return fmt.Errorf("bad weight %q for %q: want an integer from 1 to %d", weight, addr, maxWeight)
}

// parseTags splits a comma list, dropping blanks; nil when empty.
func parseTags(v string) []string {
	var tags []string
	for _, tag := range strings.Split(v, ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			tags = append(tags, tag)
		}
	}
	return tags
}
