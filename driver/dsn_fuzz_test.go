package driver

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParseDSN checks, for every input that parses, that FormatDSN parses
// back to an equal Config and that String hides the password.
func FuzzParseDSN(f *testing.F) {
	for _, tc := range dsnValidCases {
		f.Add(tc.dsn)
	}
	for _, seed := range []string{
		"presto://alice:s3cr3t%3B@zk1,[::1]:2182/cat/sch;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=a/b?password=s3cr3t%3B&x=1",
		"trino://h?client_tags=%20,a&ssl_skip_verify=0&weights=h=1,[::2]:1=3",
		"presto://h/%2F/%3F;a=%25;b=%26?c=%3B&d=;&e",
		"jdbc:presto://h;zooKeeperSessionTimeout=1h2m3.000000004s",
		"presto://a:b@c@d:1",
		"presto://h?password=xxxx&s=xxxx",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		cfg, err := ParseDSN(dsn)
		if err != nil {
			return
		}
		formatted := cfg.FormatDSN()
		again, err := ParseDSN(formatted)
		if err != nil {
			t.Fatalf("ParseDSN(%q) ok, but its FormatDSN %q fails: %v", dsn, formatted, err)
		}
		if !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip of %q through %q\n got %#v\nwant %#v", dsn, formatted, again, cfg)
		}

		password := cfg.Password
		if len(password) <= 3 {
			return
		}
		// The DSN with the password swapped for a placeholder: if the password
		// shows up in it anyway, it is part of some other field and String
		// cannot be faulted for showing it.
		placeholder := cfg.Clone()
		placeholder.Password = "xxxxx"
		rest := placeholder.FormatDSN()
		s := cfg.String()
		for _, form := range []string{password, dsnEscape(password, dsnSafeInValue)} {
			if !strings.Contains(rest, form) && strings.Contains(s, form) {
				t.Fatalf("String() = %q shows the password %q", s, form)
			}
		}
		redacted, err := ParseDSN(s)
		if err != nil {
			t.Fatalf("ParseDSN(String()) of %q: %v", s, err)
		}
		if redacted.Password != "xxxxx" {
			t.Fatalf("ParseDSN(String()) password = %q, want the placeholder", redacted.Password)
		}
	})
}
