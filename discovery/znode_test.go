package discovery_test

import (
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/discovery"
)

// Registrations as the real servers write them, shared with the fuzz seeds.
const (
	// HiveServer2 3.x with hive.server2.zookeeper.publish.configs=true: the
	// name carries serverUri, the data the published configuration.
	znodeHS2Name = "serverUri=hs2-1.example.com:10000;version=3.1.3;sequence=0000000012"
	znodeHS2Data = "hive.server2.instance.uri=hs2-1.example.com:10000;" +
		"hive.server2.authentication=KERBEROS;hive.server2.transport.mode=binary;" +
		"hive.server2.thrift.sasl.qop=auth;hive.server2.thrift.bind.host=hs2-1.example.com;" +
		"hive.server2.thrift.port=10000;hive.server2.use.SSL=false;" +
		"hive.server2.authentication.kerberos.principal=hive/_HOST@EXAMPLE.COM"

	// HiveServer2 4.x in http transport mode with TLS and no bind host set:
	// the address must come from hive.server2.instance.uri.
	znodeHS2HTTPName = "serverUri=10.0.0.7:10001;version=4.0.0;sequence=0000000003"
	znodeHS2HTTPData = "hive.server2.thrift.bind.host=;hive.server2.instance.uri=10.0.0.7:10001;" +
		"hive.server2.transport.mode=http;hive.server2.thrift.http.port=10001;" +
		"hive.server2.thrift.http.path=cliservice;hive.server2.use.SSL=true;" +
		"hive.server2.authentication=NONE"

	// Kyuubi server: the name, and host:port data (publish configs off).
	znodeKyuubiName = "serverUri=10.0.0.1:10009;version=1.7.0;sequence=0000000001"
	znodeKyuubiData = "10.0.0.1:10009"

	// Kyuubi with kyuubi.ha.zookeeper.publish.configs=true.
	znodeKyuubiConfData = "hive.server2.thrift.sasl.qop=auth;hive.server2.thrift.bind.host=10.0.0.1;" +
		"hive.server2.transport.mode=binary;hive.server2.authentication=NONE;hive.server2.thrift.port=10009"

	// A Kyuubi engine with an engine reference id, and an old Kyuubi name.
	znodeKyuubiEngineName = "serverUri=10.0.0.3:36411;version=1.7.0;refId=6c9d7a8e-0c7f-4a51-9f0e-2b8f3f7d1c21;sequence=0000000000"
	znodeKyuubiOldName    = "serviceUri=10.0.0.4:10009;version=1.3.1;sequence=0000000005"

	// Curator's JsonInstanceSerializer output, with and without a payload.
	znodeCuratorID   = "5f0c4a3e-8d2b-4e6f-9a1c-7b3d2e1f0a9b"
	znodeCuratorData = `{"name":"presto","id":"5f0c4a3e-8d2b-4e6f-9a1c-7b3d2e1f0a9b","address":"10.0.0.5",` +
		`"port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC",` +
		`"uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},` +
		`{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true}]},` +
		`"enabled":true}`
	znodeCuratorPayloadData = `{"name":"presto","id":"coord-2","address":"coord-2.example.com","port":8080,` +
		`"sslPort":8443,"payload":{"@class":"com.example.PrestoPayload","weight":"3","zone":"us-east-1a",` +
		`"version":"0.287","cluster":"adhoc","cores":32,"gpu":false,"tags":["a","b"],"owner":null},` +
		`"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}`

	// What `zkpresto register` writes.
	znodeOursName = "serverUri=10.0.0.9:8080;version=0.287;sequence=0000000042"
	znodeOursData = "uri=https://10.0.0.9:8443;weight=4;zone=rack-2;version=0.287;cluster=etl;"
)

func TestParseZnode(t *testing.T) {
	tests := []struct {
		name, child, data string
		want              discovery.Node
	}{
		{
			name: "hiveserver2 published configs", child: znodeHS2Name, data: znodeHS2Data,
			want: discovery.Node{
				Addr: "hs2-1.example.com:10000", Scheme: "http", Weight: 1, Version: "3.1.3",
				ID: znodeHS2Name, Format: discovery.FormatHive,
				Metadata: map[string]string{
					"hive.server2.authentication":                    "KERBEROS",
					"hive.server2.transport.mode":                    "binary",
					"hive.server2.thrift.sasl.qop":                   "auth",
					"hive.server2.authentication.kerberos.principal": "hive/_HOST@EXAMPLE.COM",
				},
			},
		},
		{
			name: "hiveserver2 http mode, empty bind host, TLS", child: znodeHS2HTTPName, data: znodeHS2HTTPData,
			want: discovery.Node{
				Addr: "10.0.0.7:10001", Scheme: "https", Weight: 1, Version: "4.0.0",
				ID: znodeHS2HTTPName, Format: discovery.FormatHive,
				Metadata: map[string]string{
					"hive.server2.transport.mode":   "http",
					"hive.server2.thrift.http.path": "cliservice",
					"hive.server2.authentication":   "NONE",
				},
			},
		},
		{
			name: "hive http mode prefers the http port", child: "serverUri=h:1;sequence=1",
			data: "hive.server2.thrift.bind.host=hs2-2;hive.server2.transport.mode=HTTP;hive.server2.thrift.port=10000;hive.server2.thrift.http.port=10001",
			want: discovery.Node{
				Addr: "hs2-2:10001", Scheme: "http", Weight: 1, ID: "serverUri=h:1;sequence=1", Format: discovery.FormatHive,
				Metadata: map[string]string{"hive.server2.transport.mode": "HTTP"},
			},
		},
		{
			name: "hive wildcard bind host falls back to instance uri", child: "serverUri=h:1;sequence=1",
			data: "hive.server2.thrift.bind.host=0.0.0.0;hive.server2.thrift.port=10000;hive.server2.instance.uri=hs2-3:10000",
			want: discovery.Node{Addr: "hs2-3:10000", Scheme: "http", Weight: 1, ID: "serverUri=h:1;sequence=1", Format: discovery.FormatHive},
		},
		{
			name: "hive bind host without port falls back to instance uri", child: "serverUri=h:1;sequence=1",
			data: "hive.server2.thrift.bind.host=hs2-4;hive.server2.instance.uri=hs2-4:10000",
			want: discovery.Node{Addr: "hs2-4:10000", Scheme: "http", Weight: 1, ID: "serverUri=h:1;sequence=1", Format: discovery.FormatHive},
		},
		{
			name: "hive data without an address falls back to the name", child: "serverUri=hs2-5:10000;sequence=1",
			data: "hive.server2.transport.mode=binary",
			want: discovery.Node{
				Addr: "hs2-5:10000", Scheme: "http", Weight: 1, ID: "serverUri=hs2-5:10000;sequence=1", Format: discovery.FormatHive,
				Metadata: map[string]string{"hive.server2.transport.mode": "binary"},
			},
		},
		{
			name: "kyuubi host:port data", child: znodeKyuubiName, data: znodeKyuubiData,
			want: discovery.Node{Addr: "10.0.0.1:10009", Scheme: "http", Weight: 1, Version: "1.7.0", ID: znodeKyuubiName, Format: discovery.FormatHive},
		},
		{
			name: "kyuubi data wins over the name", child: znodeKyuubiName, data: "10.0.0.2:10009\n",
			want: discovery.Node{Addr: "10.0.0.2:10009", Scheme: "http", Weight: 1, Version: "1.7.0", ID: znodeKyuubiName, Format: discovery.FormatHive},
		},
		{
			name: "kyuubi published configs", child: znodeKyuubiName, data: znodeKyuubiConfData,
			want: discovery.Node{
				Addr: "10.0.0.1:10009", Scheme: "http", Weight: 1, Version: "1.7.0", ID: znodeKyuubiName, Format: discovery.FormatHive,
				Metadata: map[string]string{
					"hive.server2.thrift.sasl.qop": "auth", "hive.server2.transport.mode": "binary",
					"hive.server2.authentication": "NONE",
				},
			},
		},
		{
			name: "kyuubi engine name with refId and empty data", child: znodeKyuubiEngineName,
			want: discovery.Node{
				Addr: "10.0.0.3:36411", Scheme: "http", Weight: 1, Version: "1.7.0", ID: znodeKyuubiEngineName, Format: discovery.FormatHive,
				Metadata: map[string]string{"refId": "6c9d7a8e-0c7f-4a51-9f0e-2b8f3f7d1c21"},
			},
		},
		{
			name: "old kyuubi serviceUri name", child: znodeKyuubiOldName,
			want: discovery.Node{Addr: "10.0.0.4:10009", Scheme: "http", Weight: 1, Version: "1.3.1", ID: znodeKyuubiOldName, Format: discovery.FormatHive},
		},
		{
			name: "hive name with zone and weight, tolerant k=v syntax", child: " serverUri = h6:10000;; zone=z1 ; weight=2;sequence=7;",
			want: discovery.Node{Addr: "h6:10000", Scheme: "http", Weight: 2, Zone: "z1", ID: " serverUri = h6:10000;; zone=z1 ; weight=2;sequence=7;", Format: discovery.FormatHive},
		},
		{
			name: "hive IPv6 name", child: "serverUri=[fe80::1%eth0]:10000;version=1.7.0;sequence=1",
			want: discovery.Node{Addr: "[fe80::1%eth0]:10000", Scheme: "http", Weight: 1, Version: "1.7.0", ID: "serverUri=[fe80::1%eth0]:10000;version=1.7.0;sequence=1", Format: discovery.FormatHive},
		},
		{
			name: "curator as Curator writes it", child: znodeCuratorID, data: znodeCuratorData,
			want: discovery.Node{Addr: "10.0.0.5:8080", Scheme: "http", Weight: 1, ID: znodeCuratorID, Format: discovery.FormatCurator},
		},
		{
			name: "curator sslPort and object payload", child: "coord-2", data: znodeCuratorPayloadData,
			want: discovery.Node{
				Addr: "coord-2.example.com:8443", Scheme: "https", Weight: 3, Zone: "us-east-1a", Version: "0.287",
				ID: "coord-2", Format: discovery.FormatCurator,
				Metadata: map[string]string{"cluster": "adhoc", "cores": "32", "gpu": "false"},
			},
		},
		{
			name: "curator without id, IPv6, numeric weight, zero sslPort", child: "child-7",
			data: "  \n" + `{"address":"2001:db8::7","port":8080,"sslPort":0,"payload":{"weight":5,"zone":7}}`,
			want: discovery.Node{Addr: "[2001:db8::7]:8080", Scheme: "http", Weight: 5, Zone: "7", ID: "child-7", Format: discovery.FormatCurator},
		},
		{
			name: "curator string payload is ignored", child: "c", data: `{"id":"c8","address":"h","port":1,"payload":"just text"}`,
			want: discovery.Node{Addr: "h:1", Scheme: "http", Weight: 1, ID: "c8", Format: discovery.FormatCurator},
		},
		{
			name: "plain host:port", child: "10.0.0.8:8080",
			want: discovery.Node{Addr: "10.0.0.8:8080", Scheme: "http", Weight: 1, ID: "10.0.0.8:8080", Format: discovery.FormatHostPort},
		},
		{
			name: "plain IPv6, leading zeros in port", child: "[::1]:08080",
			want: discovery.Node{Addr: "[::1]:8080", Scheme: "http", Weight: 1, ID: "[::1]:08080", Format: discovery.FormatHostPort},
		},
		{
			name: "plain name with our data", child: "coord-9:8080", data: "uri=coord-9:9090;weight=2",
			want: discovery.Node{Addr: "coord-9:9090", Scheme: "http", Weight: 2, ID: "coord-9:8080", Format: discovery.FormatZkpresto},
		},
		{
			name: "ours", child: znodeOursName, data: znodeOursData,
			want: discovery.Node{
				Addr: "10.0.0.9:8443", Scheme: "https", Weight: 4, Zone: "rack-2", Version: "0.287",
				ID: znodeOursName, Format: discovery.FormatZkpresto, Metadata: map[string]string{"cluster": "etl"},
			},
		},
		{
			name: "ours, upper-case scheme and host, trailing slash, spaces around keys", child: "serverUri=x:1;sequence=2",
			data: " uri = HTTP://Coord-1.Example.com:8080/ ; weight= 7 ;zone=a;; note= kept as written;",
			want: discovery.Node{
				Addr: "coord-1.example.com:8080", Scheme: "http", Weight: 7, Zone: "a",
				ID: "serverUri=x:1;sequence=2", Format: discovery.FormatZkpresto, Metadata: map[string]string{"note": " kept as written"},
			},
		},
		{
			name: "ours, data version wins over the name", child: "serverUri=x:1;version=1;sequence=2",
			data: "uri=x:1;version=2",
			want: discovery.Node{Addr: "x:1", Scheme: "http", Weight: 1, Version: "2", ID: "serverUri=x:1;version=1;sequence=2", Format: discovery.FormatZkpresto},
		},
		{
			name: "ours, metadata value with '='", child: "serverUri=x:1;sequence=2", data: "uri=x:1;token=YWJj==;",
			want: discovery.Node{Addr: "x:1", Scheme: "http", Weight: 1, ID: "serverUri=x:1;sequence=2", Format: discovery.FormatZkpresto, Metadata: map[string]string{"token": "YWJj=="}},
		},
		{
			name: "largest weight and port", child: "serverUri=x:1;sequence=2", data: "uri=x:65535;weight=1000000",
			want: discovery.Node{Addr: "x:65535", Scheme: "http", Weight: 1000000, ID: "serverUri=x:1;sequence=2", Format: discovery.FormatZkpresto},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := discovery.ParseZnode(tt.child, []byte(tt.data))
			if err != nil {
				t.Fatalf("ParseZnode(%q, %q): %v", tt.child, tt.data, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseZnode(%q, %q)\n got %+v\nwant %+v", tt.child, tt.data, got, tt.want)
			}
		})
	}
}

func TestParseZnodeErrors(t *testing.T) {
	huge := strings.Repeat("x", 64<<10+1)
	tests := []struct {
		name, child, data string
		// wantIn are substrings the message must contain, besides the quoted child name.
		wantIn []string
	}{
		{name: "empty child name", child: "", wantIn: []string{"empty child name"}},
		{name: "huge data", child: "h:1", data: huge, wantIn: []string{"65537 bytes", "65536 allowed"}},
		{name: "huge name", child: huge, wantIn: []string{"child name is 65537 bytes"}},
		{name: "garbage name", child: "garbage", wantIn: []string{"missing port"}},
		// Found by FuzzParseZnode: every byte of name and port needs escaping.
		{name: "escaped bytes everywhere", child: "00000:00" + strings.Repeat("\x9b", 91), wantIn: []string{"is not a number", "(99 bytes)"}},
		{name: "garbage data", child: "serverUri=h:1;sequence=1", data: "\x00\xff garbage", wantIn: []string{"data", "missing port"}},
		{name: "garbage data with a port", child: "serverUri=h:1;sequence=1", data: "\x01garbage:80", wantIn: []string{"data", `host contains '\x01'`}},
		{name: "invalid UTF-8 host", child: "\xff:80", wantIn: []string{"not valid UTF-8"}},
		{name: "missing port", child: "coord-1", wantIn: []string{"missing port"}},
		{name: "empty port", child: "coord-1:", wantIn: []string{"missing port"}},
		{name: "port zero", child: "coord-1:0", wantIn: []string{`port "0" is out of range`}},
		{name: "port too big", child: "coord-1:65536", wantIn: []string{`port "65536" is out of range`}},
		{name: "port not a number", child: "coord-1:http", wantIn: []string{`port "http" is not a number`}},
		{name: "signed port", child: "coord-1:+80", wantIn: []string{`port "+80" is not a number`}},
		{name: "empty host", child: ":8080", wantIn: []string{"empty host"}},
		{name: "host with a space", child: "serverUri=h:1;sequence=1", data: "uri=bad host:8080", wantIn: []string{"uri", "host contains ' '"}},
		{name: "host with a slash", child: "serverUri=h:1;sequence=1", data: "uri=http://h/x:8080", wantIn: []string{"host contains '/'"}},
		{name: "host with colons", child: "serverUri=[a:b]:1;sequence=1", wantIn: []string{"serverUri", "not an IPv6 address"}},
		{name: "too many colons", child: "::1:8080", wantIn: []string{"too many colons"}},
		{name: "bad scheme", child: "serverUri=h:1;sequence=1", data: "uri=ftp://h:21", wantIn: []string{`scheme "ftp" is not http or https`}},
		{name: "bad serverUri", child: "serverUri=h;sequence=1", wantIn: []string{"serverUri", "missing port"}},
		{name: "no address anywhere", child: "version=1;sequence=1", wantIn: []string{"no address"}},
		{name: "bad hive port", child: "serverUri=h:1;sequence=1", data: "hive.server2.thrift.bind.host=h;hive.server2.thrift.port=x", wantIn: []string{"hive.server2.thrift.bind.host", `port "x" is not a number`}},
		{name: "weight zero", child: "serverUri=h:1;sequence=1", data: "uri=h:1;weight=0", wantIn: []string{`weight "0"`, "not a positive integer"}},
		{name: "weight negative", child: "serverUri=h:1;sequence=1", data: "uri=h:1;weight=-2", wantIn: []string{`weight "-2"`, "not a positive integer"}},
		{name: "weight fraction", child: "serverUri=h:1;sequence=1", data: "uri=h:1;weight=1.5", wantIn: []string{`weight "1.5"`}},
		{name: "weight empty", child: "serverUri=h:1;sequence=1", data: "uri=h:1;weight=", wantIn: []string{`weight ""`}},
		{name: "weight too big", child: "serverUri=h:1;sequence=1", data: "uri=h:1;weight=1000001", wantIn: []string{`weight "1000001"`, "more than 1000000"}},
		{name: "weight overflow", child: "serverUri=h:1;sequence=1", data: "uri=h:1;weight=99999999999999999999999", wantIn: []string{"more than 1000000"}},
		{name: "weight in the name", child: "serverUri=h:1;weight=heavy;sequence=1", wantIn: []string{`weight "heavy"`}},
		{name: "segment without =", child: "serverUri=h:1;oops;sequence=1", wantIn: []string{"child name", `segment "oops" has no '='`}},
		{name: "empty key", child: "serverUri=h:1;sequence=1", data: "uri=h:1;=v", wantIn: []string{"data", "empty key"}},
		{name: "duplicate key", child: "serverUri=h:1;sequence=1", data: "uri=h:1;uri=h:2", wantIn: []string{`key "uri" appears more than once`}},
		{name: "bad JSON", child: "c1", data: `{"address":"h","port":`, wantIn: []string{"Curator instance JSON"}},
		{name: "JSON trailing garbage", child: "c1", data: `{"address":"h","port":1} x`, wantIn: []string{"Curator instance JSON"}},
		{name: "JSON port of wrong type", child: "c1", data: `{"address":"h","port":"8080"}`, wantIn: []string{`field "port" holds a JSON string where a whole number belongs`}},
		{name: "JSON fractional port", child: "c1", data: `{"address":"h","port":80.5}`, wantIn: []string{`field "port" holds a JSON number`}},
		{name: "JSON address of wrong type", child: "c1", data: `{"address":7,"port":80}`, wantIn: []string{`field "address" holds a JSON number where a string belongs`}},
		{name: "JSON without address", child: "c1", data: `{"id":"c1","port":8080}`, wantIn: []string{"Curator address", "empty host"}},
		{name: "JSON without port", child: "c1", data: `{"id":"c1","address":"h","port":null,"sslPort":null}`, wantIn: []string{"neither port nor sslPort"}},
		{name: "JSON port out of range", child: "c1", data: `{"address":"h","port":70000}`, wantIn: []string{"Curator port 70000"}},
		{name: "JSON sslPort out of range", child: "c1", data: `{"address":"h","port":80,"sslPort":70000}`, wantIn: []string{"Curator port 70000"}},
		{name: "JSON address with port", child: "c1", data: `{"address":"h:80","port":80}`, wantIn: []string{"Curator address", "not an IPv6 address"}},
		{name: "JSON disabled", child: "c1", data: `{"address":"h","port":80,"enabled":false}`, wantIn: []string{"disabled"}},
		{name: "JSON bad payload weight", child: "c1", data: `{"address":"h","port":80,"payload":{"weight":2.5}}`, wantIn: []string{"Curator payload", `weight "2.5"`}},
		{name: "JSON bad payload", child: "c1", data: `{"address":"h","port":80,"payload":{"weight":}}`, wantIn: []string{"Curator instance JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := discovery.ParseZnode(tt.child, []byte(tt.data))
			if err == nil {
				t.Fatalf("ParseZnode(%.100q, %.100q) = %+v, want an error", tt.child, tt.data, n)
			}
			msg := err.Error()
			if len(msg) > znodeMaxErrorLen {
				t.Errorf("error is %d bytes, want at most %d: %.300s", len(msg), znodeMaxErrorLen, msg)
			}
			// The child's name is quoted, or its quoted start when it is long.
			wantName := strconv.Quote(tt.child)
			if len(wantName) > 100 {
				wantName = wantName[:20]
			}
			if !strings.Contains(msg, wantName) {
				t.Errorf("error %q does not name the child %s", msg, wantName)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
		})
	}
}

// znodeMaxErrorLen bounds ParseZnode's error messages: a message quotes at
// most three names or values, each cut to about 100 bytes once escaped.
const znodeMaxErrorLen = 512

func TestFormatZnodeDataAndName(t *testing.T) {
	n := discovery.Node{
		Addr: "10.0.0.9:8443", Scheme: "https", Weight: 4, Zone: "rack-2", Version: "0.287",
		Metadata: map[string]string{"cluster": "etl", "az": "1"},
	}
	if got, want := string(discovery.FormatZnodeData(n)), "uri=https://10.0.0.9:8443;weight=4;zone=rack-2;version=0.287;az=1;cluster=etl;"; got != want {
		t.Errorf("FormatZnodeData = %q, want %q", got, want)
	}
	if got, want := discovery.ZnodeName(n), "serverUri=10.0.0.9:8443;version=0.287;sequence="; got != want {
		t.Errorf("ZnodeName = %q, want %q", got, want)
	}

	// Defaults, and what the format cannot carry is left out.
	odd := discovery.Node{
		Addr: "h:1", Version: "1;2/3",
		Metadata: map[string]string{
			"ok": "v", "semi": "a;b", "": "empty", "k=v": "x", " sp": "x", "uri": "h:2", "weight": "9",
			"sequence": "1", "hive.server2.use.SSL": "true",
		},
	}
	if got, want := string(discovery.FormatZnodeData(odd)), "uri=h:1;weight=1;ok=v;"; got != want {
		t.Errorf("FormatZnodeData(odd) = %q, want %q", got, want)
	}
	if got, want := discovery.ZnodeName(odd), "serverUri=h:1;version=;sequence="; got != want {
		t.Errorf("ZnodeName(odd) = %q, want %q", got, want)
	}
	if got, want := string(discovery.FormatZnodeData(discovery.Node{Addr: "h:1", Weight: 5_000_000})), "uri=h:1;weight=1000000;"; got != want {
		t.Errorf("FormatZnodeData(heavy) = %q, want %q", got, want)
	}
}

func TestZnodeRoundTrip(t *testing.T) {
	nodes := []discovery.Node{
		{Addr: "10.0.0.1:8080", Scheme: "http", Weight: 1},
		{Addr: "coord-1.example.com:8443", Scheme: "https", Weight: 3, Zone: "us-east-1a", Version: "0.287"},
		{Addr: "[::1]:8080", Scheme: "http", Weight: 1000000, Version: "trino/435"},
		{Addr: "[fe80::1%eth0]:9000", Scheme: "https", Weight: 2, Zone: "z", Metadata: map[string]string{
			"cluster": "adhoc", "token": "YWJj==", "spaced": " padded value", "hive.server2.transport.mode": "binary",
		}},
	}
	for _, want := range nodes {
		name := discovery.ZnodeName(want) + "0000000007"
		data := discovery.FormatZnodeData(want)
		got, err := discovery.ParseZnode(name, data)
		if err != nil {
			t.Errorf("ParseZnode(%q, %q): %v", name, data, err)
			continue
		}
		want.ID, want.Format = name, discovery.FormatZkpresto
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %q, %q\n got %+v\nwant %+v", name, data, got, want)
		}
		if !maps.Equal(got.Metadata, want.Metadata) {
			t.Errorf("metadata %v, want %v", got.Metadata, want.Metadata)
		}
	}
}

func TestParseZnodeErrorIsBounded(t *testing.T) {
	// Near the size limit, with a long bad value: the message stays short.
	name := "serverUri=h:1;sequence=" + strings.Repeat("\x01", 60<<10)
	data := "uri=h:1;weight=" + strings.Repeat("\xfe", 60<<10)
	_, err := discovery.ParseZnode(name, []byte(data))
	if err == nil {
		t.Fatal("want an error for a non-numeric weight")
	}
	if len(err.Error()) > znodeMaxErrorLen {
		t.Errorf("error is %d bytes, want at most %d", len(err.Error()), znodeMaxErrorLen)
	}
	if !strings.Contains(err.Error(), "bytes)") {
		t.Errorf("error %q does not say the name was cut", err)
	}
}

func BenchmarkParseZnode(b *testing.B) {
	var many strings.Builder
	for i := 0; many.Len() < 60<<10; i++ {
		many.WriteString("k" + strconv.Itoa(i) + "=v;")
	}
	cases := []struct{ name, child, data string }{
		{"hiveserver2", znodeHS2Name, znodeHS2Data},
		{"curator", znodeCuratorID, znodeCuratorData},
		{"ours", znodeOursName, znodeOursData},
		{"60KiB of keys", znodeOursName, "uri=h:1;" + many.String()},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.data)
			b.SetBytes(int64(len(c.child) + len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := discovery.ParseZnode(c.child, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
