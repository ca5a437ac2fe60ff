package dsn

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseDSN checks, for every input that parses, that FormatDSN parses
// back to an equal Config and that String hides the password; and, for every
// input, that no error, host list or String shows a password.
func FuzzParseDSN(f *testing.F) {
	for _, tc := range validCases {
		f.Add(tc.dsn)
	}
	for _, seed := range []string{
		"presto://alice:s3cr3t%3B@zk1,[::1]:2182/cat/sch;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=a/b?password=s3cr3t%3B&x=1",
		"trino://h?client_tags=%20,a&ssl_skip_verify=0&weights=h=1,[::2]:1=3",
		"presto://h/%2F/%3F;a=%25;b=%26?c=%3B&d=;&e",
		"jdbc:presto://h;zooKeeperSessionTimeout=1h2m3.000000004s",
		"presto://a:b@c@d:1",
		"presto://h?password=xxxx&s=xxxx",
		// Passwords with raw delimiters, or shaped like a port.
		"presto://alice:Tr0ub4dor;x=y@zk1:2181/hive;serviceDiscoveryMode=zooKeeper",
		"presto://alice:Tr0ub4dor?x=y@zk1:2181/hive",
		"presto://alice:Tr0ub4dor=x&y@zk1:2181",
		"presto://alice:123456@zk1:2181;serviceDiscoveryMode=zooKeeper",
		"presto://alice:1234;Tr0ub4dor@zk1:2181",
		"presto://alice:Tr0ub4dor/3?x=1@c1",
		"presto://alice:Tr0ub4dor/3@c1/hive",
		"presto://alice:Tr0ub4dor@c1!",
		"presto://alice:Tr0ub4dor@h=1",
		"presto://c1:8080?user=bob@corp&password=Tr0ub4dor",
		"presto://c1;password=Tr0ub4dor%zz",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		cfg, err := ParseDSN(dsn)
		if err != nil {
			msg := err.Error()
			// What an error shows of the DSN, it quotes: look inside each
			// quoted part, unquoted. Not in the wording around them, which
			// may hold a candidate by chance (`parameter "` holds a
			// password ` "`).
			candidates := passwordCandidates(dsn)
			for _, quoted := range quotedRe.FindAllString(msg, -1) {
				text, uerr := strconv.Unquote(quoted)
				if uerr != nil {
					text = quoted
				}
				for _, candidate := range candidates {
					if strings.Contains(text, candidate) {
						t.Fatalf("ParseDSN(%q): error %q shows the password candidate %q", dsn, msg, candidate)
					}
				}
			}
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
		if len(password) < 4 {
			return
		}
		// The DSN with the password swapped for a placeholder: if the password
		// shows up in it anyway, it is part of some other field and String
		// cannot be faulted for showing it.
		placeholder := cfg.Clone()
		placeholder.Password = "xxxxx"
		rest := placeholder.FormatDSN()
		for what, text := range map[string]string{
			"String()":                 cfg.String(),
			"String() after FormatDSN": again.String(),
			"Ensemble()":               cfg.Ensemble(),
		} {
			for _, form := range []string{password, escape(password, safeInValue)} {
				if !strings.Contains(rest, form) && strings.Contains(text, form) {
					t.Fatalf("%s = %q shows the password %q", what, text, form)
				}
			}
		}
		redacted, err := ParseDSN(cfg.String())
		if err != nil {
			t.Fatalf("ParseDSN(String()) of %q: %v", cfg.String(), err)
		}
		if redacted.Password != "xxxxx" {
			t.Fatalf("ParseDSN(String()) password = %q, want the placeholder", redacted.Password)
		}
	})
}

// passwordCandidates returns what dsn may hold as a password, raw and
// decoded: the text between the first ":" after "//" and the last "@", and
// every value of a key ending in "password" after ";", "?" or "&"; and of
// the first, its text before any "/", ";" or "?". A candidate is left out when it is short,
// or when the rest of the DSN holds it too (an error may then quote that
// other part).
func passwordCandidates(dsn string) []string {
	type span struct {
		start, end int
		userinfo   bool
	}
	var spans []span
	if slashes := strings.Index(dsn, "//"); slashes >= 0 {
		colon := strings.IndexByte(dsn[slashes+2:], ':')
		at := strings.LastIndexByte(dsn, '@')
		// Only after a user name that could be one (no "/", ";", "?" or "@").
		if colon >= 0 && slashes+2+colon+1 <= at && !strings.ContainsAny(dsn[slashes+2:slashes+2+colon], "/;?@") {
			spans = append(spans, span{slashes + 2 + colon + 1, at, true})
		}
	}
	// Lower-cased byte by byte, so that indexes into it are indexes into dsn.
	lower := []byte(dsn)
	for i, c := range lower {
		if c >= 'A' && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	for i := 0; ; {
		j := strings.Index(string(lower[i:]), "password=")
		if j < 0 {
			break
		}
		start := i + j + len("password=")
		i = start
		// A key, s3_password say, starts after ";", "?" or "&", in a
		// parameter part (after some ";" or "?"), not as in presto://password=1.
		k := start - len("password=")
		for k > 0 && strings.IndexByte(";?&=/@:,", dsn[k-1]) < 0 {
			k--
		}
		if k == 0 || strings.IndexByte(";?&", dsn[k-1]) < 0 || !strings.ContainsAny(dsn[:k], ";?") || !strings.Contains(dsn[:k], "//") ||
			dsn[k-1] == '&' && !strings.Contains(dsn[:k], "?") {
			continue // "&" separates keys in the "?" part only
		}
		end := start
		for end < len(dsn) && dsn[end] != '&' && dsn[end] != ';' && dsn[end] != '?' {
			end++
		}
		spans = append(spans, span{start, end, false})
	}
	var candidates []string
	for _, s := range spans {
		raw := dsn[s.start:s.end]
		others := dsn[:s.start] + "\x00" + dsn[s.end:]
		if decoded := unescapeWhatDecodes(others); decoded != others {
			others += "\x00" + decoded
		}
		add := func(form, elsewhere string) {
			if len(form) >= 4 && !strings.Contains(elsewhere, form) {
				candidates = append(candidates, form)
			}
		}
		add(raw, others)
		if decoded, err := unescape(raw); err == nil && decoded != raw {
			add(decoded, others)
		}
		if s.userinfo {
			// Its text up to a "/", ";" or "?" too: a parser that ends the
			// authority there reads it as a port. The rest of the span is
			// then text of its own, which an error may quote: a prefix that
			// is also in it proves nothing when it shows.
			if i := strings.IndexAny(raw, "/;?"); i >= 0 {
				add(raw[:i], others+"\x00"+raw[i:])
			}
		}
	}
	return candidates
}

// unescapeWhatDecodes decodes each valid %XX of s and keeps the rest as
// it is: the other parts of a DSN decode one by one, so a bad escape in one
// part (a key, a trailing "%") leaves what the others decode to.
func unescapeWhatDecodes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, okHi := unhex(s[i+1])
			lo, okLo := unhex(s[i+2])
			if okHi && okLo {
				b.WriteByte(hi<<4 | lo)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// quoted matches a string quoted as %q quotes it.
var quotedRe = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
