package dsn

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// testPassword is put in most DSNs below, errors included, to check that
// no message or redacted form ever shows it.
const testPassword = "Tr0ub4dor&3;s@fe"

// testPasswordEnc is testPassword percent-encoded for a DSN.
const testPasswordEnc = "Tr0ub4dor%263%3Bs%40fe"

// wantConfig returns the defaults with change applied.
func wantConfig(change func(c *Config)) *Config {
	c := NewConfig()
	change(c)
	return c
}

// validCases are DSNs that parse, with the Config each must give.
var validCases = []struct {
	name string
	dsn  string
	want *Config
}{
	{
		name: "single coordinator with defaults",
		dsn:  "presto://coordinator",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"coordinator:8080"} }),
	},
	{
		name: "coordinators with ports catalog and schema",
		dsn:  "presto://c1:8081,c2/hive/default",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8081", "c2:8080"}
			c.Catalog, c.Schema = "hive", "default"
		}),
	},
	{
		name: "catalog only, trailing slash",
		dsn:  "presto://c1/hive/",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.Catalog = "hive"
		}),
	},
	{
		name: "empty path",
		dsn:  "presto://c1/",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"} }),
	},
	{
		name: "zookeeper ensemble default port and namespace",
		dsn:  "presto://zk1,zk2:2182,zk3/;serviceDiscoveryMode=zooKeeper",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181", "zk2:2182", "zk3:2181"}
			c.ZooKeeper = true
		}),
	},
	{
		name: "jdbc prefix and hive-style url",
		dsn:  "jdbc:presto://zk1:2181,zk2:2181/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=kyuubi;serverSelectStrategy=poll",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181", "zk2:2181"}
			c.Catalog, c.Schema = "hive", "default"
			c.ZooKeeper = true
			c.Namespace = "kyuubi"
			c.Strategy = "poll"
		}),
	},
	{
		name: "upper-case jdbc prefix and scheme",
		dsn:  "JDBC:Presto://c1",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"} }),
	},
	{
		name: "surrounding white space ignored",
		dsn:  "  presto://c1\n",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"} }),
	},
	{
		name: "trino scheme",
		dsn:  "trino://c1:8443/tpch",
		want: wantConfig(func(c *Config) {
			c.Trino = true
			c.Hosts = []string{"c1:8443"}
			c.Catalog = "tpch"
		}),
	},
	{
		name: "mode value case-insensitive upper",
		dsn:  "presto://zk1;serviceDiscoveryMode=ZOOKEEPER",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"zk1:2181"}; c.ZooKeeper = true }),
	},
	{
		name: "mode value case-insensitive lower, key case-insensitive",
		dsn:  "presto://zk1;SERVICEDISCOVERYMODE=zookeeper",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"zk1:2181"}; c.ZooKeeper = true }),
	},
	{
		name: "mode none",
		dsn:  "presto://c1;serviceDiscoveryMode=None",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"} }),
	},
	{
		name: "every own key in the ; part",
		dsn: "presto://zk1;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=/a/b/c/;zooKeeperStrategy=WEIGHTED_ROUND_ROBIN" +
			";zooKeeperSessionTimeout=30s;zooKeeperConnectTimeout=1m30s;weights=10.0.0.1:8080=5,10.0.0.2=1,[::1]=3,[2001:db8::1]:9000=2",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.Namespace = "a/b/c"
			c.Strategy = "WEIGHTED_ROUND_ROBIN"
			c.SessionTimeout = 30 * time.Second
			c.ConnectTimeout = 90 * time.Second
			c.Weights = map[string]int{"10.0.0.1:8080": 5, "10.0.0.2:8080": 1, "[::1]:8080": 3, "[2001:db8::1]:9000": 2}
		}),
	},
	{
		name: "every own key in the ? part, odd case",
		dsn: "presto://zk1?ServiceDiscoveryMode=zooKeeper&ZOOKEEPERNAMESPACE=ns&zookeeperstrategy=least_active" +
			"&ZooKeeperSessionTimeout=2s&zookeeperCONNECTtimeout=500ms&WEIGHTS=h:1=7",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.Namespace = "ns"
			c.Strategy = "least_active"
			c.SessionTimeout = 2 * time.Second
			c.ConnectTimeout = 500 * time.Millisecond
			c.Weights = map[string]int{"h:1": 7}
		}),
	},
	{
		name: "transport time limits",
		dsn:  "presto://c1;dialTimeout=1500ms;WRITETIMEOUT=2s?responsetimeout=1m",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.DialTimeout = 1500 * time.Millisecond
			c.WriteTimeout = 2 * time.Second
			c.ResponseTimeout = time.Minute
		}),
	},
	{
		name: "serverSelectStrategy alias",
		dsn:  "presto://c1;serverSelectStrategy=poll",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"}; c.Strategy = "poll" }),
	},
	{
		name: "alias and key with the same value",
		dsn:  "presto://c1;serverSelectStrategy=poll?zooKeeperStrategy=poll",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"}; c.Strategy = "poll" }),
	},
	{
		name: "every presto client key",
		dsn: "presto://c1?user=alice&password=" + testPasswordEnc + "&source=etl&client_tags=a,%20b%20,,c" +
			"&client_info=nightly%20job&timezone=Europe/Paris&ssl_cert=/etc/c.pem&ssl_key=/etc/k.pem&ssl_ca=/etc/ca.pem&ssl_skip_verify=true",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User, c.Password, c.Source = "alice", testPassword, "etl"
			c.ClientTags = []string{"a", "b", "c"}
			c.ClientInfo, c.TimeZone = "nightly job", "Europe/Paris"
			c.SSLCert, c.SSLKey, c.SSLCA = "/etc/c.pem", "/etc/k.pem", "/etc/ca.pem"
			c.SSLSkipVerify = true
		}),
	},
	{
		name: "presto client keys in the ; part",
		dsn:  "presto://c1;user=alice;ssl_skip_verify=1;client_tags=x",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User = "alice"
			c.SSLSkipVerify = true
			c.ClientTags = []string{"x"}
		}),
	},
	{
		name: "ssl_skip_verify false and 0",
		dsn:  "presto://c1;ssl_skip_verify=0?ssl_skip_verify=0",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"} }),
	},
	{
		name: "empty client_tags",
		dsn:  "presto://c1?client_tags=",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"} }),
	},
	{
		name: "other keys are session properties",
		dsn:  "presto://c1?query_max_run_time=1h&hive.insert_existing_partitions_behavior=OVERWRITE&_x9=&empty=",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.SessionProperties = map[string]string{
				"query_max_run_time": "1h", "hive.insert_existing_partitions_behavior": "OVERWRITE", "_x9": "", "empty": "",
			}
		}),
	},
	{
		name: "session properties in both parts, same value twice",
		dsn:  "presto://c1;a=1;b=2?a=1&c=x%3Dy%26z",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.SessionProperties = map[string]string{"a": "1", "b": "2", "c": "x=y&z"}
		}),
	},
	{
		name: "percent-encoded keys",
		dsn:  "presto://c1?%75ser=bob&we%69ghts=h=2&my%5Fprop=v",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User = "bob"
			c.Weights = map[string]int{"h:8080": 2}
			c.SessionProperties = map[string]string{"my_prop": "v"}
		}),
	},
	{
		name: "plus sign is not a space, raw ; and @ in ? values",
		dsn:  "presto://c1?user=a+b@example.com&x=1;2",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User = "a+b@example.com"
			c.SessionProperties = map[string]string{"x": "1;2"}
		}),
	},
	{
		name: "empty segments tolerated",
		dsn:  "presto://c1;;user=u;?&&source=s&",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"}; c.User = "u"; c.Source = "s" }),
	},
	{
		name: "userinfo with encoded password",
		dsn:  "presto://alice:" + testPasswordEnc + "@c1/hive",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.Catalog = "hive"
			c.User, c.Password = "alice", testPassword
		}),
	},
	{
		name: "userinfo password with raw @ and :",
		dsn:  "presto://alice:p@ss:w@c1",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User, c.Password = "alice", "p@ss:w"
		}),
	},
	{
		name: "userinfo user only, agreeing keys",
		dsn:  "presto://alice@zk1;serviceDiscoveryMode=zooKeeper?user=alice&password=" + testPasswordEnc,
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.User, c.Password = "alice", testPassword
		}),
	},
	{
		name: "userinfo password agreeing with key",
		dsn:  "presto://alice:" + testPasswordEnc + "@c1?password=" + testPasswordEnc,
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User, c.Password = "alice", testPassword
		}),
	},
	{
		name: "userinfo password with raw ; and =, path and ; part after",
		dsn:  "presto://alice:Tr0ub4dor;x=y@zk1:2181/hive;serviceDiscoveryMode=zooKeeper",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.Catalog = "hive"
			c.ZooKeeper = true
			c.User, c.Password = "alice", "Tr0ub4dor;x=y"
		}),
	},
	{
		name: "userinfo password with raw ?, = and &",
		dsn:  "presto://alice:Tr0u?b4=d&or@zk1:2181/hive?source=etl",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.Catalog = "hive"
			c.User, c.Password, c.Source = "alice", "Tr0u?b4=d&or", "etl"
		}),
	},
	{
		name: "userinfo password with raw @, ; and ?",
		dsn:  "presto://alice:Tr0@b;4?d@c1",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User, c.Password = "alice", "Tr0@b;4?d"
		}),
	},
	{
		name: "all-digit userinfo password",
		dsn:  "presto://alice:123456@zk1:2181;serviceDiscoveryMode=zooKeeper",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.User, c.Password = "alice", "123456"
		}),
	},
	{
		name: "all-digit userinfo password with ;, not a port",
		dsn:  "presto://alice:1234567;8@zk1,zk2",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:8080", "zk2:8080"}
			c.User, c.Password = "alice", "1234567;8"
		}),
	},
	{
		name: "user name with @, password with ;",
		dsn:  "presto://bob@corp.example:Tr0ub4dor;3@c1",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User, c.Password = "bob@corp.example", "Tr0ub4dor;3"
		}),
	},
	{
		name: "raw @ in values is not user info",
		dsn:  "presto://c1;client_info=x@y;source=s?user=bob@corp",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.ClientInfo, c.Source, c.User = "x@y", "s", "bob@corp"
		}),
	},
	{
		name: "raw @ in a value followed by more parameters",
		dsn:  "presto://c1:8080?user=bob@corp&source=etl",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.User, c.Source = "bob@corp", "etl"
		}),
	},
	{
		name: "raw @ in a value after a slash in another value",
		dsn:  "presto://c1:8080?ssl_ca=/etc/ca.pem&user=bob@corp",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.SSLCA, c.User = "/etc/ca.pem", "bob@corp"
		}),
	},
	{
		name: "IPv6 hosts",
		dsn:  "presto://[::1]:2181,[2001:db8::7],10.0.0.3;serviceDiscoveryMode=zooKeeper",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"[::1]:2181", "[2001:db8::7]:2181", "10.0.0.3:2181"}
			c.ZooKeeper = true
		}),
	},
	{
		name: "addresses written canonically, as discovery names nodes",
		dsn:  "presto://[0:0:0:0:0:0:0:1]:8080,Coord-2.Example.COM,[2001:DB8::A];weights=[0:0:0:0:0:0:0:1]:8080=3,COORD-2.example.com=2,[::ffff:10.0.0.1]=4",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"[::1]:8080", "coord-2.example.com:8080", "[2001:db8::a]:8080"}
			c.Weights = map[string]int{"[::1]:8080": 3, "coord-2.example.com:8080": 2, "10.0.0.1:8080": 4}
		}),
	},
	{
		name: "port with leading zeros normalised",
		dsn:  "presto://c1:0080",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:80"} }),
	},
	{
		name: "encoded catalog and schema",
		dsn:  "presto://c1/my%2Fcat/sch%20ema",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.Catalog, c.Schema = "my/cat", "sch ema"
		}),
	},
	{
		name: "nested namespace with slashes in the ; part",
		dsn:  "presto://zk1;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=//prod/presto/v2//",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.Namespace = "prod/presto/v2"
		}),
	},
	{
		name: "unicode namespace",
		dsn:  "presto://zk1;zooKeeperNamespace=pr%C3%A9sto",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"zk1:8080"}; c.Namespace = "présto" }),
	},
	{
		name: "unknown strategy kept as given",
		dsn:  "presto://c1;zooKeeperStrategy=my.Custom$Strategy",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"}; c.Strategy = "my.Custom$Strategy" }),
	},
	{
		name: "encoded delimiters in ; part values",
		dsn:  "presto://c1;zooKeeperStrategy=a%3Bb%3Fc%26d%25e%40f;zooKeeperNamespace=n%3Bs",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080"}
			c.Strategy = "a;b?c&d%e@f"
			c.Namespace = "n;s"
		}),
	},
	{
		name: "weights without ZooKeeper, duplicate weights key with same value",
		dsn:  "presto://c1,c2;weights=c1=3,c2:8080=1?weights=c1=3,c2:8080=1",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"c1:8080", "c2:8080"}
			c.Weights = map[string]int{"c1:8080": 3, "c2:8080": 1}
		}),
	},
	{
		name: "unresolvable host names parse without I/O",
		dsn:  "presto://coordinator.invalid,zk_1.example.invalid:1",
		want: wantConfig(func(c *Config) { c.Hosts = []string{"coordinator.invalid:8080", "zk_1.example.invalid:1"} }),
	},
	{
		name: "ZooKeeper digest credentials and TLS files",
		dsn:  "presto://zk1;serviceDiscoveryMode=zooKeeper;zooKeeperAuth=digest:alice:" + testPasswordEnc + ";zooKeeperSSLCAFile=/etc/zk/ca.pem;zooKeeperSSLCertFile=/etc/zk/client.pem;zooKeeperSSLKeyFile=/etc/zk/client-key.pem",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.ZooKeeperAuthScheme, c.ZooKeeperAuth = "digest", "alice:"+testPassword
			c.ZooKeeperSSL = true
			c.ZooKeeperSSLCAFile = "/etc/zk/ca.pem"
			c.ZooKeeperSSLCertFile, c.ZooKeeperSSLKeyFile = "/etc/zk/client.pem", "/etc/zk/client-key.pem"
		}),
	},
	{
		name: "ZooKeeper TLS with system roots, Kyuubi's key spelling",
		dsn:  "presto://zk1;serviceDiscoveryMode=zooKeeper;ZOOKEEPERSSLENABLE=true;zooKeeperAuth=x509:ignored",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.ZooKeeperSSL = true
			c.ZooKeeperAuthScheme, c.ZooKeeperAuth = "x509", "ignored"
		}),
	},
	{
		name: "ZooKeeper TLS flag in any case",
		dsn:  "presto://zk1;serviceDiscoveryMode=zooKeeper;zooKeeperSSLEnabled=TRUE",
		want: wantConfig(func(c *Config) {
			c.Hosts = []string{"zk1:2181"}
			c.ZooKeeper = true
			c.ZooKeeperSSL = true
		}),
	},
}

func TestParseDSN(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDSN(tc.dsn)
			if err != nil {
				t.Fatalf("ParseDSN(%q): %v", tc.dsn, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseDSN(%q)\n got %#v\nwant %#v", tc.dsn, got, tc.want)
			}
		})
	}
}

func TestParseDSNErrors(t *testing.T) {
	const pw = testPasswordEnc
	tests := []struct {
		name, dsn, want string
	}{
		{"missing ://", "presto:c1", `missing "://"`},
		{"missing :// with userinfo", "presto:/alice:" + pw + "@c1", `missing "://"`},
		{"unknown scheme", "mysql://alice:" + pw + "@c1", `unknown scheme "mysql": want presto or trino`},
		{"mangled scheme", "alice:" + pw + "@c1/?x=http://y", "malformed scheme"},
		{"jdbc with unknown scheme", "jdbc:hive2://alice:" + pw + "@c1", `unknown scheme "hive2"`},
		{"empty hosts", "presto://alice:" + pw + "@/hive", "no hosts"},
		{"empty hosts with params", "presto://;serviceDiscoveryMode=zooKeeper?password=" + pw, "no hosts"},
		{"empty host in list", "presto://alice:" + pw + "@c1,,c2", `empty host in host list "c1,,c2"`},
		{"trailing comma in hosts", "presto://c1,?password=" + pw, `empty host in host list "c1,"`},
		{"port too large", "presto://zk1:99999;serviceDiscoveryMode=zooKeeper?password=" + pw, `bad port "99999" in host "zk1:99999"`},
		{"port zero", "presto://alice:" + pw + "@c1:0", `bad port "0" in host "c1:0"`},
		{"port not a number", "presto://alice:" + pw + "@c1:http", `bad port "http" in host "c1:http"`},
		{"empty port", "presto://alice:" + pw + "@c1:", `bad port "" in host "c1:"`},
		{"signed port", "presto://alice:" + pw + "@c1:+80", `bad port "+80" in host "c1:+80"`},
		{"empty host name", "presto://alice:" + pw + "@:8080", `empty host name in host ":8080"`},
		{"bad host character", "presto://alice:" + pw + "@c%31", `bad character '%' in host "c%31"`},
		{"unbracketed IPv6", "presto://alice:" + pw + "@::1", `IPv6 address in host "::1" must be in brackets`},
		{"unclosed bracket", "presto://alice:" + pw + "@[::1", `missing "]" in host "[::1"`},
		{"junk after bracket", "presto://alice:" + pw + "@[::1]x", `unexpected "x" after "]" in host "[::1]x"`},
		{"IPv4 in brackets", "presto://alice:" + pw + "@[10.0.0.1]", `bad IPv6 address "10.0.0.1" in host "[10.0.0.1]"`},
		{"bad IPv6", "presto://alice:" + pw + "@[zz::1]", `bad IPv6 address "zz::1"`},
		{"IPv6 zone", "presto://alice:" + pw + "@[fe80::1%eth0]", `IPv6 zone in host "[fe80::1%eth0]"`},
		{"duplicate host", "presto://alice:" + pw + "@c1,c1:8080", `host "c1:8080" listed twice`},
		{"too many path segments", "presto://alice:" + pw + "@c1/a/b/c", `path "/a/b/c" has too many segments`},
		{"schema without catalog", "presto://alice:" + pw + "@c1//sch", `schema "sch" given without a catalog`},
		{"bad escape in catalog", "presto://alice:" + pw + "@c1/%zz", `bad percent-encoding in catalog "%zz"`},
		{"bad escape in schema", "presto://alice:" + pw + "@c1/cat/%4", `bad percent-encoding in schema "%4"`},
		{"bad escape in user", "presto://al%gice:" + pw + "@c1", "bad percent-encoding in the user name"},
		{"bad escape in userinfo password", "presto://alice:" + pw + "%@c1", "bad percent-encoding in the password"},
		{"bad escape in password key", "presto://c1?password=" + pw + "%2", `bad percent-encoding in the value of "password"`},
		{"bad escape in value", "presto://c1?password=" + pw + "&source=a%g1", `bad percent-encoding in the value of "source"`},
		{"bad escape in key", "presto://c1?password=" + pw + "&s%xource=a", `bad percent-encoding in key "s%xource"`},
		{"unencoded / in password", "presto://alice:Tr0ub4dor/3@c1", `unexpected "@" outside the user info`},
		{"unencoded / in password before params", "presto://alice:Tr0ub4dor/3?x=1@c1", `unexpected "@" outside the user info`},
		{"unencoded ; and / in password", "presto://alice:Tr0ub4dor;3/x@c1", `unexpected "@" outside the user info`},
		{"@ in catalog", "presto://alice:" + pw + "@c1/c@t", `unexpected "@" outside the user info`},
		{"@ in key", "presto://c1?password=" + pw + "&a@b=c", `unexpected "@" outside the user info`},
		{"@ in the host list", "presto://alice:Tr0ub4dor@h=1", `unexpected "@" outside the user info`},
		{"password with ; before a bad host", "presto://alice:Tr0ub4dor;3@c1!", `bad character '!' in host "c1!"`},
		{"host:port-shaped password with ;", "presto://alice:1234;Tr0ub4dor@zk1", `ambiguous "@"`},
		{"host:port-shaped password with ?", "presto://alice:1234?Tr0ub4dor@zk1:2181/hive", `ambiguous "@"`},
		{"raw @ in a value after host:port", "presto://c1:8080?user=bob@corp", `ambiguous "@"`},
		{"port-shaped password before a value's @", "presto://:8080?8080&@&", `not quoted because the text between the first ":" and the "@" may be a password`},
		{"bad key before a value's @", "presto://alice:8080?Tr0ub4dor&@corp&x=1", `not quoted because the text between the first ":" and the "@" may be a password`},
		{"bad value after a value's @ and host:port", "presto://c1:8080?user=bob@corp&source=etl&dialTimeout=soon", `not quoted because`},
		{"port-shaped password, / and a later @", "presto://:8080?8080/&@", `not quoted because`},
		{"bad key before a value's @ after the path", "presto://alice:8080/cat?Tr0ub4dor&x=bob@corp", `not quoted because`},
		{"parameter without =", "presto://c1;serviceDiscoveryMode?password=" + pw, `parameter "serviceDiscoveryMode" has no "="`},
		{"empty key", "presto://c1?password=" + pw + "&=x", "empty key"},
		{"bad mode", "presto://c1;serviceDiscoveryMode=etcd?password=" + pw, `bad serviceDiscoveryMode "etcd": want zooKeeper or none`},
		{"empty mode", "presto://c1;serviceDiscoveryMode=?password=" + pw, "empty value for serviceDiscoveryMode"},
		{"a password inside a bad value", "presto://c1?serviceDiscoveryMode=?password=" + pw, `bad serviceDiscoveryMode (its value, not shown, holds "="): want zooKeeper or none`},
		{"empty strategy", "presto://c1;zooKeeperStrategy=?password=" + pw, "empty value for zooKeeperStrategy"},
		{"empty weights", "presto://c1;Weights=?password=" + pw, "empty value for Weights"},
		{"empty namespace", "presto://c1;zooKeeperNamespace=//?password=" + pw, `bad zooKeeperNamespace "//": empty path`},
		{"empty namespace segment", "presto://c1;zooKeeperNamespace=a//b?password=" + pw, `bad zooKeeperNamespace "a//b": empty path segment`},
		{"dot namespace segment", "presto://c1;zooKeeperNamespace=a/./b?password=" + pw, `bad zooKeeperNamespace "a/./b": relative path segment "."`},
		{"dot-dot namespace segment", "presto://c1;zooKeeperNamespace=../b?password=" + pw, `relative path segment ".."`},
		{"reserved namespace", "presto://c1;zookeepernamespace=zookeeper/x?password=" + pw, `bad zookeepernamespace "zookeeper/x": "/zookeeper" is reserved`},
		{"control character in namespace", "presto://c1;zooKeeperNamespace=a%01b?password=" + pw, "character U+0001 not allowed"},
		{"DEL in namespace", "presto://c1;zooKeeperNamespace=a%7Fb?password=" + pw, "character U+007F not allowed"},
		{"private use character in namespace", "presto://c1;zooKeeperNamespace=%EE%80%80?password=" + pw, "character U+E000 not allowed"},
		{"astral character in namespace", "presto://c1;zooKeeperNamespace=%F0%9F%98%80?password=" + pw, "character U+1F600 not allowed"},
		{"invalid UTF-8 namespace", "presto://c1;zooKeeperNamespace=%FF?password=" + pw, "not valid UTF-8"},
		{"bad session timeout", "presto://c1;zooKeeperSessionTimeout=15?password=" + pw, `bad zooKeeperSessionTimeout "15": want a duration`},
		{"negative connect timeout", "presto://c1;zooKeeperConnectTimeout=-1s?password=" + pw, `bad zooKeeperConnectTimeout "-1s": must be positive`},
		{"zero session timeout", "presto://c1;zookeepersessiontimeout=0s?password=" + pw, `bad zookeepersessiontimeout "0s": must be positive`},
		{"zero dial timeout", "presto://c1;dialTimeout=0s?password=" + pw, `bad dialTimeout "0s": must be positive`},
		{"bad response timeout", "presto://c1;responseTimeout=soon?password=" + pw, `bad responseTimeout "soon": want a duration`},
		{"weights entry without =", "presto://c1;weights=c1?password=" + pw, `bad weights: entry "c1": want host:port=weight`},
		{"weights bad weight", "presto://c1;weights=c1=0?password=" + pw, `bad weights: bad weight "0" for "c1:8080"`},
		{"weights huge weight", "presto://c1;weights=c1=99999999999999999999?password=" + pw, `bad weight "99999999999999999999"`},
		{"weights negative weight", "presto://c1;weights=c1=-2?password=" + pw, `bad weight "-2"`},
		{"weights not a number", "presto://c1;weights=c1=x?password=" + pw, `bad weight "x"`},
		{"weights bad port", "presto://c1;weights=c1:99999=1?password=" + pw, `bad weights: bad port "99999" in host "c1:99999"`},
		{"weights empty entry", "presto://c1;weights=c1=1,,c2=1?password=" + pw, `bad weights: empty entry in "c1=1,,c2=1"`},
		{"weights duplicate node", "presto://c1;weights=c1=1,c1:8080=2?password=" + pw, `bad weights: "c1:8080" listed twice`},
		{"bad ssl_skip_verify", "presto://c1?password=" + pw + "&ssl_skip_verify=yes", `bad ssl_skip_verify "yes": want true, false, 1 or 0`},
		{"ssl_skip_verify case-sensitive", "presto://c1?password=" + pw + "&ssl_skip_verify=TRUE", `bad ssl_skip_verify "TRUE": want true, false, 1 or 0`},
		{"bad health check interval", "presto://c1;healthCheckInterval=soon?password=" + pw, `bad healthCheckInterval "soon": want a duration`},
		{"conflicting key in both parts", "presto://c1;zooKeeperNamespace=a?password=" + pw + "&zooKeeperNamespace=b", `key "zooKeeperNamespace" given twice with different values "a" and "b"`},
		{"conflicting key case-insensitive", "presto://c1;weights=c1=1;WEIGHTS=c1=2?password=" + pw, `key "weights" and key "WEIGHTS" have different values "c1=1" and "c1=2"`},
		{"conflicting alias", "presto://c1;zooKeeperStrategy=random;serverSelectStrategy=poll?password=" + pw, `key "zooKeeperStrategy" and key "serverSelectStrategy" have different values "random" and "poll"`},
		{"conflicting session property", "presto://c1?password=" + pw + "&a=1&a=2", `key "a" given twice with different values "1" and "2"`},
		{"conflicting user", "presto://alice:" + pw + "@c1?user=bob", `user in the user info and key "user" have different values "alice" and "bob"`},
		{"conflicting password", "presto://alice:" + pw + "@c1?password=other", `password in the user info and key "password" have different values`},
		{"conflicting password keys", "presto://c1;password=" + pw + "?password=" + pw + "x", `key "password" given twice with different values`},
		{"conflicting password-like session property", "presto://c1?s3_password=" + pw + "&s3_password=x", `key "s3_password" given twice with different values`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseDSN(tc.dsn)
			if err == nil {
				t.Fatalf("ParseDSN(%q) = %+v, want an error containing %q", tc.dsn, cfg, tc.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "dsn: ") {
				t.Errorf("error %q lacks the dsn: prefix", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not contain %q", msg, tc.want)
			}
			for _, secret := range []string{testPassword, testPasswordEnc, "Tr0ub4dor"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q contains the password %q", msg, secret)
				}
			}
		})
	}
}

// TestParseDSNPasswordNeverShown parses DSNs whose user info holds raw
// delimiters or looks like host:port, and checks that the password is read as
// one and shows up in no host, error or redacted form.
func TestParseDSNPasswordNeverShown(t *testing.T) {
	for _, tc := range []struct{ dsn, password string }{
		{"presto://alice:Tr0ub4dor;x=y@zk1:2181/hive;serviceDiscoveryMode=zooKeeper", "Tr0ub4dor;x=y"},
		{"presto://alice:Tr0ub4dor?x=y@zk1:2181/hive", "Tr0ub4dor?x=y"},
		{"presto://alice:Tr0ub=4dor@zk1:2181", "Tr0ub=4dor"},
		{"presto://alice:Tr0ub4dor;3@c1,c2;serviceDiscoveryMode=zooKeeper", "Tr0ub4dor;3"},
		{"presto://alice:123456@zk1:2181;serviceDiscoveryMode=zooKeeper", "123456"},
		{"presto://alice:98765;4@zk1:2181", "98765;4"},
		{"presto://alice:Tr0@ub;4?dor@zk1:2181?source=etl", "Tr0@ub;4?dor"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			cfg, err := ParseDSN(tc.dsn)
			if err != nil {
				if strings.Contains(err.Error(), tc.password) {
					t.Errorf("error %q shows the password", err)
				}
				t.Fatalf("ParseDSN(%q): %v", tc.dsn, err)
			}
			if cfg.User != "alice" || cfg.Password != tc.password {
				t.Errorf("user, password = %q, %q; want alice, %q", cfg.User, cfg.Password, tc.password)
			}
			again, err := ParseDSN(cfg.FormatDSN())
			if err != nil {
				t.Fatalf("ParseDSN(FormatDSN()): %v", err)
			}
			for what, text := range map[string]string{
				"Ensemble()":               cfg.Ensemble(),
				"String()":                 cfg.String(),
				"String() after FormatDSN": again.String(),
			} {
				if strings.Contains(text, tc.password) {
					t.Errorf("%s = %q shows the password", what, text)
				}
			}
		})
	}
}

// TestParseDSNAmbiguousAtQuotesNothing checks that a DSN refused because its
// "@" could end the user info or belong to a value quotes none of it: in one
// reading the text before the "@" is a password.
func TestParseDSNAmbiguousAtQuotesNothing(t *testing.T) {
	for _, dsn := range []string{
		"presto://alice:1234;Tr0ub4dor@zk1",
		"presto://zk1:2181,zk2:2181?Tr0ub4dor@zk3",
	} {
		_, err := ParseDSN(dsn)
		if err == nil || !strings.Contains(err.Error(), `ambiguous "@"`) {
			t.Fatalf("ParseDSN(%q) = %v, want the ambiguous @ error", dsn, err)
		}
		for _, part := range []string{"alice", "1234", "Tr0ub4dor", "zk1", "zk3"} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("error %q quotes %q", err, part)
			}
		}
	}
}

func TestNewConfigDefaults(t *testing.T) {
	c := NewConfig()
	if c.Namespace != "presto" || c.Strategy != "random" ||
		c.SessionTimeout != 15*time.Second || c.ConnectTimeout != 10*time.Second ||
		c.DialTimeout != 5*time.Second || c.WriteTimeout != 10*time.Second || c.ResponseTimeout != 30*time.Second {
		t.Errorf("NewConfig() = %+v, want namespace presto, strategy random, timeouts 15s/10s and 5s/10s/30s", c)
	}
	if c.Hosts != nil || c.Weights != nil || c.SessionProperties != nil || c.ClientTags != nil {
		t.Errorf("NewConfig() = %+v, want nil slices and maps", c)
	}
}

func TestFormatDSNCanonical(t *testing.T) {
	tests := []struct {
		name string
		cfg  *Config
		want string
	}{
		{
			name: "defaults omitted",
			cfg:  wantConfig(func(c *Config) { c.Hosts = []string{"c1:8080"} }),
			want: "presto://c1:8080",
		},
		{
			name: "hand-built zero values count as defaults",
			cfg:  &Config{Hosts: []string{"c1:8080"}, Trino: true, Schema: "s", Catalog: "c"},
			want: "trino://c1:8080/c/s",
		},
		{
			name: "sorted keys in their parts, encoded values",
			cfg: wantConfig(func(c *Config) {
				c.Hosts = []string{"zk1:2181", "[::1]:2181"}
				c.Catalog, c.Schema = "hive/x", "default"
				c.ZooKeeper = true
				c.Namespace = "prod/presto"
				c.Strategy = "poll"
				c.SessionTimeout = 20 * time.Second
				c.ConnectTimeout = 3 * time.Second
				c.Weights = map[string]int{"b:8080": 2, "a:8080": 1}
				c.User, c.Password = "alice", "p&ss;w?rd%"
				c.ClientTags = []string{"t1", "t2"}
				c.SSLSkipVerify = true
				c.SessionProperties = map[string]string{"query_max_run_time": "1h", "a key": "x=y"}
			}),
			want: "presto://zk1:2181,[::1]:2181/hive%2Fx/default" +
				";serviceDiscoveryMode=zooKeeper;weights=a:8080=1,b:8080=2;zooKeeperConnectTimeout=3s" +
				";zooKeeperNamespace=prod/presto;zooKeeperSessionTimeout=20s;zooKeeperStrategy=poll" +
				"?a%20key=x=y&client_tags=t1,t2&password=p%26ss%3Bw%3Frd%25&query_max_run_time=1h&ssl_skip_verify=true&user=alice",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cfg.FormatDSN(); got != tc.want {
				t.Errorf("FormatDSN() =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestFormatDSNRoundTrip(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			dsn := tc.want.FormatDSN()
			got, err := ParseDSN(dsn)
			if err != nil {
				t.Fatalf("ParseDSN(FormatDSN()) of %q: %v", dsn, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("round trip through %q\n got %#v\nwant %#v", dsn, got, tc.want)
			}
			if again := got.FormatDSN(); again != dsn {
				t.Errorf("FormatDSN not stable: %q then %q", dsn, again)
			}
		})
	}
}

func TestConfigStringRedacts(t *testing.T) {
	cfg, err := ParseDSN("presto://alice:" + testPasswordEnc + "@c1/hive?s3_password=hidden123&mode=visible")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.String()
	for _, secret := range []string{testPassword, testPasswordEnc, "hidden123"} {
		if strings.Contains(s, secret) {
			t.Errorf("String() = %q contains secret %q", s, secret)
		}
	}
	if !strings.Contains(s, "mode=visible") || !strings.Contains(s, "user=alice") {
		t.Errorf("String() = %q lost non-secret parts", s)
	}
	redacted, err := ParseDSN(s)
	if err != nil {
		t.Fatalf("ParseDSN(String()) of %q: %v", s, err)
	}
	if redacted.Password != "xxxxx" || redacted.SessionProperties["s3_password"] != "xxxxx" {
		t.Errorf("ParseDSN(String()) = %+v, want password and s3_password xxxxx", redacted)
	}
	// The Config itself keeps the secrets, and FormatDSN carries them.
	if cfg.Password != testPassword {
		t.Errorf("String() changed the Config's password to %q", cfg.Password)
	}
	full, err := ParseDSN(cfg.FormatDSN())
	if err != nil || full.Password != testPassword {
		t.Errorf("ParseDSN(FormatDSN()) = %v, %v; want the password kept", full, err)
	}

	noPassword, err := ParseDSN("presto://c1?user=bob")
	if err != nil {
		t.Fatal(err)
	}
	if noPassword.String() != noPassword.FormatDSN() || strings.Contains(noPassword.String(), "xxxxx") {
		t.Errorf("String() = %q, want FormatDSN() = %q with no password placeholder", noPassword.String(), noPassword.FormatDSN())
	}
}

func TestConfigCloneIsDeep(t *testing.T) {
	orig, err := ParseDSN("presto://c1,c2;weights=c1=2?client_tags=a,b&prop=v")
	if err != nil {
		t.Fatal(err)
	}
	before := orig.FormatDSN()
	clone := orig.Clone()
	if !reflect.DeepEqual(clone, orig) {
		t.Fatalf("Clone() = %#v, want %#v", clone, orig)
	}
	clone.Hosts[0] = "x:1"
	clone.ClientTags[0] = "changed"
	clone.Weights["c1:8080"] = 9
	clone.SessionProperties["prop"] = "changed"
	if after := orig.FormatDSN(); after != before {
		t.Errorf("changing the clone changed the original: %q became %q", before, after)
	}

	bare := NewConfig().Clone()
	if bare.Weights != nil || bare.SessionProperties != nil || bare.Hosts != nil || bare.ClientTags != nil {
		t.Errorf("Clone of NewConfig() = %#v, want nil slices and maps kept nil", bare)
	}
}

func TestConfigZooKeeperPathAndEnsemble(t *testing.T) {
	cfg, err := ParseDSN("presto://zk1,zk2:2182,[::1];serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=/a/b/")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.ZooKeeperPath(), "/a/b"; got != want {
		t.Errorf("ZooKeeperPath() = %q, want %q", got, want)
	}
	if got, want := cfg.Ensemble(), "zk1:2181,zk2:2182,[::1]:2181"; got != want {
		t.Errorf("Ensemble() = %q, want %q", got, want)
	}
	if got, want := NewConfig().ZooKeeperPath(), "/presto"; got != want {
		t.Errorf("default ZooKeeperPath() = %q, want %q", got, want)
	}
}

func TestParseDSNZooKeeperSecurityErrors(t *testing.T) {
	const pw = testPasswordEnc
	tests := []struct {
		name, dsn, want string
	}{
		{"auth without scheme", "presto://zk1;zooKeeperAuth=:" + pw, "bad zooKeeperAuth: want scheme:credentials"},
		{"auth without colon", "presto://zk1;zooKeeperAuth=" + pw, "bad zooKeeperAuth: want scheme:credentials"},
		{"digest without user", "presto://zk1;zooKeeperAuth=digest::" + pw, "bad zooKeeperAuth: digest credentials must be user:password"},
		{"digest without password separator", "presto://zk1;zooKeeperAuth=digest:" + pw, "digest credentials must be user:password"},
		{"conflicting auth", "presto://zk1;zooKeeperAuth=digest:a:" + pw + "?zookeeperauth=digest:a:x", `key "zooKeeperAuth" and key "zookeeperauth" have different values`},
		{"bad SSL flag", "presto://zk1;zooKeeperSSLEnabled=yes?password=" + pw, `bad zooKeeperSSLEnabled "yes": want true, false, 1 or 0`},
		{"SSL off with files", "presto://zk1;zooKeeperSSLEnabled=false;zooKeeperSSLCAFile=ca.pem?password=" + pw, `zooKeeperSSLEnabled is "false" but ZooKeeper TLS files are given`},
		{"cert without key", "presto://zk1;zooKeeperSSLCertFile=c.pem?password=" + pw, "zooKeeperSSLCertFile and zooKeeperSSLKeyFile must be given together"},
		{"alias conflict", "presto://zk1;zooKeeperSSLEnabled=true;zooKeeperSSLEnable=false", `key "zooKeeperSSLEnabled" and key "zooKeeperSSLEnable" have different values "true" and "false"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseDSN(tc.dsn)
			if err == nil {
				t.Fatalf("ParseDSN(%q) = %+v, want an error containing %q", tc.dsn, cfg, tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not contain %q", msg, tc.want)
			}
			for _, secret := range []string{testPassword, testPasswordEnc, "Tr0ub4dor"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q contains the password", err)
				}
			}
		})
	}
}

func TestConfigStringRedactsZooKeeperAuth(t *testing.T) {
	for _, tc := range []struct{ dsn, shown string }{
		{"presto://zk1;serviceDiscoveryMode=zooKeeper;zooKeeperAuth=digest:alice:" + testPasswordEnc + "?password=" + testPasswordEnc,
			"zooKeeperAuth=digest:alice:xxxxx"},
		{"presto://zk1;serviceDiscoveryMode=zooKeeper;zooKeeperAuth=sasl:" + testPasswordEnc, "zooKeeperAuth=sasl:xxxxx"},
	} {
		cfg, err := ParseDSN(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		s := cfg.String()
		for _, secret := range []string{testPassword, testPasswordEnc, "Tr0ub4dor"} {
			if strings.Contains(s, secret) {
				t.Errorf("String() = %q contains the secret", s)
			}
		}
		if !strings.Contains(s, tc.shown) {
			t.Errorf("String() = %q, want it to show %q", s, tc.shown)
		}
		redacted, err := ParseDSN(s)
		if err != nil {
			t.Fatalf("ParseDSN(String()) of %q: %v", s, err)
		}
		if redacted.ZooKeeperAuthScheme != cfg.ZooKeeperAuthScheme {
			t.Errorf("String() lost the scheme: %q", s)
		}
		full, err := ParseDSN(cfg.FormatDSN())
		if err != nil || full.ZooKeeperAuth != cfg.ZooKeeperAuth {
			t.Errorf("FormatDSN() does not keep the credentials: %v, %v", full, err)
		}
	}
}

// TestUnknownKeysRefused checks that a key that is none of ours is refused
// when it is a near miss of one (with the key to write instead), or when no
// Presto session property can have its name, instead of being sent to
// Presto as a session property and so ignored by the driver.
func TestUnknownKeysRefused(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"presto://zk1;serviceDiscoveryMode=zooKeeper;zooKeeperNamspace=typo", `unknown key "zooKeeperNamspace": did you mean zooKeeperNamespace?`},
		{"presto://c1?User=bob", `unknown key "User": did you mean user?`},
		{"presto://c1?SSL_CA=ca.pem", `unknown key "SSL_CA": did you mean ssl_ca?`},
		{"presto://c1?retires=2", `did you mean retries?`},
		{"presto://c1?client_tag=a", `did you mean client_tags?`},
		{"presto://c1?Join_Distribution_Type=BROADCAST", `unknown key "Join_Distribution_Type": not one of the driver's keys, and not a Presto session property name`},
		{"presto://c1?my%20prop=v", `unknown key "my prop": not one`},
		{"presto://c1?hive.a.b=v", `unknown key "hive.a.b": not one`},
		{"presto://c1?9lives=v", `unknown key "9lives": not one`},
	} {
		_, err := ParseDSN(tc.dsn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDSN(%q) = %v, want an error with %q", tc.dsn, err, tc.want)
		}
	}
	cfg := NewConfig()
	cfg.Hosts = []string{"c1:8080"}
	cfg.SessionProperties = map[string]string{"Join_Distribution_Type": "x"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `bad session property name "Join_Distribution_Type"`) {
		t.Errorf("Validate() of an upper-case session property: %v", err)
	}
}
