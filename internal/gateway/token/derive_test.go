package token

import (
	"errors"
	"slices"
	"testing"
)

// Keys derived for a purpose keep the kids, sign and verify among
// themselves and across rotation, and a token of one purpose (or of the
// routing keys) does not verify under another's.
func TestDerive(t *testing.T) {
	routing := mustKeys(t, "k1:"+hexA+"\n"+"k0:"+hexB)
	cookie, other := routing.Derive("affinity cookie"), routing.Derive("something else")
	if !slices.Equal(cookie.Kids(), routing.Kids()) {
		t.Fatalf("derived kids %v, want %v", cookie.Kids(), routing.Kids())
	}
	if again := mustKeys(t, "k1:"+hexA+"\n"+"k0:"+hexB).Derive("affinity cookie"); mustSign(t, again, coordinator, "") != mustSign(t, cookie, coordinator, "") {
		t.Error("the same keys and purpose derive different keys: replicas would not verify each other's tokens")
	}
	tok := mustSign(t, cookie, coordinator, "")
	if got, err := cookie.Verify(tok, ""); err != nil || got != coordinator {
		t.Fatalf("Verify under the purpose's keys: %q, %v", got, err)
	}
	rotated := mustKeys(t, "k2:"+hexC+"\n"+"k1:"+hexA).Derive("affinity cookie")
	if got, err := rotated.Verify(tok, ""); err != nil || got != coordinator {
		t.Fatalf("Verify after rotation, the signing key second: %q, %v", got, err)
	}
	for name, keys := range map[string]*Keys{"routing": routing, "another purpose": other} {
		if _, err := keys.Verify(tok, ""); !errors.Is(err, ErrBadMAC) {
			t.Errorf("a derived token under the %s keys: %v, want ErrBadMAC", name, err)
		}
	}
	if _, err := cookie.Verify(mustSign(t, routing, coordinator, ""), ""); !errors.Is(err, ErrBadMAC) {
		t.Errorf("a routing token under the derived keys: %v, want ErrBadMAC", err)
	}
	if s := cookie.String(); s != routing.String() {
		t.Errorf("derived keys format as %q, want the kids only, %q", s, routing.String())
	}
	if (*Keys)(nil).Derive("x") != nil {
		t.Error("Derive of nil keys is not nil")
	}
}
