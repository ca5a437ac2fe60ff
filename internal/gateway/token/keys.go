package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
)

// MinKeyBytes is the least key material a key may have: an HMAC-SHA256
// key shorter than the hash gives away strength for nothing.
const MinKeyBytes = 32

// MaxKidLen bounds a kid, so that a token's length stays bounded by the
// coordinator's and a kid cannot crowd out the rest of a URI.
const MaxKidLen = 32

// derivedKidLen is the length, in hex digits, of a kid derived from a key:
// 32 bits tell two live keys apart, and ParseKeys refuses a collision.
const derivedKidLen = 8

// Keys holds the one or two keys a gateway replica signs and verifies with.
// The first signs; either verifies, so a new key can be rolled out (listed
// first on every replica, the old one second) while the tokens already
// handed out still route, and the old key is dropped once they have
// expired from use. A Keys is safe for concurrent use and is never
// modified after ParseKeys builds it.
//
// Keys formats itself (with any fmt verb) as its kids only, so that
// logging it can never leak key material.
type Keys struct {
	keys []*key
}

// key is one HMAC key and its name.
type key struct {
	kid    string
	secret []byte
	// macs pools *macState: hmac.New costs allocations, and Reset
	// brings a state back to "just keyed", which is all a new MAC needs.
	macs sync.Pool
}

// macState is a keyed HMAC and the buffer every byte goes through on its
// way in: bytes written through the hash.Hash interface escape, so bytes
// on the caller's stack would be moved to the heap, one allocation per
// call; copied here first, they land in memory the pool already holds.
type macState struct {
	h   hash.Hash
	buf [64]byte
}

// newKey returns a key named kid.
func newKey(kid string, secret []byte) *key {
	k := &key{kid: kid, secret: secret}
	k.macs.New = func() any { return &macState{h: hmac.New(sha256.New, k.secret)} }
	return k
}

// sum returns the truncated MAC of (kid, coord, binding) under k.
func (k *key) sum(coord []byte, binding string) [macLen]byte {
	s, _ := k.macs.Get().(*macState)
	if s == nil {
		s = &macState{h: hmac.New(sha256.New, k.secret)}
	}
	mac := s.sum(k.kid, coord, binding)
	s.h.Reset()
	k.macs.Put(s)
	return mac
}

// ParseKeys reads keys from the contents of a secret file or the value of
// an environment variable. Entries are separated by newlines or commas
// (so one variable can carry two keys); each is
//
//	[kid:]hex
//
// where hex is at least 64 hex digits (32 bytes: `openssl rand -hex 32`
// makes one) and kid is 1 to 32 of A-Z a-z 0-9 _ -. A key without a kid is
// named by the first 8 hex digits of a SHA-256 of the key, so every replica
// given the same file names it alike. Blank entries are ignored, and so are
// lines whose first non-blank character is '#' (commas in them included).
// One or two keys are allowed: the first signs, both verify.
//
// An error names the line (and the entry on it) that is wrong and what is
// wanted, and never quotes the input, which holds key material.
func ParseKeys(text string) (*Keys, error) {
	type origin struct{ line, entry int }
	var (
		keys  []*key
		where []origin
	)
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		entries := strings.Split(line, ",")
		for j, entry := range entries {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			at := fmt.Sprintf("line %d", i+1)
			if len(entries) > 1 {
				at = fmt.Sprintf("line %d, entry %d", i+1, j+1)
			}
			k, err := parseKey(entry)
			if err != nil {
				return nil, fmt.Errorf("token: keys: %s: %w", at, err)
			}
			for n, prev := range keys {
				prevAt := fmt.Sprintf("line %d", where[n].line)
				if subtle.ConstantTimeCompare(prev.secret, k.secret) == 1 {
					return nil, fmt.Errorf("token: keys: %s: the same key as %s", at, prevAt)
				}
				if prev.kid == k.kid {
					return nil, fmt.Errorf("token: keys: %s: kid %q is taken by %s", at, k.kid, prevAt)
				}
			}
			keys = append(keys, k)
			where = append(where, origin{i + 1, j + 1})
		}
	}
	switch {
	case len(keys) == 0:
		return nil, errors.New("token: keys: none found: want one or two entries of [kid:]hex, with at least 64 hex digits (32 bytes) of key")
	case len(keys) > 2:
		return nil, fmt.Errorf("token: keys: %d found: want at most two (the signing key first, then the one being retired)", len(keys))
	}
	return &Keys{keys: keys}, nil
}

// parseKey parses one "[kid:]hex" entry. Its errors say what is wanted
// without quoting the entry; in particular hex.DecodeString's errors are
// not passed on, since they quote the offending byte of the key.
func parseKey(entry string) (*key, error) {
	kid, material, named := strings.Cut(entry, ":")
	if !named {
		material = kid
	}
	kid, material = strings.TrimSpace(kid), strings.TrimSpace(material)
	if named && !validKid(kid) {
		return nil, fmt.Errorf("bad kid: want 1 to %d of A-Z a-z 0-9 _ - before the ':'", MaxKidLen)
	}
	// Whether it is hex at all comes first: a base64 key is more likely
	// a wrong format than a short key, and should be told so.
	secret, err := hex.DecodeString(material)
	if err != nil {
		return nil, fmt.Errorf("key is not hex: want an even number, at least %d, of 0-9 a-f A-F (%d bytes), e.g. from openssl rand -hex %d", 2*MinKeyBytes, MinKeyBytes, MinKeyBytes)
	}
	if len(secret) < MinKeyBytes {
		return nil, fmt.Errorf("key too short: want at least %d hex digits (%d bytes), e.g. from openssl rand -hex %d", 2*MinKeyBytes, MinKeyBytes, MinKeyBytes)
	}
	if !named {
		kid = deriveKid(secret)
	}
	return newKey(kid, secret), nil
}

// deriveKid names a key by a hash of it. The hash is domain-separated so
// that the name is not the prefix of any other hash of the key that might
// be published, and a 256-bit key cannot be recovered from it.
func deriveKid(secret []byte) string {
	h := sha256.New()
	h.Write([]byte("zkpresto gateway token kid\x00"))
	h.Write(secret)
	return hex.EncodeToString(h.Sum(nil))[:derivedKidLen]
}

// validKid reports whether s may name a key: its characters need no
// escaping in a URI path and are not the token's separator '.'.
func validKid(s string) bool {
	if len(s) == 0 || len(s) > MaxKidLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isKidByte(s[i]) {
			return false
		}
	}
	return true
}

// isKidByte reports whether c may appear in a kid.
func isKidByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// Kids returns the kids in order, the signing one first, so a replica can
// log which keys it holds without logging the keys.
func (k *Keys) Kids() []string {
	if k == nil {
		return nil
	}
	kids := make([]string, len(k.keys))
	for i, key := range k.keys {
		kids[i] = key.kid
	}
	return kids
}

// lookup returns the key named kid, or nil.
func (k *Keys) lookup(kid string) *key {
	if k == nil {
		return nil
	}
	for _, key := range k.keys {
		if key.kid == kid {
			return key
		}
	}
	return nil
}

// String returns the kids, never the key material.
func (k *Keys) String() string {
	return "token.Keys{" + strings.Join(k.Kids(), ", ") + "}"
}

// Format prints k as String does whatever the verb, so that neither %v,
// %+v, %#v nor %x of a Keys (or of a struct holding one) shows its keys.
func (k *Keys) Format(f fmt.State, _ rune) {
	_, _ = f.Write([]byte(k.String()))
}

// Derive returns keys for another purpose than routing tokens, with the
// same kids (so a rotation rolls both at once) and secrets of their own:
// each an HMAC-SHA256, under its key, of a label naming purpose. A token
// signed by one set does not verify under the other, so one use's token
// (an affinity cookie, say) cannot be replayed as another's (a routing
// token), and the derived secrets tell nothing of the originals.
func (k *Keys) Derive(purpose string) *Keys {
	if k == nil {
		return nil
	}
	out := &Keys{keys: make([]*key, len(k.keys))}
	for i, key := range k.keys {
		m := hmac.New(sha256.New, key.secret)
		m.Write([]byte("zkpresto gateway derived key\x00"))
		m.Write([]byte(purpose))
		out.keys[i] = newKey(key.kid, m.Sum(nil))
	}
	return out
}
