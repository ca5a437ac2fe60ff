package gateway

import (
	"net"
	"net/http"
	"net/textproto"
	"strings"
)

// hopByHop are the headers of one connection, never forwarded (RFC 9110
// 7.6.1), plus what the gateway decides itself.
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
	// The gateway decides the compression of both legs itself (see
	// outboundHeader and relay).
	"Accept-Encoding", "Content-Length",
}

// The gateway does not set the forwarding headers either (beyond
// X-Forwarded-For and X-Forwarded-Proto, when Config.ForwardedFor and
// Config.ForwardedProto ask for them, and those of its public address on
// requests to a coordinator's /oauth2/* resources, see oauth2Header), so coordinators never build the gateway's URIs
// themselves: X-Forwarded-Prefix or X-Presto-Prefix-Url would have to hold
// a routing token before the query id exists, so a coordinator-level one.
// That token would be in every URI of every query on the coordinator, held
// by all its clients, and would let any of them reach every path there in
// the gateway's name: query slugs guard the result pages, not
// /v1/query/{id}, the query list or the rest of the coordinator's API.
// Nothing would be saved either: every answer must still be read to check
// that each URI is the gateway's. So the gateway always rewrites.
//
// untrusted are headers a client must not set for the coordinator: with
// them a client could make the coordinator build URIs to a host of its
// choosing, or turn on behaviour meant for a trusted proxy (a spoofed
// X-Forwarded-Proto: https enables authentication over plain http).
var untrusted = []string{
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Port", "X-Forwarded-Proto",
	"X-Forwarded-Prefix", "X-Forwarded-Server", "X-Real-Ip", "X-Presto-Prefix-Url",
}

// outboundHeader returns the headers to send a coordinator for the client
// request r: the client's headers without the hop-by-hop and untrusted ones,
// X-Forwarded-For naming the client when Config.ForwardedFor is set,
// X-Forwarded-Proto: https for a client on TLS when Config.ForwardedProto
// is, and
// Accept-Encoding: identity.
//
// Answers come uncompressed because the gateway reads every one of them to
// rewrite its URIs: a gzipped answer would be compressed by the
// coordinator, decompressed by the gateway and compressed again for the
// client, three passes where one does (the gateway's, for a client that
// asks for gzip). Without the explicit identity Go's transport would ask for
// gzip itself and decode it in silence.
func (g *Gateway) outboundHeader(r *http.Request) http.Header {
	h := make(http.Header, len(r.Header)+2)
	for k, v := range r.Header {
		h[k] = v // the values are not modified, only the map
	}
	removeConnectionHeaders(h)
	for _, k := range untrusted {
		delete(h, k)
	}
	h["Accept-Encoding"] = identity
	if g.certJWT != nil {
		g.certJWT.authorize(r, h)
	}
	if g.forwardedProto && r.TLS != nil {
		// The client's own connection, never what it says about it (its
		// X-Forwarded-Proto went with the untrusted headers above).
		h["X-Forwarded-Proto"] = forwardedHTTPS
	}
	if !g.forwardedFor {
		return h
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		h.Set("X-Forwarded-For", ip)
	}
	return h
}

// forwardedHTTPS is X-Forwarded-Proto's value for a client on TLS.
var forwardedHTTPS = []string{"https"}

// copyAnswerHeader copies a coordinator's answer headers to the client's,
// without the hop-by-hop ones.
func copyAnswerHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
	removeConnectionHeaders(dst)
}

func removeConnectionHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
}

// identity is the Accept-Encoding of every request to a coordinator.
var identity = []string{"identity"}

// clientHeader returns the value of a session header in either flavour
// (X-Presto-name or X-Trino-name).
func clientHeader(h http.Header, name string) string {
	if v := h.Get("X-Presto-" + name); v != "" {
		return v
	}
	return h.Get("X-Trino-" + name)
}

// takeCookies removes from header's Cookie lines the cookies whose name is
// the gateway's own (a coordinator has no use for them, and they must end
// up in no log) and returns their values, unquoted, in order. Lines that
// hold none of them go on as they came; header gets a new slice, so that
// the client's request keeps its own.
func takeCookies(header http.Header, own func(name string) bool) []string {
	lines := header["Cookie"]
	if len(lines) == 0 {
		return nil
	}
	var values, kept []string
	for _, line := range lines {
		var rest []string
		taken := false
		for _, c := range strings.Split(line, ";") {
			c = strings.TrimSpace(c)
			name, value, _ := strings.Cut(c, "=")
			switch {
			case own(name):
				values, taken = append(values, strings.Trim(value, `"`)), true
			case c != "":
				rest = append(rest, c)
			}
		}
		switch {
		case !taken:
			kept = append(kept, line)
		case len(rest) > 0:
			kept = append(kept, strings.Join(rest, "; "))
		}
	}
	if values == nil {
		return nil
	}
	if len(kept) == 0 {
		delete(header, "Cookie")
	} else {
		header["Cookie"] = kept
	}
	return values
}
