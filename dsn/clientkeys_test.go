package dsn

import (
	"reflect"
	"strings"
	"testing"
)

// clientKeysSecret is an extra credential and a token that no error or
// String may show.
const clientKeysSecret = "s3cr3t-CANARY-7f1e"

func TestClientKeysParse(t *testing.T) {
	for _, tc := range []struct {
		name, dsn string
		want      func(c *Config)
	}{
		{"JDBC spellings", "trino://c1?roles=hive:admin;system:ALL&extraCredentials=s3:" + clientKeysSecret + ";other:a:b&traceToken=t-1&clientInfo=bi&resourceEstimates=EXECUTION_TIME:10m;PEAK_MEMORY:2GB",
			func(c *Config) {
				c.Trino = true
				c.Roles = map[string]string{"hive": "admin", "system": "ALL"}
				c.ExtraCredentials = map[string]string{"s3": clientKeysSecret, "other": "a:b"}
				c.TraceToken, c.ClientInfo = "t-1", "bi"
				c.ResourceEstimates = map[string]string{"EXECUTION_TIME": "10m", "PEAK_MEMORY": "2GB"}
			}},
		{"trino-go-client spellings", "presto://c1?extra_credentials=s3:" + clientKeysSecret + "&trace_token=t-2&client_info=x",
			func(c *Config) {
				c.ExtraCredentials = map[string]string{"s3": clientKeysSecret}
				c.TraceToken, c.ClientInfo = "t-2", "x"
			}},
		{"in the ; part, a trailing ;", "presto://c1;roles=hive:r1%3B;resourceEstimates=CPU_TIME:1.5h",
			func(c *Config) {
				c.Roles = map[string]string{"hive": "r1"}
				c.ResourceEstimates = map[string]string{"CPU_TIME": "1.5h"}
			}},
		{"access token over TLS", "trino://c1?SSL=true&accessToken=" + clientKeysSecret,
			func(c *Config) { c.Trino, c.SSL, c.AccessToken = true, true, clientKeysSecret }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDSN(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			want := wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"}; tc.want(c) })
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
			again, err := ParseDSN(got.FormatDSN())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("FormatDSN %q does not parse back the same: %v", "(not shown)", err)
			}
			if s := got.String(); strings.Contains(s, clientKeysSecret) {
				t.Fatalf("String shows the secret: %s", s)
			}
			if got.Clone().ExtraCredentials != nil && reflect.ValueOf(got.Clone().ExtraCredentials).Pointer() == reflect.ValueOf(got.ExtraCredentials).Pointer() {
				t.Fatal("Clone shares ExtraCredentials")
			}
		})
	}
	c, _ := ParseDSN("presto://c1?extraCredentials=a:" + clientKeysSecret + ";b:x&SSL=true&accessToken=" + clientKeysSecret)
	if s := c.String(); !strings.Contains(s, "extraCredentials=a:xxxxx%3Bb:xxxxx") || !strings.Contains(s, "accessToken=xxxxx") {
		t.Fatalf("String = %s, want the names with the values redacted", s)
	}
}

func TestClientKeysRefused(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"presto://c1?accessToken=" + clientKeysSecret, "bad accessToken: an access token is sent over https only"},
		{"presto://c1?roles=hive", `bad roles: entry "hive": want name:value`},
		{"presto://c1?roles=hive:a;hive:b", `bad roles: "hive" given twice with different values`},
		{"presto://c1?roles=hive:", `bad roles: catalog "hive": empty role`},
		{"presto://c1?roles=a%3Db:r", `bad roles: catalog "a=b": the name may not hold '='`},
		{"presto://c1?extraCredentials=" + clientKeysSecret, `bad extraCredentials: an entry has no ":"`},
		{"presto://c1?extraCredentials=a:" + clientKeysSecret + ";a:x" + clientKeysSecret, `bad extraCredentials: "a" given twice`},
		{"presto://c1?extraCredentials=a,b:" + clientKeysSecret, `bad extraCredentials: credential "a,b": the name may not hold ','`},
		{"presto://c1?resourceEstimates=MEMORY:1GB", `unknown resource estimate "MEMORY"`},
		{"presto://c1?resourceEstimates=EXECUTION_TIME:10", `EXECUTION_TIME "10": want a number followed by one of ns, us, ms, s, m, h, d`},
		{"presto://c1?resourceEstimates=PEAK_MEMORY:0x1p2GB", `PEAK_MEMORY "0x1p2GB": want a number`},
		{"presto://c1?traceToken=a%0Ab", "bad traceToken: control character"},
	} {
		_, err := ParseDSN(tc.dsn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDSN(%q) = %v, want an error with %q", tc.dsn, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), clientKeysSecret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	// A hand-built Config gets the same checks, and a credential value
	// with ";" is refused without being quoted.
	c := NewConfig()
	c.Hosts = []string{"c1:8080"}
	c.ExtraCredentials = map[string]string{"a": clientKeysSecret + ";x"}
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), clientKeysSecret) || !strings.Contains(err.Error(), `credential "a": its value holds ";"`) {
		t.Fatalf("Validate = %v", err)
	}
	c.ExtraCredentials = nil
	c.AccessToken = clientKeysSecret
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "https only") {
		t.Fatalf("Validate without TLS = %v", err)
	}
	c.SSLCA = "ca.pem"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate with TLS = %v", err)
	}
}
