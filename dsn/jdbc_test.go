package dsn

import (
	"maps"
	"strings"
	"testing"
)

// TestJDBCURLs checks that URLs written for the Presto JDBC driver either
// mean here what they meant there or are refused with what to write
// instead, and that a Hive or Kyuubi #hivevar part is refused rather than
// read into the last value.
func TestJDBCURLs(t *testing.T) {
	for _, tc := range []struct {
		name, dsn string
		check     func(*Config) bool
	}{
		{"SSL=true is https", "jdbc:presto://c1:8443/hive?SSL=true&user=alice",
			func(c *Config) bool { return c.SSL && c.UsesTLS() && c.User == "alice" }},
		{"SSL=false is http", "jdbc:presto://c1:8080?SSL=false", func(c *Config) bool { return !c.UsesTLS() }},
		{"sessionProperties", "jdbc:presto://c1:8080/hive?sessionProperties=query_max_run_time:1h;hive.compression_codec:ZSTD",
			func(c *Config) bool {
				return maps.Equal(c.SessionProperties, map[string]string{"query_max_run_time": "1h", "hive.compression_codec": "ZSTD"})
			}},
		{"clientTags", "jdbc:presto://c1?clientTags=a,b", func(c *Config) bool { return strings.Join(c.ClientTags, ",") == "a,b" }},
		{"applicationNamePrefix", "jdbc:presto://c1?applicationNamePrefix=etl", func(c *Config) bool { return c.Source == "etl" }},
		{"timeZoneId", "jdbc:presto://c1?timeZoneId=Europe/Paris", func(c *Config) bool { return c.TimeZone == "Europe/Paris" }},
		{"SSLVerification=NONE", "jdbc:presto://c1?SSL=true&SSLVerification=NONE", func(c *Config) bool { return c.SSLSkipVerify }},
		{"sessionProperties agreeing with a key", "jdbc:presto://c1?sessionProperties=a:1&a=1",
			func(c *Config) bool { return c.SessionProperties["a"] == "1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseDSN(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("ParseDSN(%q) = %+v", tc.dsn, c)
			}
			again, err := ParseDSN(c.FormatDSN())
			if err != nil || again.FormatDSN() != c.FormatDSN() || again.UsesTLS() != c.UsesTLS() {
				t.Fatalf("FormatDSN %q does not parse back the same: %v", c.FormatDSN(), err)
			}
		})
	}
	for _, tc := range []struct{ dsn, want string }{
		{"jdbc:presto://c1?SSL=true&SSLTrustStorePath=/etc/ts.jks", "bad SSLTrustStorePath: the Presto JDBC driver's key is not supported: Java key stores are not read; use ssl_ca=<PEM file"},
		{"jdbc:presto://c1?SSLKeyStorePassword=" + testPasswordEnc, "bad SSLKeyStorePassword: the Presto JDBC driver's key is not supported: Java key stores are not read; use ssl_cert="},
		{"jdbc:presto://c1?KerberosPrincipal=p", "Kerberos is not supported"},
		{"jdbc:presto://c1?SSLVerification=CA", "bad SSLVerification \"CA\": CA (the chain without the host name) is not supported"},
		{"jdbc:presto://c1?sessionProperties=a:1&a=2", `session property "a" given twice`},
		{"jdbc:presto://c1?sessionProperties=Bad:1", `entry "Bad:1": "Bad" is not a session property name`},
		{"jdbc:presto://c1?sessionProperties=novalue", `entry "novalue": want name:value`},
		{"jdbc:presto://zk1:2181/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto?user=alice#hivevar:x=1", `a "#" part (Hive variables`},
		{"presto://alice:" + testPasswordEnc + "@c1?user=alice#x", `a "#" part`},
	} {
		_, err := ParseDSN(tc.dsn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDSN(%q) = %v, want an error with %q", tc.dsn, err, tc.want)
		}
		if err != nil {
			checkNoPassword(t, err.Error())
		}
	}
	// A "#" in the password is the password's.
	c, err := ParseDSN("presto://alice:pa#ss@c1")
	if err != nil || c.Password != "pa#ss" {
		t.Fatalf("a # in the password: %v", err)
	}
}
