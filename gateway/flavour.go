package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Flavour is the header flavour the coordinators speak: PrestoDB reads and
// writes X-Presto-* headers only, Trino X-Trino-* only, so a client of the
// other flavour loses its session (user, catalog, transaction...) unless
// the gateway renames the headers on the way.
type Flavour string

// The flavours. The zero Flavour translates nothing: requests reach the
// coordinators as the client wrote them, for a fleet that reads both
// prefixes or whose clients all speak its flavour.
const (
	// Presto coordinators (PrestoDB): X-Presto-* headers.
	Presto Flavour = "presto"
	// Trino coordinators: X-Trino-* headers.
	Trino Flavour = "trino"
)

// FlavourFor is the flavour of coordinators reached through a driver DSN:
// Trino for a trino:// DSN, Presto otherwise.
func FlavourFor(trino bool) Flavour {
	if trino {
		return Trino
	}
	return Presto
}

func (f Flavour) prefix() string {
	switch f {
	case Presto:
		return "X-Presto-"
	case Trino:
		return "X-Trino-"
	}
	return ""
}

func (f Flavour) valid() error {
	switch f {
	case "", Presto, Trino:
		return nil
	}
	return fmt.Errorf("gateway: unknown coordinator flavour %q (want %q or %q)", f, Presto, Trino)
}

// requestHeaders are the session headers of the protocol a client sends,
// without their prefix. Only these are renamed: a header only one flavour
// knows means nothing to the other under any name.
var requestHeaders = []string{
	"User", "Original-User", "Original-Roles", "Source", "Catalog", "Schema", "Path", "Time-Zone",
	"Language", "Session", "Role", "Prepared-Statement", "Transaction-Id", "Client-Info",
	"Client-Tags", "Client-Capabilities", "Trace-Token", "Extra-Credential", "Resource-Estimate",
	"Query-Data-Encoding",
}

// answerHeaders are the headers a coordinator answers with to change the
// client's session, without their prefix.
var answerHeaders = []string{
	"Set-Session", "Clear-Session", "Set-Catalog", "Set-Schema", "Set-Path", "Set-Role",
	"Set-Original-Roles", "Added-Prepare", "Deallocated-Prepare", "Started-Transaction-Id",
	"Clear-Transaction-Id", "Set-Authorization-User", "Reset-Authorization-User",
}

// clientFlavour is the flavour of a client's request: the one prefix its
// headers use, or the zero Flavour when they use both or neither (nothing
// tells then what the client reads, so nothing is renamed).
func clientFlavour(h http.Header) Flavour {
	var presto, trino bool
	for name := range h {
		switch {
		case strings.HasPrefix(name, "X-Presto-"):
			presto = true
		case strings.HasPrefix(name, "X-Trino-"):
			trino = true
		}
	}
	switch {
	case presto && !trino:
		return Presto
	case trino && !presto:
		return Trino
	}
	return ""
}

// rename moves the headers names of h from prefix from to prefix to. h's
// keys are canonical (net/http's parsing, or Set), and so are the
// prefixed names.
func rename(h http.Header, names []string, from, to string) {
	for _, name := range names {
		if v, ok := h[from+name]; ok {
			delete(h, from+name)
			h[to+name] = v
		}
	}
}

// flavourTransport translates between the client's flavour and the
// coordinators': it renames a request's session headers to the
// coordinators' prefix and the answer's session changes back to the
// client's, so that the client's next statement carries them in a form it
// reads. Doing it here, under every request the gateway sends, covers
// submissions, follow-ups, cancels and searches for a query alike.
type flavourTransport struct {
	next http.RoundTripper
}

// flavourKey is the context key of the flavour of a request's coordinator.
type flavourKey struct{}

// withFlavour makes ctx say that its request goes to a coordinator of
// flavour (empty: translate nothing).
func withFlavour(ctx context.Context, flavour Flavour) context.Context {
	return context.WithValue(ctx, flavourKey{}, flavour)
}

// RoundTrip implements http.RoundTripper. The request is not modified: a
// shallow copy carries the renamed headers. The coordinator's flavour is
// the one its context carries (see withFlavour), which the gateway takes
// from the coordinator's group.
func (t flavourTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	client := clientFlavour(req.Header)
	coordinator, _ := req.Context().Value(flavourKey{}).(Flavour)
	if client != "" && coordinator != "" && client != coordinator {
		h := make(http.Header, len(req.Header))
		for k, v := range req.Header {
			h[k] = v
		}
		rename(h, requestHeaders, client.prefix(), coordinator.prefix())
		out := *req
		out.Header = h
		req = &out
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && client != "" {
		other := Trino
		if client == Trino {
			other = Presto
		}
		rename(resp.Header, answerHeaders, other.prefix(), client.prefix())
	}
	return resp, err
}
