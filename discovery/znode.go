package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zkpresto/zkpresto/internal/hostport"
)

// znodeMaxData is the largest child name or data ParseZnode accepts.
// Registrations are a few hundred bytes; anything this large is a mistake or
// an attack, and refusing it early keeps parsing and error messages cheap.
const znodeMaxData = 64 << 10

// znodeMaxWeight is the largest weight a registration may carry. The bound
// keeps a strategy's sum of weights far from overflow however many nodes
// register.
const znodeMaxWeight = 1_000_000

// Keys of the k=v; lists that ParseZnode reads into Node fields. They never
// appear in Node.Metadata, and FormatZnodeData leaves Metadata entries with
// these keys out, so that a round trip is exact.
const (
	znodeKeyURI       = "uri"
	znodeKeyWeight    = "weight"
	znodeKeyZone      = "zone"
	znodeKeyVersion   = "version"
	znodeKeyServerURI = "serverUri"
	// Older Kyuubi releases named the address key serviceUri.
	znodeKeyServiceURI = "serviceUri"
	znodeKeySequence   = "sequence"

	// What HiveServer2 (hive.server2.zookeeper.publish.configs) and Kyuubi
	// publish as znode data.
	znodeKeyHiveBindHost    = "hive.server2.thrift.bind.host"
	znodeKeyHiveThriftPort  = "hive.server2.thrift.port"
	znodeKeyHiveHTTPPort    = "hive.server2.thrift.http.port"
	znodeKeyHiveInstanceURI = "hive.server2.instance.uri"
	znodeKeyHiveTransport   = "hive.server2.transport.mode"
	znodeKeyHiveUseSSL      = "hive.server2.use.SSL"
)

var znodeReservedKeys = []string{
	znodeKeyURI, znodeKeyWeight, znodeKeyZone, znodeKeyVersion,
	znodeKeyServerURI, znodeKeyServiceURI, znodeKeySequence,
	znodeKeyHiveBindHost, znodeKeyHiveThriftPort, znodeKeyHiveHTTPPort, znodeKeyHiveInstanceURI,
	znodeKeyHiveUseSSL, znodeKeyLoad, znodeKeyNotReady,
}

// znodeMaxQuoted bounds how much of a name or value an error message quotes,
// so that a huge znode cannot produce a huge error (and log line).
const znodeMaxQuoted = 100

// ParseZnode reads one child of a namespace — its child name and its data —
// into a Node. It understands four layouts:
//
//  1. Hive / Kyuubi (FormatHive): a name that is a k=v; list such as
//     "serverUri=10.0.0.1:10009;version=1.7.0;sequence=0000000001" (older
//     Kyuubi releases wrote serviceUri=). The data is empty, "host:port", or the
//     k=v; configuration HiveServer2 and Kyuubi publish
//     (hive.server2.thrift.bind.host, hive.server2.thrift.port, ...).
//  2. Apache Curator ServiceInstance JSON (FormatCurator), recognised by data
//     that starts with '{': address and port, or sslPort (then the scheme is
//     https). String and number fields weight, zone and version of an object
//     payload fill those Node fields; its other scalar fields go to Metadata.
//     An instance with "enabled":false is refused, as Curator's own clients
//     skip it.
//  3. A plain "host:port" name ("[::1]:8080" for IPv6) with empty data
//     (FormatHostPort). Data under such a name is read as for a Hive name;
//     the format stays FormatHostPort unless the data has uri=.
//  4. What `zkpresto register` writes (FormatZkpresto): a Hive-style name and
//     k=v; data with uri= (host:port, or http://host:port or
//     https://host:port, which sets the scheme), weight=, zone= and version=;
//     other keys go to Metadata. See FormatZnodeData and ZnodeName.
//
// When name and data both give an address, the data wins, in this order: our
// uri= key; hive.server2.thrift.bind.host with hive.server2.thrift.port (or
// hive.server2.thrift.http.port when hive.server2.transport.mode is http);
// hive.server2.instance.uri; plain host:port data; and last the name's
// serverUri (or the whole name, for a plain name). An empty or wildcard bind
// host (0.0.0.0, ::), which a server may publish, counts as missing.
// hive.server2.use.SSL=true makes the scheme https. Zone, version and weight
// likewise come from the data first and then from the name.
//
// k=v; lists tolerate a trailing ';', empty segments and spaces around keys;
// values cannot contain ';'; a key may appear only once. Keys are
// case-sensitive. Pairs with keys other than those named above and sequence
// are kept in Metadata (nil when there are none), data pairs winning over
// name pairs; hive.server2.transport.mode, for one, stays there.
//
// A weight must be a positive integer no larger than 1000000; a port must be
// in 1..65535; a name or data above 64 KiB is refused. The result always has
// a scheme (http or https), a weight of at least 1 and an Addr as
// CanonicalAddr writes it, whatever layout and spelling it came from (a
// Curator address 0:0:0:0:0:0:0:1 becomes [::1], a host name is lower-cased).
// ID is the child name, or the Curator instance id when there is one. Every error names the child and says what
// was wrong; the node should then be skipped, not the whole namespace.
func ParseZnode(name string, data []byte) (Node, error) {
	if name == "" {
		return Node{}, errors.New(`discovery: znode "": empty child name`)
	}
	if len(name) > znodeMaxData {
		return Node{}, znodeErrorf(name, "child name is %d bytes, more than the %d allowed", len(name), znodeMaxData)
	}
	if len(data) > znodeMaxData {
		return Node{}, znodeErrorf(name, "data is %d bytes, more than the %d allowed", len(data), znodeMaxData)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return parseZnodeCurator(name, trimmed)
	}
	return parseZnodeKeyValue(name, string(trimmed))
}

// parseZnodeKeyValue handles the Hive, host:port and zkpresto layouts.
func parseZnodeKeyValue(name, data string) (Node, error) {
	n := Node{ID: name, Scheme: "http", Weight: 1}

	// A name is a k=v; list exactly when it has '='; a host:port never does.
	var nameKV []znodePair
	var nameAddr string
	if strings.Contains(name, "=") {
		var err error
		nameKV, err = parseZnodePairs(name)
		if err != nil {
			return Node{}, znodeErrorf(name, "child name: %w", err)
		}
		nameAddr = znodeLookup(nameKV, znodeKeyServerURI)
		if nameAddr == "" {
			nameAddr = znodeLookup(nameKV, znodeKeyServiceURI)
		}
		n.Format = FormatHive
	} else {
		nameAddr = name
		n.Format = FormatHostPort
	}

	var dataKV []znodePair
	var addr, addrKey string
	switch {
	case data == "":
		// The name alone says where the node is.
	case strings.Contains(data, "="):
		var err error
		dataKV, err = parseZnodePairs(data)
		if err != nil {
			return Node{}, znodeErrorf(name, "data: %w", err)
		}
		addr, addrKey = znodeDataAddr(dataKV)
		if addrKey == znodeKeyURI {
			n.Format = FormatZkpresto
		}
		if strings.EqualFold(znodeLookup(dataKV, znodeKeyHiveUseSSL), "true") {
			n.Scheme = "https"
		}
	default:
		addr, addrKey = data, "data"
	}
	if addr == "" {
		if nameAddr == "" {
			return Node{}, znodeErrorf(name, "no address: neither the child name (serverUri=) nor the data names one")
		}
		addr, addrKey = nameAddr, "child name"
		if nameKV != nil {
			addrKey = "serverUri"
		}
	}
	scheme, hostPort, err := parseZnodeAddr(addr)
	if err != nil {
		if addrKey == "child name" {
			// The name is the address and the message quotes it already.
			return Node{}, znodeErrorf(name, "%w", err)
		}
		return Node{}, znodeErrorf(name, "%s %s: %w", addrKey, znodeQuote(addr), err)
	}
	n.Addr = hostPort
	if scheme != "" {
		n.Scheme = scheme
	}

	// Data first, then the name.
	lookup := func(key string) (string, bool) {
		if v, ok := znodeLookupOK(dataKV, key); ok {
			return v, true
		}
		return znodeLookupOK(nameKV, key)
	}
	if w, ok := lookup(znodeKeyWeight); ok {
		if n.Weight, err = parseZnodeWeight(w); err != nil {
			return Node{}, znodeErrorf(name, "weight %s: %w", znodeQuote(w), err)
		}
	}
	n.Zone, _ = lookup(znodeKeyZone)
	n.Version, _ = lookup(znodeKeyVersion)
	n.Metadata = znodeMetadata(nameKV, dataKV)
	if v, ok := znodeLookupOK(dataKV, znodeKeyLoad); ok && n.Format == FormatZkpresto {
		// A bad figure must not cost the cluster a coordinator: without it
		// the node is balanced as before.
		n.Load, _ = ParsePublishedLoad(v)
	}
	if v, ok := znodeLookupOK(dataKV, znodeKeyNotReady); ok && n.Format == FormatZkpresto {
		// An empty mark reads as ready, as a registration without one.
		n.NotReady = v
	}
	return n, nil
}

// znodeDataAddr picks the address from k=v; data in the documented order and
// returns it with the key it came from, or "" when the data names none.
func znodeDataAddr(kv []znodePair) (addr, key string) {
	if v := znodeLookup(kv, znodeKeyURI); v != "" {
		return v, znodeKeyURI
	}
	host := znodeLookup(kv, znodeKeyHiveBindHost)
	if host != "" && host != "0.0.0.0" && host != "::" && host != "[::]" {
		portKeys := []string{znodeKeyHiveThriftPort, znodeKeyHiveHTTPPort}
		if strings.EqualFold(znodeLookup(kv, znodeKeyHiveTransport), "http") {
			slices.Reverse(portKeys)
		}
		for _, pk := range portKeys {
			if port := znodeLookup(kv, pk); port != "" {
				return net.JoinHostPort(strings.Trim(host, "[]"), port), znodeKeyHiveBindHost + "+" + pk
			}
		}
	}
	if v := znodeLookup(kv, znodeKeyHiveInstanceURI); v != "" {
		return v, znodeKeyHiveInstanceURI
	}
	return "", ""
}

// znodeCuratorInstance is the part of Curator's ServiceInstance JSON that we use.
type znodeCuratorInstance struct {
	ID      string          `json:"id"`
	Address string          `json:"address"`
	Port    *int64          `json:"port"`
	SSLPort *int64          `json:"sslPort"`
	Payload json.RawMessage `json:"payload"`
	Enabled *bool           `json:"enabled"`
}

// parseZnodeCurator reads an Apache Curator ServiceInstance.
func parseZnodeCurator(name string, data []byte) (Node, error) {
	var inst znodeCuratorInstance
	if err := json.Unmarshal(data, &inst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Type != nil {
			// Say it in the JSON's terms rather than our Go types'.
			return Node{}, znodeErrorf(name, "Curator instance JSON: field %s holds a JSON %s where a %s belongs",
				znodeQuote(typeErr.Field), typeErr.Value, znodeJSONKind(typeErr.Type.Kind()))
		}
		return Node{}, znodeErrorf(name, "Curator instance JSON: %w", err)
	}
	if inst.Enabled != nil && !*inst.Enabled {
		return Node{}, znodeErrorf(name, "Curator instance is disabled (\"enabled\":false)")
	}
	n := Node{ID: inst.ID, Scheme: "http", Weight: 1, Format: FormatCurator}
	if n.ID == "" {
		n.ID = name
	}
	if err := checkZnodeHost(inst.Address); err != nil {
		return Node{}, znodeErrorf(name, "Curator address %s: %w", znodeQuote(inst.Address), err)
	}
	var port int64
	switch {
	case inst.SSLPort != nil && *inst.SSLPort > 0:
		port, n.Scheme = *inst.SSLPort, "https"
	case inst.Port != nil:
		port = *inst.Port
	default:
		return Node{}, znodeErrorf(name, "Curator instance has neither port nor sslPort")
	}
	if port < 1 || port > 65535 {
		return Node{}, znodeErrorf(name, "Curator port %d: out of range 1..65535", port)
	}
	n.Addr = hostport.Join(inst.Address, int(port))

	if err := applyZnodeCuratorPayload(&n, inst.Payload); err != nil {
		return Node{}, znodeErrorf(name, "Curator payload: %w", err)
	}
	return n, nil
}

// znodeJSONKind names a Go kind the way the JSON it decodes from is called.
func znodeJSONKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "whole number"
	default:
		return "different value"
	}
}

// applyZnodeCuratorPayload takes weight, zone, version and other scalar fields
// from an object payload. Payloads of other shapes carry nothing we use.
func applyZnodeCuratorPayload(n *Node, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return err
	}
	for key, v := range fields {
		var text string
		switch v := v.(type) {
		case string:
			text = v
		case json.Number:
			text = v.String()
		case bool:
			text = strconv.FormatBool(v)
		default:
			continue // null, arrays and objects have no single value to keep
		}
		switch key {
		case znodeKeyWeight:
			w, err := parseZnodeWeight(text)
			if err != nil {
				return fmt.Errorf("weight %s: %w", znodeQuote(text), err)
			}
			n.Weight = w
		case znodeKeyZone:
			n.Zone = text
		case znodeKeyVersion:
			n.Version = text
		default:
			// Keys such as "@class" are Jackson's type information, not ours.
			if strings.HasPrefix(key, "@") {
				continue
			}
			if n.Metadata == nil {
				n.Metadata = make(map[string]string)
			}
			n.Metadata[key] = text
		}
	}
	return nil
}

// znodePair is one key=value of a k=v; list, in order of appearance.
type znodePair struct{ key, value string }

// parseZnodePairs splits "k1=v1;k2=v2;" into pairs. Keys are trimmed, values
// kept as written; empty segments are skipped.
func parseZnodePairs(s string) ([]znodePair, error) {
	var pairs []znodePair
	// A set, not a scan of pairs, so that a list of thousands of keys is not
	// quadratic.
	seen := make(map[string]struct{})
	for seg := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(seg) == "" {
			continue
		}
		key, value, ok := strings.Cut(seg, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return nil, fmt.Errorf("segment %s has no '='", znodeQuote(seg))
		}
		if key == "" {
			return nil, fmt.Errorf("segment %s has an empty key", znodeQuote(seg))
		}
		if _, dup := seen[key]; dup {
			return nil, fmt.Errorf("key %s appears more than once", znodeQuote(key))
		}
		seen[key] = struct{}{}
		pairs = append(pairs, znodePair{key, value})
	}
	return pairs, nil
}

// znodeLookupOK returns the trimmed value of key and whether it is present.
// The parser looks up a fixed handful of keys, so a scan stays linear.
func znodeLookupOK(pairs []znodePair, key string) (string, bool) {
	for _, p := range pairs {
		if p.key == key {
			return strings.TrimSpace(p.value), true
		}
	}
	return "", false
}

func znodeLookup(pairs []znodePair, key string) string {
	v, _ := znodeLookupOK(pairs, key)
	return v
}

// znodeMetadata collects the pairs that are not Node fields; data pairs win
// over name pairs with the same key.
func znodeMetadata(nameKV, dataKV []znodePair) map[string]string {
	var md map[string]string
	for _, list := range [][]znodePair{nameKV, dataKV} {
		for _, p := range list {
			if slices.Contains(znodeReservedKeys, p.key) {
				continue
			}
			if md == nil {
				md = make(map[string]string)
			}
			md[p.key] = p.value
		}
	}
	return md
}

// parseZnodeAddr reads "host:port", "[v6]:port" or "scheme://host:port[/]"
// and returns the lower-case scheme ("" when absent) and the host:port as
// CanonicalAddr writes it.
func parseZnodeAddr(s string) (scheme, hostPort string, err error) {
	s = strings.TrimSpace(s)
	if before, after, ok := strings.Cut(s, "://"); ok {
		scheme = strings.ToLower(before)
		if scheme != "http" && scheme != "https" {
			return "", "", fmt.Errorf("scheme %s is not http or https", znodeQuote(before))
		}
		s = strings.TrimSuffix(after, "/")
	}
	hostPort, err = canonicalAddr(s)
	if err != nil {
		return "", "", err
	}
	return scheme, hostPort, nil
}

// checkZnodeHost rejects hosts that cannot be part of a URL's authority.
func checkZnodeHost(host string) error {
	if host == "" {
		return errors.New("empty host")
	}
	if !utf8.ValidString(host) {
		return errors.New("host is not valid UTF-8")
	}
	for _, r := range host {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`/\?#@[]=;`, r) {
			return fmt.Errorf("host contains %q", r)
		}
	}
	// Only an IPv6 address (possibly with a zone) may hold a colon.
	if strings.Contains(host, ":") {
		if _, err := netip.ParseAddr(host); err != nil {
			return errors.New("host has a colon but is not an IPv6 address")
		}
	}
	return nil
}

// parseZnodePort accepts decimal digits only (no sign) in 1..65535.
func parseZnodePort(s string) (int, error) {
	if s == "" {
		return 0, errors.New("missing port")
	}
	if strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %s is not a number", znodeQuote(s))
	}
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil || p < 1 {
		return 0, fmt.Errorf("port %s is out of range 1..65535", znodeQuote(s))
	}
	return int(p), nil
}

// parseZnodeWeight accepts a positive decimal integer up to znodeMaxWeight.
func parseZnodeWeight(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a positive integer")
	}
	w, err := strconv.ParseUint(s, 10, 32)
	if err != nil || w > znodeMaxWeight {
		return 0, fmt.Errorf("more than %d", znodeMaxWeight)
	}
	if w < 1 {
		return 0, errors.New("not a positive integer")
	}
	return int(w), nil
}

// znodeErrorf formats an error about child name; args must already be short.
func znodeErrorf(name, format string, args ...any) error {
	return fmt.Errorf("discovery: znode %s: "+format, append([]any{znodeQuote(name)}, args...)...)
}

// znodeQuote quotes s like strconv.Quote for an error message, cut so that
// the quoted text is at most about znodeMaxQuoted bytes however many bytes
// need escaping; a cut string says how long it was.
func znodeQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		_, width := utf8.DecodeRuneInString(s[i:])
		q := strconv.Quote(s[i : i+width])
		q = q[1 : len(q)-1]
		if b.Len()+len(q) > znodeMaxQuoted {
			fmt.Fprintf(&b, `"...(%d bytes)`, len(s))
			return b.String()
		}
		b.WriteString(q)
		i += width
	}
	b.WriteByte('"')
	return b.String()
}

// FormatZnodeData renders the k=v; data that `zkpresto register` writes for
// n: "uri=host:port;weight=W;zone=Z;version=V;", load=R,Q,S,MS; when n.Load
// is known (PublishedLoad.String), notready=REASON; when n.NotReady is set
// (and holds no ';'), then the Metadata entries in key order. An https node is written as uri=https://host:port. A
// weight below 1 is written as 1 and one above the largest ParseZnode accepts
// (1000000) as that largest; an empty zone or version is left out.
//
// Entries that the format cannot carry are left out rather than corrupting
// the rest: a zone, version or metadata value containing ';', a metadata key
// that is empty, contains '=' or ';' or surrounding spaces, and metadata keys
// that ParseZnode reads into Node fields (uri, weight, zone, version,
// serverUri, serviceUri, sequence and the Hive address keys).
//
// ParseZnode reads the result back to n when the child name comes from
// ZnodeName (plus ZooKeeper's sequence number), ID and Format aside.
func FormatZnodeData(n Node) []byte {
	var b strings.Builder
	b.WriteString(znodeKeyURI + "=")
	if strings.EqualFold(n.Scheme, "https") {
		b.WriteString("https://")
	}
	b.WriteString(n.Addr)
	b.WriteString(";" + znodeKeyWeight + "=")
	b.WriteString(strconv.Itoa(min(max(n.Weight, 1), znodeMaxWeight)))
	b.WriteString(";")
	writePair := func(key, value string) {
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(value)
		b.WriteByte(';')
	}
	if n.Zone != "" && !strings.Contains(n.Zone, ";") {
		writePair(znodeKeyZone, n.Zone)
	}
	if n.Version != "" && !strings.Contains(n.Version, ";") {
		writePair(znodeKeyVersion, n.Version)
	}
	if n.Load.Known() {
		writePair(znodeKeyLoad, n.Load.String())
	}
	if n.NotReady != "" && !strings.Contains(n.NotReady, ";") {
		writePair(znodeKeyNotReady, strings.TrimSpace(n.NotReady))
	}
	keys := make([]string, 0, len(n.Metadata))
	for k, v := range n.Metadata {
		if k == "" || k != strings.TrimSpace(k) || strings.ContainsAny(k, "=;") ||
			strings.Contains(v, ";") || slices.Contains(znodeReservedKeys, k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		writePair(k, n.Metadata[k])
	}
	return []byte(b.String())
}

// ZnodeName renders the Hive/Kyuubi-style child name prefix for n:
// "serverUri=host:port;version=V;sequence=". Create the child
// ephemeral-sequential with this prefix and ZooKeeper appends the sequence
// number, so that Hive and Kyuubi clients can read the node too. A version
// that cannot appear in a child name (it contains ';' or '/') is written
// empty.
func ZnodeName(n Node) string {
	version := n.Version
	if strings.ContainsAny(version, ";/") {
		version = ""
	}
	return znodeKeyServerURI + "=" + n.Addr + ";" + znodeKeyVersion + "=" + version + ";" + znodeKeySequence + "="
}
