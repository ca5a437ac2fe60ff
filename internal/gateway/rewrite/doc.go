// Package rewrite changes the URIs in a Presto/Trino statement answer as
// it streams from the coordinator to the client, so that every follow-up
// the client makes comes back to the gateway.
//
// A result page may be 16-128 MB (and more), and the gateway proxies many
// queries at once, so a page is never held: a small JSON state machine
// (container nesting, string and escape state, key or value expected)
// copies the body through a fixed buffer and holds only the one string
// value being rewritten, up to MaxURI bytes. encoding/json is not used on
// the body because its Decoder holds a whole value, and the top-level
// value is the whole page.
//
// What is rewritten, and nothing else:
//
//   - the top-level members nextUri, partialCancelUri and infoUri;
//   - in Trino's spooled protocol, where the top-level "data" is an
//     object {"encoding": ..., "segments": [...]}, the uri and ackUri of
//     every segment whose "type" is "spooled".
//
// Everything else passes byte for byte: whitespace, key order, number
// spelling, string escapes, row values that happen to contain the text
// "nextUri" (they are values, not keys, or keys at another depth), the
// segments' headers and metadata, and inline segments. A URI that the
// rewrite function gives back unchanged keeps its original bytes too, so
// a function that returns its argument makes the output identical to the
// input.
//
// A body that is not one well-formed JSON object is an error from Read
// (a *SyntaxError, or one wrapping ErrTooLong when a bound is passed),
// never bytes passed on unparsed: the gateway turns the error into a
// Presto error for the client instead of handing it a page the client
// would misread, or one whose follow-ups bypass the gateway.
package rewrite
