package token

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const (
	hexA = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	hexB = "8f9e2b7c1d0a4e6f5b3c2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c"
	hexC = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

	coordinator = "http://10.0.0.7:8080"
	queryID     = "20240501_101112_00001_abcde"
)

// mustKeys parses text or fails the test.
func mustKeys(t testing.TB, text string) *Keys {
	t.Helper()
	k, err := ParseKeys(text)
	if err != nil {
		t.Fatalf("ParseKeys: %v", err)
	}
	return k
}

// mustSign signs or fails the test.
func mustSign(t testing.TB, k *Keys, coord, binding string) string {
	t.Helper()
	tok, err := k.Sign(coord, binding)
	if err != nil {
		t.Fatalf("Sign(%q, %q): %v", coord, binding, err)
	}
	return tok
}

// parts splits a token that Sign made.
func parts(t *testing.T, tok string) (kid, coord, mac string) {
	t.Helper()
	p := strings.Split(tok, ".")
	if len(p) != 3 {
		t.Fatalf("token %q: %d parts", tok, len(p))
	}
	return p[0], p[1], p[2]
}

// flip changes the character at i of s to another of the base64url
// alphabet, so the result still parses.
func flip(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func TestVerify(t *testing.T) {
	keys := mustKeys(t, "a:"+hexA+"\nb:"+hexB)
	tok := mustSign(t, keys, coordinator, queryID)
	kid, coord, mac := parts(t, tok)
	// onlyB holds b alone, to sign with b for the kid-swapping cases.
	onlyB := mustKeys(t, "b:"+hexB)
	tokB := mustSign(t, onlyB, coordinator, queryID)
	_, _, macB := parts(t, tokB)
	otherCoord := strings.TrimRight(encodeString("http://10.0.0.8:8080"), "=")

	tests := []struct {
		name    string
		token   string
		binding string
		wantErr error
	}{
		{"round trip", tok, queryID, nil},
		{"signed by the second key", tokB, queryID, nil},
		{"tampered coord", kid + "." + otherCoord + "." + mac, queryID, ErrBadMAC},
		{"tampered coord, one character", kid + "." + flip(coord, 3) + "." + mac, queryID, ErrBadMAC},
		{"tampered mac", kid + "." + coord + "." + flip(mac, 0), queryID, ErrBadMAC},
		{"mac with nonzero trailing bits", kid + "." + coord + "." + mac[:len(mac)-1] + "B", queryID, ErrMalformed},
		{"swapped kid", "b." + coord + "." + mac, queryID, ErrBadMAC},
		{"swapped kid, other way", "a." + coord + "." + macB, queryID, ErrBadMAC},
		{"unknown kid", "c." + coord + "." + mac, queryID, ErrUnknownKey},
		{"binding mismatch", tok, "20240501_101112_00002_fghij", ErrBadMAC},
		{"binding empty", tok, "", ErrBadMAC},
		{"binding with a suffix", tok, queryID + "x", ErrBadMAC},
		{"empty", "", queryID, ErrMalformed},
		{"kid only", kid, queryID, ErrMalformed},
		{"no mac", kid + "." + coord, queryID, ErrMalformed},
		{"no mac, trailing dot", kid + "." + coord + ".", queryID, ErrMalformed},
		{"mac truncated", tok[:len(tok)-1], queryID, ErrMalformed},
		{"mac truncated to 21 bytes", tok[:len(tok)-2], queryID, ErrMalformed},
		{"mac too long", tok + "A", queryID, ErrMalformed},
		{"empty kid", "." + coord + "." + mac, queryID, ErrMalformed},
		{"empty coord", kid + ".." + mac, queryID, ErrMalformed},
		{"four parts", kid + "." + coord + "." + mac + ".x", queryID, ErrMalformed},
		{"dot in coord", kid + "." + coord[:4] + "." + coord[4:] + "." + mac, queryID, ErrMalformed},
		{"padded coord", kid + "." + coord + "==." + mac, queryID, ErrMalformed},
		{"std base64 in coord", kid + ".+/" + coord + "." + mac, queryID, ErrMalformed},
		{"coord of one character", kid + ".A." + mac, queryID, ErrMalformed},
		{"kid too long", strings.Repeat("k", MaxKidLen+1) + "." + coord + "." + mac, queryID, ErrMalformed},
		{"kid with a slash", "a/b." + coord + "." + mac, queryID, ErrMalformed},
		{"oversized", kid + "." + strings.Repeat("A", MaxTokenLen) + "." + mac, queryID, ErrMalformed},
		{"coord over the bound", kid + "." + strings.Repeat("A", maxCoordChars+4) + "." + mac, queryID, ErrMalformed},
		{"oversized, no dots", strings.Repeat("a", 1<<20), queryID, ErrMalformed},
		{"non-ASCII kid", "ä." + coord + "." + mac, queryID, ErrMalformed},
		{"non-ASCII coord", kid + "." + coord + "é." + mac, queryID, ErrMalformed},
		{"non-ASCII mac", kid + "." + coord + "." + mac[:20] + "é", queryID, ErrMalformed},
		{"invalid UTF-8", kid + "." + coord + "\xff." + mac, queryID, ErrMalformed},
		{"NUL", kid + "\x00." + coord + "." + mac, queryID, ErrMalformed},
		{"non-ASCII binding", tok, "ü" + queryID, ErrBadMAC},
		{"whitespace", " " + tok, queryID, ErrMalformed},
		{"percent-escaped", kid + "%2E" + coord + "." + mac, queryID, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keys.Verify(tt.token, tt.binding)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify(%.80q) = %q, %v; want %v", tt.token, got, err, tt.wantErr)
			}
			if err == nil && got != coordinator {
				t.Fatalf("Verify = %q; want %q", got, coordinator)
			}
			if err != nil && got != "" {
				t.Fatalf("Verify failed (%v) but returned %q", err, got)
			}
		})
	}
}

// encodeString is the coord part for s.
func encodeString(s string) string { return enc.EncodeToString([]byte(s)) }

func TestRotation(t *testing.T) {
	before := mustKeys(t, "old:"+hexA)
	during := mustKeys(t, "new:"+hexB+"\nold:"+hexA)
	after := mustKeys(t, "new:"+hexB)

	oldTok := mustSign(t, before, coordinator, queryID)
	newTok := mustSign(t, during, coordinator, queryID)
	if kid, _, _ := parts(t, newTok); kid != "new" {
		t.Fatalf("during the rotation the token is signed by %q; want the first key, new", kid)
	}
	for _, c := range []struct {
		name string
		keys *Keys
		tok  string
		want error
	}{
		{"old token, old keys", before, oldTok, nil},
		{"old token during the rotation", during, oldTok, nil},
		{"new token during the rotation", during, newTok, nil},
		{"new token after the rotation", after, newTok, nil},
		{"old token after the rotation", after, oldTok, ErrUnknownKey},
		{"new token on a replica not yet rotated", before, newTok, ErrUnknownKey},
	} {
		got, err := c.keys.Verify(c.tok, queryID)
		if !errors.Is(err, c.want) || (err == nil && got != coordinator) {
			t.Errorf("%s: Verify = %q, %v; want %v", c.name, got, err, c.want)
		}
	}
	// The same key under another kid is another key as far as tokens go:
	// the kid is under the MAC.
	renamed := mustKeys(t, "renamed:"+hexA)
	_, coord, mac := parts(t, oldTok)
	if _, err := renamed.Verify("renamed."+coord+"."+mac, queryID); !errors.Is(err, ErrBadMAC) {
		t.Errorf("token relabelled with the kid of the same key: %v; want ErrBadMAC", err)
	}
}

func TestSign(t *testing.T) {
	if macChars != enc.EncodedLen(macLen) || maxCoordChars != enc.EncodedLen(MaxCoordinatorLen) {
		t.Fatalf("encoded lengths: %d, %d", macChars, maxCoordChars)
	}
	keys := mustKeys(t, "a:"+hexA)
	if a, b := mustSign(t, keys, coordinator, queryID), mustSign(t, keys, coordinator, queryID); a != b {
		t.Errorf("Sign is not deterministic: %q, %q", a, b)
	}
	if a, b := mustSign(t, keys, coordinator, ""), mustSign(t, keys, coordinator, "q"); a == b {
		t.Errorf("binding does not change the token")
	}
	// Moving bytes between the coordinator and the binding must change
	// the MAC: the fields are length-prefixed.
	a := mustSign(t, keys, "http://h:1", "qq")
	b := mustSign(t, keys, "http://h:1q", "q")
	if _, _, ma := parts(t, a); strings.HasSuffix(b, ma) {
		t.Errorf("MAC does not separate coordinator from binding")
	}
	long := strings.Repeat("x", MaxCoordinatorLen)
	longKid := mustKeys(t, strings.Repeat("k", MaxKidLen)+":"+hexA)
	tok := mustSign(t, longKid, long, queryID)
	if len(tok) > MaxTokenLen {
		t.Errorf("longest token is %d bytes; over MaxTokenLen %d", len(tok), MaxTokenLen)
	}
	if got, err := longKid.Verify(tok, queryID); err != nil || got != long {
		t.Errorf("longest token: Verify = %.20q…, %v", got, err)
	}
	for _, c := range []string{"", long + "x"} {
		if tok, err := keys.Sign(c, queryID); !errors.Is(err, ErrCoordinator) || tok != "" {
			t.Errorf("Sign(%d bytes) = %q, %v; want ErrCoordinator", len(c), tok, err)
		}
	}
	// A big binding is hashed, not carried.
	big := strings.Repeat("b", 1<<16)
	if got, err := keys.Verify(mustSign(t, keys, coordinator, big), big); err != nil || got != coordinator {
		t.Errorf("64 KiB binding: Verify = %q, %v", got, err)
	}
}

func TestZeroKeys(t *testing.T) {
	for _, k := range []*Keys{nil, {}} {
		if _, err := k.Sign(coordinator, queryID); !errors.Is(err, ErrNoKeys) {
			t.Errorf("%v.Sign: %v; want ErrNoKeys", k, err)
		}
		valid := mustSign(t, mustKeys(t, "a:"+hexA), coordinator, queryID)
		if _, err := k.Verify(valid, queryID); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("%v.Verify: %v; want ErrUnknownKey", k, err)
		}
		if kids := k.Kids(); len(kids) != 0 {
			t.Errorf("Kids = %q", kids)
		}
	}
}

func TestSplit(t *testing.T) {
	tok := "a.aHR0cDovL2g6MQ.AAAAAAAAAAAAAAAAAAAAAA"
	for _, c := range []struct {
		path, tok, rest string
		ok              bool
	}{
		{Prefix(tok) + "/v1/statement/executing/q/y/1", tok, "/v1/statement/executing/q/y/1", true},
		{Prefix(tok) + "/", tok, "/", true},
		{Prefix(tok), "", "", false},
		{"/_zk//v1/statement", "", "", false},
		{"/_zk/", "", "", false},
		{"/_zk", "", "", false},
		{"/v1/statement", "", "", false},
		{"", "", "", false},
		{"_zk/" + tok + "/v1", "", "", false},
		{"/_ZK/" + tok + "/v1", "", "", false},
		{"/x/_zk/" + tok + "/v1", "", "", false},
	} {
		gotTok, gotRest, ok := Split(c.path)
		if gotTok != c.tok || gotRest != c.rest || ok != c.ok {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q, %v", c.path, gotTok, gotRest, ok, c.tok, c.rest, c.ok)
		}
	}
	if p := Prefix(tok); p != "/_zk/"+tok {
		t.Errorf("Prefix = %q", p)
	}
}

func TestParseKeys(t *testing.T) {
	for _, c := range []struct {
		name, text string
		kids       []string
	}{
		{"one named", "a:" + hexA, []string{"a"}},
		{"two named", "a:" + hexA + "\nb:" + hexB, []string{"a", "b"}},
		{"derived kid", hexA, []string{deriveKid(mustHex(hexA))}},
		{"comments and blanks", "# keys\n\n  # old\n a:" + hexA + "  \r\n\n", []string{"a"}},
		{"comment with a comma", "# new, then old\na:" + hexA + "\nb:" + hexB, []string{"a", "b"}},
		{"commas", "a:" + hexA + ",b:" + hexB, []string{"a", "b"}},
		{"commas and spaces", " a:" + hexA + " , b:" + hexB + " ,", []string{"a", "b"}},
		{"space around the colon", "a : " + hexA, []string{"a"}},
		{"upper-case hex", "a:" + strings.ToUpper(hexA), []string{"a"}},
		{"long key", "a:" + hexA + hexB, []string{"a"}},
		{"kid alphabet", "Key_2024-05:" + hexA, []string{"Key_2024-05"}},
	} {
		k, err := ParseKeys(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := k.Kids(); fmt.Sprint(got) != fmt.Sprint(c.kids) {
			t.Errorf("%s: kids %q; want %q", c.name, got, c.kids)
		}
	}
}

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		fmt.Sscanf(s[2*i:2*i+2], "%02x", &b[i])
	}
	return b
}

func TestParseKeysErrors(t *testing.T) {
	short := hexA[:62]
	for _, c := range []struct {
		name, text, want string
	}{
		{"empty", "", "none found: want one or two entries of [kid:]hex"},
		{"comments only", "# nothing\n\n", "none found"},
		{"three keys", "a:" + hexA + "\nb:" + hexB + "\nc:" + hexC, "3 found: want at most two"},
		{"short", "a:" + short, "line 1: key too short: want at least 64 hex digits (32 bytes)"},
		{"short, second line", "a:" + hexA + "\nb:" + short, "line 2: key too short"},
		{"short in a list", "a:" + hexA + ",b:" + short, "line 1, entry 2: key too short"},
		{"not hex", "a:" + strings.Repeat("g", 64), "line 1: key is not hex: want an even number"},
		{"odd length", "a:" + hexA + "0", "key is not hex"},
		{"base64", "a:" + "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8=", "key is not hex"},
		{"bad kid", "a.b:" + hexA, "line 1: bad kid: want 1 to 32 of A-Z a-z 0-9 _ -"},
		{"empty kid", ":" + hexA, "bad kid"},
		{"kid too long", strings.Repeat("k", 33) + ":" + hexA, "bad kid"},
		{"two colons", "a:b:" + hexA, "key is not hex"},
		{"same kid", "a:" + hexA + "\na:" + hexB, `line 2: kid "a" is taken by line 1`},
		{"same key", "a:" + hexA + "\nb:" + hexA, "line 2: the same key as line 1"},
		{"same key, derived kid", hexA + "\n" + hexA, "the same key as line 1"},
		{"inline comment", "a:" + hexA + " # current", "key is not hex"},
	} {
		_, err := ParseKeys(c.text)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want it to say %q", c.name, err, c.want)
		}
		for _, secret := range []string{hexA, hexB, hexC, short, "gggg", "ABEiM0RV"} {
			for i := 0; i+8 <= len(secret); i += 8 {
				if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(secret[i:i+8])) {
					t.Errorf("%s: error %q quotes key material", c.name, err)
				}
			}
		}
	}
}

func TestKeysNeverPrintsKeyMaterial(t *testing.T) {
	k := mustKeys(t, "a:"+hexA+"\nb:"+hexB)
	holder := struct {
		K  *Keys
		KV Keys
	}{k, *k}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d", "%T"} {
		for _, v := range []any{k, holder, &holder} {
			out := fmt.Sprintf(verb, v)
			for _, secret := range []string{hexA, hexB} {
				if strings.Contains(strings.ToLower(out), secret[:16]) || strings.Contains(out, string(mustHex(secret)[:8])) {
					t.Errorf("Sprintf(%s) = %q shows key material", verb, out)
				}
			}
		}
	}
	if got := k.String(); got != "token.Keys{a, b}" {
		t.Errorf("String = %q", got)
	}
}

func TestConcurrent(t *testing.T) {
	keys := mustKeys(t, "a:"+hexA+"\nb:"+hexB)
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			for i := 0; i < 500 && err == nil; i++ {
				coord := fmt.Sprintf("http://10.0.%d.%d:8080", g, i%256)
				binding := fmt.Sprint(i)
				var tok string
				if tok, err = keys.Sign(coord, binding); err == nil {
					var got string
					if got, err = keys.Verify(tok, binding); err == nil && got != coord {
						err = fmt.Errorf("Verify = %q; want %q", got, coord)
					}
				}
			}
			done <- err
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkSignVerify(b *testing.B) {
	keys := mustKeys(b, "a:"+hexA+"\nb:"+hexB)
	b.ReportAllocs()
	for b.Loop() {
		tok, err := keys.Sign(coordinator, queryID)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := keys.Verify(tok, queryID); err != nil {
			b.Fatal(err)
		}
	}
}
