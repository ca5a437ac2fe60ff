package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/gateway/token"
)

// transactionPrefix marks a transaction id the gateway wrapped.
const transactionPrefix = "zk~"

// wrapTransaction replaces a Started-Transaction-Id in answer headers h by
// one that names its coordinator, signed: the client sends it back with
// every statement of the transaction, and any replica sends those to the
// coordinator that holds the transaction.
func (g *Gateway) wrapTransaction(h http.Header, base string) {
	for _, name := range []string{"X-Presto-Started-Transaction-Id", "X-Trino-Started-Transaction-Id"} {
		if id := h.Get(name); id != "" {
			tok, err := g.keys.Sign(base, id)
			if err != nil {
				// Unreachable for a base the gateway built; the transaction
				// then only works while the client stays on its coordinator.
				g.log.Warn("cannot wrap a transaction id", "node", hostOf(base), "err", err)
				continue
			}
			h.Set(name, transactionPrefix+tok+"~"+id)
		}
	}
}

// unwrapTransaction returns the coordinator and the original id of a
// transaction id the gateway wrapped; ok is false for one it did not wrap
// (NONE, or absent), and err is set for one whose token fails.
func (g *Gateway) unwrapTransaction(v string) (base, id string, ok bool, err error) {
	rest, wrapped := strings.CutPrefix(v, transactionPrefix)
	if !wrapped {
		return "", "", false, nil
	}
	tok, id, found := strings.Cut(rest, "~")
	if !found {
		return "", "", true, token.ErrMalformed
	}
	base, err = g.keys.Verify(tok, id)
	return base, id, true, err
}

// pinnedNode is the coordinator of a transaction, while it may be used.
func (g *Gateway) pinnedNode(ctx context.Context, base string) (*discovery.Node, error) {
	switch state, _ := g.stateOf(ctx, base); state {
	case memberListed, memberDeparted:
	default:
		return nil, fmt.Errorf("zkpresto gateway: the transaction's coordinator %s is gone", base)
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	return &discovery.Node{Addr: u.Host, Scheme: u.Scheme, ID: u.Host, Weight: 1}, nil
}

// pinTransaction unwraps the transaction ids in header (the client's, to
// send on) and returns the coordinator that holds the statement's
// transaction, nil when it is in none. When ok is false the client was
// answered: 403 for an id this gateway's key did not sign, 410 for a
// coordinator that is gone.
func (g *Gateway) pinTransaction(w http.ResponseWriter, r *http.Request, header http.Header) (pinned *discovery.Node, ok bool) {
	for _, name := range []string{"X-Presto-Transaction-Id", "X-Trino-Transaction-Id"} {
		base, id, wrapped, err := g.unwrapTransaction(header.Get(name))
		if err != nil {
			g.stats.add("submit", http.StatusForbidden)
			writeError(w, http.StatusForbidden, errBadToken, "", "zkpresto gateway: the transaction id was not issued by this gateway's key")
			return nil, false
		}
		if wrapped {
			header.Set(name, id)
			if pinned, err = g.pinnedNode(r.Context(), base); err != nil {
				g.stats.add("submit", http.StatusGone)
				writeError(w, http.StatusGone, errCoordinatorGone, "", err.Error())
				return nil, false
			}
		}
	}
	return pinned, true
}
