package token

import (
	"errors"
	"strings"
	"testing"
)

// FuzzVerify checks that Verify never panics, that the only token that
// verifies is the one Sign makes for what it returns (so random or mutated
// tokens and bindings never verify unless signed), and that Sign and Verify
// round-trip any coordinator Sign accepts.
func FuzzVerify(f *testing.F) {
	keys := mustKeys(f, "a:"+hexA+"\nb:"+hexB)
	// Each key alone, to re-sign what verified under it.
	byKid := map[string]*Keys{"a": mustKeys(f, "a:"+hexA), "b": mustKeys(f, "b:"+hexB)}

	valid := mustSign(f, keys, coordinator, queryID)
	validB := mustSign(f, byKid["b"], "https://[2001:db8::1]:8443", "")
	f.Add(valid, queryID, coordinator)
	f.Add(valid, "", coordinator)
	f.Add(validB, "", "https://[2001:db8::1]:8443")
	f.Add(valid[:len(valid)-1], queryID, "http://h:1")
	f.Add("b"+valid[1:], queryID, "")
	f.Add("a.aHR0cDovL2g6MQ.AAAAAAAAAAAAAAAAAAAAAA", "q", "http://h:1")
	f.Add("a..", "", "x")
	f.Add("", "", "")
	f.Add("ä.é.ü", "ö", "http://ä:1")
	f.Add(strings.Repeat("A", MaxTokenLen+1), "", strings.Repeat("c", MaxCoordinatorLen+1))

	f.Fuzz(func(t *testing.T, token, binding, coord string) {
		got, err := keys.Verify(token, binding)
		switch {
		case err == nil:
			kid, _, _ := strings.Cut(token, ".")
			single := byKid[kid]
			if single == nil {
				t.Fatalf("Verify(%q) passed with kid %q", token, kid)
			}
			if want := mustSign(t, single, got, binding); want != token {
				t.Fatalf("Verify(%q, %q) passed, but Sign makes %q", token, binding, want)
			}
		case errors.Is(err, ErrMalformed), errors.Is(err, ErrUnknownKey), errors.Is(err, ErrBadMAC):
			if got != "" {
				t.Fatalf("Verify failed (%v) but returned %q", err, got)
			}
		default:
			t.Fatalf("Verify: unexpected error %v", err)
		}

		tok, err := keys.Sign(coord, binding)
		if len(coord) == 0 || len(coord) > MaxCoordinatorLen {
			if !errors.Is(err, ErrCoordinator) {
				t.Fatalf("Sign(%d bytes): %v; want ErrCoordinator", len(coord), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Sign(%q, %q): %v", coord, binding, err)
		}
		if len(tok) > MaxTokenLen {
			t.Fatalf("Sign made a %d-byte token", len(tok))
		}
		if got, err := keys.Verify(tok, binding); err != nil || got != coord {
			t.Fatalf("round trip of %q, %q: %q, %v", coord, binding, got, err)
		}
		if _, err := keys.Verify(tok, binding+"x"); !errors.Is(err, ErrBadMAC) {
			t.Fatalf("token verified with another binding: %v", err)
		}
		gotTok, rest, ok := Split(Prefix(tok) + "/v1/statement/executing/" + binding)
		if !ok || gotTok != tok || !strings.HasPrefix(rest, "/v1/statement/") {
			t.Fatalf("Split(Prefix(%q)) = %q, %q, %v", tok, gotTok, rest, ok)
		}
	})
}

// FuzzParseKeys checks that ParseKeys never panics and that what it
// accepts signs and verifies.
func FuzzParseKeys(f *testing.F) {
	f.Add("a:" + hexA + "\nb:" + hexB)
	f.Add(hexA + "," + hexB)
	f.Add("# c\n\n" + hexA)
	f.Add("a:" + hexA[:10])
	f.Add("a:b:c,,\n#")
	f.Fuzz(func(t *testing.T, text string) {
		k, err := ParseKeys(text)
		if err != nil {
			return
		}
		if n := len(k.Kids()); n < 1 || n > 2 {
			t.Fatalf("ParseKeys accepted %d keys", n)
		}
		tok := mustSign(t, k, coordinator, queryID)
		if got, err := k.Verify(tok, queryID); err != nil || got != coordinator {
			t.Fatalf("round trip: %q, %v", got, err)
		}
	})
}
