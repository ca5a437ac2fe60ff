package token

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"strings"
)

// Version is the format version every MAC covers. A future format takes a
// new version, so that no MAC made for one format verifies under another
// even with the same key.
const Version = 1

// MaxTokenLen bounds the length of a token Verify accepts: the check comes
// before any decoding or hashing, so the work an unauthenticated request
// can cause stays bounded.
const MaxTokenLen = 1024

// MaxCoordinatorLen bounds the coordinator a token can carry; with a kid
// of MaxKidLen the token stays well under MaxTokenLen.
const MaxCoordinatorLen = 512

// macLen is the length in bytes of the truncated HMAC-SHA256: 128 bits, so
// that forging takes 2^128 tries on average.
const macLen = 16

// macChars is the length of the MAC in the token: base64 without padding
// of macLen bytes.
const macChars = (macLen*8 + 5) / 6

// maxCoordChars is the length of the longest coordinator in the token,
// and the size of the buffers that encode and decode it.
const maxCoordChars = (MaxCoordinatorLen*8 + 5) / 6

// enc writes the coordinator and the MAC: its alphabet needs no escaping
// in a URI path and lacks '.', the separator. Strict decoding refuses
// nonzero trailing bits, so that each token has exactly one spelling.
var enc = base64.RawURLEncoding.Strict()

// PathPrefix starts every path that carries a token.
const PathPrefix = "/_zk/"

// The errors Verify returns; every one of them means the request must be
// refused (403) and never forwarded. They are distinct so that a log or a
// metric can tell a broken client (ErrMalformed) from a key rotated away
// too soon (ErrUnknownKey) and from tampering or a token moved onto another
// query (ErrBadMAC).
var (
	// ErrMalformed is a token that does not parse: wrong length or
	// characters, or a part that does not decode.
	ErrMalformed = errors.New("token: malformed")
	// ErrUnknownKey is a well-formed token naming a key this replica
	// does not hold.
	ErrUnknownKey = errors.New("token: unknown kid")
	// ErrBadMAC is a well-formed token whose MAC does not match its
	// contents and binding under the key it names.
	ErrBadMAC = errors.New("token: bad MAC")
)

// ErrCoordinator is what Sign returns for a coordinator it cannot carry.
var ErrCoordinator = errors.New("token: coordinator must be 1 to 512 bytes")

// ErrNoKeys is what Sign returns on a Keys that ParseKeys did not build.
var ErrNoKeys = errors.New("token: no keys")

// Sign returns the token that routes to coordinator (its base URL, scheme
// and canonical host:port, e.g. "http://10.0.0.7:8080") for a URI bound to
// binding, the query id the URI belongs to ("" for a URI that names no
// query). It signs with the first key. Signing is deterministic: the same
// key, coordinator and binding always give the same token.
func (k *Keys) Sign(coordinator, binding string) (string, error) {
	if k == nil || len(k.keys) == 0 {
		return "", ErrNoKeys
	}
	if len(coordinator) == 0 || len(coordinator) > MaxCoordinatorLen {
		return "", ErrCoordinator
	}
	key := k.keys[0]
	// Encoding needs bytes; copying into arrays on the stack spares the
	// allocation a []byte(string) conversion costs.
	var (
		coord [MaxCoordinatorLen]byte
		buf   [maxCoordChars]byte
	)
	n := copy(coord[:], coordinator)
	mac := key.sum(coord[:n], binding)

	var b strings.Builder
	b.Grow(len(key.kid) + 1 + enc.EncodedLen(n) + 1 + macChars)
	b.WriteString(key.kid)
	b.WriteByte('.')
	enc.Encode(buf[:], coord[:n])
	b.Write(buf[:enc.EncodedLen(n)])
	b.WriteByte('.')
	enc.Encode(buf[:], mac[:])
	b.Write(buf[:macChars])
	return b.String(), nil
}

// Verify checks token against binding (the query id of the request's path,
// "" where it names none) and returns the coordinator it routes to. The
// MAC is compared in constant time. Any error is ErrMalformed,
// ErrUnknownKey or ErrBadMAC, checked in that order.
//
// A verified coordinator is one this gateway signed, not one that is still
// serving: the caller must still check that it belongs to the group.
// Tokens do not expire; retiring a key is what ends its tokens.
func (k *Keys) Verify(token, binding string) (string, error) {
	if len(token) > MaxTokenLen {
		return "", ErrMalformed
	}
	kid, rest, ok := strings.Cut(token, ".")
	if !ok || !validKid(kid) {
		return "", ErrMalformed
	}
	coordChars, macText, ok := strings.Cut(rest, ".")
	if !ok || len(coordChars) == 0 || len(coordChars) > maxCoordChars || len(macText) != macChars ||
		!base64URL(coordChars) || !base64URL(macText) {
		// The decoder skips line breaks; checking the alphabet first keeps
		// one spelling per token.
		return "", ErrMalformed
	}
	// Decoding needs bytes; copying the text into arrays on the stack
	// first spares the allocation a []byte(string) conversion costs.
	var (
		in    [maxCoordChars]byte
		coord [MaxCoordinatorLen]byte
		mac   [macLen + 2]byte
	)
	cn, err := enc.Decode(coord[:], in[:copy(in[:], coordChars)])
	if err != nil || cn == 0 {
		return "", ErrMalformed
	}
	mn, err := enc.Decode(mac[:], in[:copy(in[:], macText)])
	if err != nil || mn != macLen {
		return "", ErrMalformed
	}
	key := k.lookup(kid)
	if key == nil {
		return "", ErrUnknownKey
	}
	want := key.sum(coord[:cn], binding)
	if !hmac.Equal(want[:], mac[:macLen]) {
		return "", ErrBadMAC
	}
	return string(coord[:cn]), nil
}

// sum returns the HMAC, under s's key, truncated to macLen bytes, of
//
//	Version | len(kid) (1 byte) | kid | len(coord) (2 bytes) | coord | len(binding) (8 bytes) | binding
//
// with lengths big-endian. The lengths make the encoding injective: no two
// (kid, coord, binding) triples hash the same bytes, so moving bytes from
// the coordinator into the binding breaks the MAC.
func (s *macState) sum(kid string, coord []byte, binding string) [macLen]byte {
	b := s.buf[:]
	b[0] = Version
	b[1] = byte(len(kid))
	s.h.Write(b[:2])
	write(s, kid)
	b[0], b[1] = byte(len(coord)>>8), byte(len(coord))
	s.h.Write(b[:2])
	write(s, coord)
	n := uint64(len(binding))
	for i := 0; i < 8; i++ {
		b[i] = byte(n >> (56 - 8*i))
	}
	s.h.Write(b[:8])
	write(s, binding)
	var mac [macLen]byte
	copy(mac[:], s.h.Sum(b[:0]))
	return mac
}

// write writes p to s's hash a buffer at a time (see macState).
func write[T ~string | ~[]byte](s *macState, p T) {
	for len(p) > 0 {
		n := copy(s.buf[:], p)
		s.h.Write(s.buf[:n])
		p = p[n:]
	}
}

// Prefix returns the path prefix that carries token, without a trailing
// slash: Prefix(t) + "/v1/statement/executing/..." is a gateway path.
func Prefix(token string) string {
	return PathPrefix + token
}

// Split splits a request path of the form Prefix(token) + rest, where rest
// starts with '/', into the token and rest. It reports ok false for a path
// that does not carry a token, so the caller can tell a new submission
// (POST /v1/statement) from a follow-up. It does not check the token:
// Verify does. Token characters need no escaping, so either the decoded or
// the escaped path will do, as long as rest is read the same way.
func Split(path string) (token, rest string, ok bool) {
	after, found := strings.CutPrefix(path, PathPrefix)
	if !found {
		return "", "", false
	}
	i := strings.IndexByte(after, '/')
	if i <= 0 {
		return "", "", false
	}
	return after[:i], after[i:], true
}

// base64URL reports whether s holds only characters of the base64url
// alphabet (no padding).
func base64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
