// Package token makes and checks the gateway's routing tokens: the part of
// every URI the gateway hands out (nextUri, partialCancelUri, infoUri,
// spooled segment URIs) that names the coordinator the follow-up belongs
// to. Any replica holding the key routes a follow-up by verifying the
// token alone, so replicas share no state: no database, no cookies, no
// sticky sessions.
//
// # Format
//
// A token is three dot-separated parts, carried as the first segment of a
// path under PathPrefix:
//
//	/_zk/{kid}.{coord}.{mac}/v1/statement/executing/...
//
// The parts are these.
//
//   - kid names the key that made the MAC: 1 to 32 of A-Z a-z 0-9 _ -.
//     It lets two keys live at once while one is rotated out.
//   - coord is the coordinator's base URL (scheme and canonical
//     host:port) in base64url without padding, at most 512 bytes before
//     encoding. It is carried, not looked up, so no replica needs to know
//     which coordinator took a query.
//   - mac is HMAC-SHA256 truncated to 128 bits, in base64url without
//     padding (22 characters), over the format version, kid, coord and a
//     binding the caller gives: the query id of the URI, so a token taken
//     from one query's URI does not verify on another query's path ("" for
//     a URI that names no query; an OAuth2 token URI binds its path, an
//     OAuth2 callback cookie its expiry and sign-in). Each field is length-prefixed, so no two
//     inputs hash alike.
//
// Every character is unreserved in a URI, so a token needs no escaping, and
// base64url lacks '.', so the parts split unambiguously. Decoding is strict
// (no trailing bits, no padding), so a token has one spelling only. For
// example, with the key
//
//	k2:8f9e2b7c1d0a4e6f5b3c2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c
//
// the coordinator http://10.0.0.7:8080 and the binding
// 20240501_101112_00001_abcde, the token is
//
//	k2.aHR0cDovLzEwLjAuMC43OjgwODA.99G49GrvlAlZDods0PYQoQ
//
// and a nextUri carrying it is
//
//	https://gateway.example.com/_zk/k2.aHR0cDovLzEwLjAuMC43OjgwODA.99G49GrvlAlZDods0PYQoQ/v1/statement/executing/20240501_101112_00001_abcde/y0/1
//
// # Keys and rotation
//
// ParseKeys reads one or two keys, one per line (or comma-separated in an
// environment variable), each as [kid:]hex with at least 32 bytes of key.
// The first key signs; both verify. To rotate, list the new key first and
// the old one second on every replica, then drop the old one once the
// tokens it signed are no longer in use. A token whose key has been
// dropped fails with ErrUnknownKey: tokens carry no expiry, so retiring a
// key is what ends them.
//
// Derive makes keys for another purpose from the same secret (the
// gateway's affinity cookie): the kids are the same, the secrets differ, so
// a token of one purpose never verifies as another's.
//
// # What Verify does not do
//
// A verified token proves this gateway once sent a client to that
// coordinator for that query; it does not prove the coordinator still
// serves. The caller must still check the coordinator is a member of its
// group before forwarding, so that a leaked or old token can never make the
// gateway call a host that is no longer one of its own.
//
// Verify never panics and bounds its work by MaxTokenLen before decoding
// anything; Sign and Verify allocate only the string they return.
package token
