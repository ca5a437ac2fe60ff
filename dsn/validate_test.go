package dsn

import (
	"strings"
	"testing"
	"time"
)

// TestValidateMatchesParseDSN builds Configs by hand with each bad value a
// DSN can spell and expects validate to give ParseDSN's message.
func TestValidateMatchesParseDSN(t *testing.T) {
	tests := []struct {
		name   string
		dsn    string
		change func(c *Config)
	}{
		{"no hosts", "presto:///hive", func(c *Config) { c.Hosts = nil }},
		{"port zero", "presto://c1:0", func(c *Config) { c.Hosts = []string{"c1:0"} }},
		{"port too large", "presto://c1:99999", func(c *Config) { c.Hosts = []string{"c1:99999"} }},
		{"bad host character", "presto://c%31:8080", func(c *Config) { c.Hosts = []string{"c%31:8080"} }},
		{"unbracketed IPv6", "presto://::1:8080", func(c *Config) { c.Hosts = []string{"::1:8080"} }},
		{"bad IPv6", "presto://[zz::1]:8080", func(c *Config) { c.Hosts = []string{"[zz::1]:8080"} }},
		{"IPv6 zone", "presto://[fe80::1%25eth0]:8080", func(c *Config) { c.Hosts = []string{"[fe80::1%25eth0]:8080"} }},
		{"duplicate host", "presto://c1:8080,c2:8080,c1:8080", func(c *Config) { c.Hosts = []string{"c1:8080", "c2:8080", "c1:8080"} }},
		{"schema without catalog", "presto://c1:8080//sch", func(c *Config) { c.Schema = "sch" }},
		{"empty namespace segment", "presto://c1:8080;zooKeeperNamespace=a//b", func(c *Config) { c.Namespace = "a//b" }},
		{"relative namespace segment", "presto://c1:8080;zooKeeperNamespace=a/../b", func(c *Config) { c.Namespace = "a/../b" }},
		{"reserved namespace", "presto://c1:8080;zooKeeperNamespace=zookeeper/x", func(c *Config) { c.Namespace = "zookeeper/x" }},
		{"control character in namespace", "presto://c1:8080;zooKeeperNamespace=a%01b", func(c *Config) { c.Namespace = "a\x01b" }},
		{"invalid UTF-8 namespace", "presto://c1:8080;zooKeeperNamespace=%FF", func(c *Config) { c.Namespace = "\xff" }},
		{"negative session timeout", "presto://c1:8080;zooKeeperSessionTimeout=-1s", func(c *Config) { c.SessionTimeout = -time.Second }},
		{"negative connect timeout", "presto://c1:8080;zooKeeperConnectTimeout=-1m30s", func(c *Config) { c.ConnectTimeout = -90 * time.Second }},
		{"negative dial timeout", "presto://c1:8080;dialTimeout=-1s", func(c *Config) { c.DialTimeout = -time.Second }},
		{"negative write timeout", "presto://c1:8080;writeTimeout=-2s", func(c *Config) { c.WriteTimeout = -2 * time.Second }},
		{"negative response timeout", "presto://c1:8080;responseTimeout=-3s", func(c *Config) { c.ResponseTimeout = -3 * time.Second }},
		{"weight zero", "presto://c1:8080;weights=c1:8080=0", func(c *Config) { c.Weights = map[string]int{"c1:8080": 0} }},
		{"weight negative", "presto://c1:8080;weights=c1:8080=-2", func(c *Config) { c.Weights = map[string]int{"c1:8080": -2} }},
		{"weight too large", "presto://c1:8080;weights=c1:8080=1000001", func(c *Config) { c.Weights = map[string]int{"c1:8080": 1_000_001} }},
		{"weight for a bad port", "presto://c1:8080;weights=c1:99999=1", func(c *Config) { c.Weights = map[string]int{"c1:99999": 1} }},
		{"weight for a bad host", "presto://c1:8080;weights=[10.0.0.1]:8080=1", func(c *Config) { c.Weights = map[string]int{"[10.0.0.1]:8080": 1} }},
		{"retries too many", "presto://c1:8080;retries=101", func(c *Config) { c.Retries = 101 }},
		{"watch subset of one", "presto://c1:8080;serviceDiscoveryMode=zooKeeper;zooKeeperStrategy=shared_p2c;loadWatchSubset=1", func(c *Config) {
			c.ZooKeeper, c.Strategy, c.StrategyOptions = true, "shared_p2c", map[string]string{"loadWatchSubset": "1"}
		}},
		{"watch subset negative", "presto://c1:8080;serviceDiscoveryMode=zooKeeper;zooKeeperStrategy=shared_p2c;loadWatchSubset=-3", func(c *Config) {
			c.ZooKeeper, c.Strategy, c.StrategyOptions = true, "shared_p2c", map[string]string{"loadWatchSubset": "-3"}
		}},
		{"watch subset too large", "presto://c1:8080;serviceDiscoveryMode=zooKeeper;zooKeeperStrategy=shared_p2c;loadWatchSubset=100001", func(c *Config) {
			c.ZooKeeper, c.Strategy, c.StrategyOptions = true, "shared_p2c", map[string]string{"loadWatchSubset": "100001"}
		}},
		{"bad hash key", "presto://c1:8080;hashKey=md5", func(c *Config) { c.StrategyOptions = map[string]string{"hashKey": "md5"} }},
		{"slow start without shared_p2c", "presto://c1:8080;slowStart=10s", func(c *Config) { c.StrategyOptions = map[string]string{"slowStart": "10s"} }},
		{"slow start off with p2c", "presto://c1:8080;zooKeeperStrategy=p2c;slowStart=off", func(c *Config) { c.Strategy, c.StrategyOptions = "p2c", map[string]string{"slowStart": "off"} }},
		{"load bound below 1", "presto://c1:8080;hashLoadBound=0.5", func(c *Config) { c.StrategyOptions = map[string]string{"hashLoadBound": "0.5"} }},
		{"load bound negative", "presto://c1:8080;hashLoadBound=-1", func(c *Config) { c.StrategyOptions = map[string]string{"hashLoadBound": "-1"} }},
		{"load bound too large", "presto://c1:8080;hashLoadBound=101", func(c *Config) { c.StrategyOptions = map[string]string{"hashLoadBound": "101"} }},
		{"load bound NaN", "presto://c1:8080;hashLoadBound=NaN", func(c *Config) { c.StrategyOptions = map[string]string{"hashLoadBound": "NaN"} }},
		{"load bound infinite", "presto://c1:8080;hashLoadBound=+Inf", func(c *Config) { c.StrategyOptions = map[string]string{"hashLoadBound": "+Inf"} }},
		{"auth without scheme", "presto://c1:8080;zooKeeperAuth=:" + testPasswordEnc, func(c *Config) { c.ZooKeeperAuth = testPassword }},
		{"auth without credentials", "presto://c1:8080;zooKeeperAuth=digest:", func(c *Config) { c.ZooKeeperAuthScheme = "digest" }},
		{"digest without user", "presto://c1:8080;zooKeeperAuth=digest::" + testPasswordEnc, func(c *Config) {
			c.ZooKeeperAuthScheme, c.ZooKeeperAuth = "digest", ":"+testPassword
		}},
		{"digest without password", "presto://c1:8080;zooKeeperAuth=digest:" + testPasswordEnc, func(c *Config) {
			c.ZooKeeperAuthScheme, c.ZooKeeperAuth = "digest", testPassword
		}},
		{"control character in user", "presto://c1:8080?user=al%0Aice", func(c *Config) { c.User = "al\nice" }},
		{"tab in user", "presto://c1:8080?user=%09alice", func(c *Config) { c.User = "\talice" }},
		{"DEL in user from the user info", "presto://al%7Fice@c1:8080", func(c *Config) { c.User = "al\x7fice" }},
		{"invalid UTF-8 in user", "presto://c1:8080?user=%FF", func(c *Config) { c.User = "\xff" }},
		{"control character in source", "presto://c1:8080?source=etl%0D%0AX-Evil:%201", func(c *Config) { c.Source = "etl\r\nX-Evil: 1" }},
		{"control character in client_info", "presto://c1:8080?client_info=a%00b", func(c *Config) { c.ClientInfo = "a\x00b" }},
		{"control character in client_tags", "presto://c1:8080?client_tags=a,b%01c", func(c *Config) { c.ClientTags = []string{"a", "b\x01c"} }},
		{"control character in timezone", "presto://c1:8080?timezone=UTC%0A", func(c *Config) { c.TimeZone = "UTC\n" }},
		{"control character in catalog", "presto://c1:8080/hi%0Ave", func(c *Config) { c.Catalog = "hi\nve" }},
		{"invalid UTF-8 in schema", "presto://c1:8080/hive/%C3", func(c *Config) { c.Catalog, c.Schema = "hive", "\xc3" }},
		{"control character in a session property name", "presto://c1:8080?query%0Amax=1", func(c *Config) {
			c.SessionProperties = map[string]string{"query\nmax": "1"}
		}},
		{"control character in a session property value", "presto://c1:8080?s3_password=" + testPasswordEnc + "%0A", func(c *Config) {
			c.SessionProperties = map[string]string{"s3_password": testPassword + "\n"}
		}},
		{"TLS off with files", "presto://c1:8080;zooKeeperSSLEnabled=false;zooKeeperSSLCAFile=ca.pem", func(c *Config) { c.ZooKeeperSSLCAFile = "ca.pem" }},
		{"cert without key", "presto://c1:8080;zooKeeperSSLCertFile=c.pem", func(c *Config) {
			c.ZooKeeperSSL, c.ZooKeeperSSLCertFile = true, "c.pem"
		}},
		{"key without cert", "presto://c1:8080;zooKeeperSSLEnabled=true;zooKeeperSSLKeyFile=k.pem", func(c *Config) {
			c.ZooKeeperSSL, c.ZooKeeperSSLKeyFile = true, "k.pem"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, parseErr := ParseDSN(tc.dsn + "?password=" + testPasswordEnc)
			if parseErr == nil {
				t.Fatalf("ParseDSN(%q) succeeded, want an error", tc.dsn)
			}
			cfg := NewConfig()
			cfg.Hosts = []string{"c1:8080"}
			cfg.Password = testPassword
			tc.change(cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate() of %+v succeeded, want %q", cfg, parseErr)
			}
			if got, want := "dsn: "+err.Error(), parseErr.Error(); got != want {
				t.Errorf("Validate() = %q\nParseDSN  = %q", got, want)
			}
			checkNoPassword(t, err.Error())
		})
	}
}

// TestHeaderTextRefusedByKey checks that a control character is refused
// with the key named, the value unquoted, and nothing refused that a
// header may carry.
func TestHeaderTextRefusedByKey(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"presto://c1?user=al%01ice", "dsn: bad user: control character U+0001 at byte 2"},
		{"presto://al%01ice:" + testPasswordEnc + "@c1", "dsn: bad user: control character U+0001 at byte 2"},
		{"presto://c1?source=a%09", "dsn: bad source: control character U+0009 at byte 1"},
		{"presto://c1/hive%7F", "dsn: bad catalog: control character U+007F at byte 4"},
		{"presto://c1?secret=" + testPasswordEnc + "%1B", `dsn: bad value for session property "secret": control character U+001B at byte 16`},
	} {
		_, err := ParseDSN(tc.dsn)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseDSN(%q) = %v, want %q", tc.dsn, err, tc.want)
		}
		if err != nil {
			checkNoPassword(t, err.Error())
		}
	}
	// A password may hold any byte (it is sent base64-encoded), and UTF-8
	// beyond ASCII is fine everywhere.
	cfg, err := ParseDSN("presto://al%C3%AFce:pass%01%FFword@c1/caf%C3%A9/sch?source=%C3%A9tl&client_tags=t%C3%A0g")
	if err != nil {
		t.Fatalf("ParseDSN: %v", err)
	}
	if cfg.Password != "pass\x01\xffword" || cfg.User != "alïce" || cfg.Catalog != "café" {
		t.Errorf("ParseDSN = %#v", cfg)
	}
}

// TestValidateHandBuilt covers what only a hand-built Config can get wrong.
func TestValidateHandBuilt(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"host without port", func(c *Config) { c.Hosts = []string{"c1"} }, `missing port in host "c1"`},
		{"weight without port", func(c *Config) { c.Weights = map[string]int{"c1": 2} }, `bad weights: missing port in host "c1"`},
		{"session property named like our key", func(c *Config) {
			c.SessionProperties = map[string]string{"WEIGHTS": "c1=2"}
		}, `session property "WEIGHTS" is a DSN key`},
		{"session property named like a client key", func(c *Config) {
			c.SessionProperties = map[string]string{"password": testPassword}
		}, `session property "password" is a DSN key`},
		{"session property with an empty key", func(c *Config) {
			c.SessionProperties = map[string]string{"": "x"}
		}, "a session property has an empty key"},
		{"auth scheme with a colon", func(c *Config) {
			c.ZooKeeperAuthScheme, c.ZooKeeperAuth = "a:b", testPassword
		}, "bad zooKeeperAuth: want scheme:credentials"},
		{"unknown hash key", func(c *Config) {
			c.Strategy, c.StrategyOptions = "consistent_hash", map[string]string{"hashKey": "catalog"}
		}, `bad hashKey "catalog": want user or source`},
		{"an option of another strategy", func(c *Config) {
			c.Strategy, c.StrategyOptions = "poll", map[string]string{"slowStart": "1m"}
		}, `bad slowStart "1m": applies to strategy shared_p2c only, not poll`},
		{"session property named like a strategy key", func(c *Config) {
			c.SessionProperties = map[string]string{"slowstart": "1m"}
		}, `session property "slowstart" is a strategy's key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewConfig()
			cfg.Hosts = []string{"c1:8080"}
			tc.change(cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			checkNoPassword(t, err.Error())
			// Open refuses the same Config with the same message.
			if r, err := Open(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "dsn: "+tc.want) {
				if r != nil {
					r.Close()
				}
				t.Fatalf("Open = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestValidateAcceptsDefaults checks that zero values and every Config the
// valid DSN cases give pass.
func TestValidateAcceptsDefaults(t *testing.T) {
	for _, cfg := range []*Config{
		{Hosts: []string{"c1:8080"}},
		{Hosts: []string{"c1:8080"}, Retries: -1, HealthCheckInterval: -time.Second},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate() of %+v: %v", cfg, err)
		}
	}
	for _, tc := range validCases {
		if err := tc.want.Validate(); err != nil {
			t.Errorf("%s: Validate(): %v", tc.name, err)
		}
	}
}

// checkNoPassword fails t when msg shows the test password.
func checkNoPassword(t *testing.T, msg string) {
	t.Helper()
	for _, secret := range []string{testPassword, testPasswordEnc, "Tr0ub4dor"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q contains the password", msg)
		}
	}
}

func TestStrictStrategyRefusesAnUnknownName(t *testing.T) {
	const dsn = "presto://c1:8080;zooKeeperStrategy=leastactive;strictStrategy=true"
	_, err := ParseDSN(dsn)
	if err == nil {
		t.Fatalf("ParseDSN(%q) accepted an unknown strategy under strictStrategy", dsn)
	}
	for _, want := range []string{"zooKeeperStrategy", `"leastactive"`, "did you mean least_active?"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The key's order does not matter, nor the case of a known name.
	if _, err := ParseDSN("presto://c1:8080;strictStrategy=TRUE;zooKeeperStrategy=nosuchthing"); err == nil {
		t.Error("strictStrategy before the strategy did not refuse it")
	}
	for _, ok := range []string{
		"presto://c1:8080;zooKeeperStrategy=LEAST_ACTIVE;strictStrategy=true",
		"presto://c1:8080;strictStrategy=true",                                // the default, random
		"presto://c1:8080;zooKeeperStrategy=leastactive",                      // not strict: falls back
		"presto://c1:8080;zooKeeperStrategy=leastactive;strictStrategy=false", // nor here
	} {
		cfg, err := ParseDSN(ok)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", ok, err)
			continue
		}
		// And it survives the round trip through FormatDSN.
		if again, err := ParseDSN(cfg.FormatDSN()); err != nil || again.StrictStrategy != cfg.StrictStrategy {
			t.Errorf("%q: FormatDSN round trip: %v, strict %v want %v", ok, err, again != nil && again.StrictStrategy, cfg.StrictStrategy)
		}
	}
	// Open checks it too, for a Config built in code.
	cfg := NewConfig()
	cfg.Hosts = []string{"c1:8080"}
	cfg.Strategy, cfg.StrictStrategy = "weigthed", true
	if _, err := Open(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "did you mean weighted?") {
		t.Errorf("Open with an unknown strict strategy: %v", err)
	}
}

func TestHiveStyleKeysAfterTheQuestionMarkAreExplained(t *testing.T) {
	for _, c := range []struct{ dsn, key string }{
		{"presto://zk1:2181/hive?serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto", "zooKeeperNamespace"},
		// Worse than an error before: the user would have been "alice;serviceDiscoveryMode=zooKeeper".
		{"presto://zk1:2181/hive?user=alice;serviceDiscoveryMode=zooKeeper", "serviceDiscoveryMode"},
		{"presto://zk1:2181/hive?user=alice&source=x;ZOOKEEPERSTRATEGY=poll", "zooKeeperStrategy"},
	} {
		_, err := ParseDSN(c.dsn)
		if err == nil {
			t.Errorf("ParseDSN(%q) accepted ; keys after the ?", c.dsn)
			continue
		}
		for _, want := range []string{`"` + c.key + `" follows a ";" after the "?"`, `go before the "?"`, `separated by "&"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseDSN(%q): %q does not say %q", c.dsn, err, want)
			}
		}
	}
	// A ";" in a value that is not followed by a key stays the value's: a
	// password may hold one, and the error must not quote it either.
	cfg, err := ParseDSN("presto://c1:8080?user=alice&password=se;cret=1")
	if err != nil || cfg.Password != "se;cret=1" {
		t.Errorf("a password with \";x=\": %v, %q", err, cfg.Password)
	}
	if _, err := ParseDSN("presto://c1:8080?password=s3cr3t;user=bob"); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a ; key after a password: %v (want refused, without the password)", err)
	}
}

func TestAnEncodedSemicolonStaysInTheValue(t *testing.T) {
	cfg, err := ParseDSN("presto://c1:8080?password=s3cr3t%3Buser=bob")
	if err != nil || cfg.Password != "s3cr3t;user=bob" {
		t.Errorf("an encoded ;: %v, %q", err, cfg.Password)
	}
}
