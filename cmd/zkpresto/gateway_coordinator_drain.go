package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/registrar"
)

// coordinatorDrainHandler serves POST /_zk/drain (on) and /_zk/undrain on
// the admin address: it sets or takes away the drain mark
// (registrar.SetDrained) of the coordinator named by the "coordinator"
// parameter (host:port or http(s)://host:port), in the ZooKeeper namespace
// of each group that lists it (for undrain, of every ZooKeeper group: a
// drained coordinator may be unlisted while it restarts). The mark is
// ZooKeeper's: every replica, driver and restarted gateway sees it.
// Requests a browser sends from another site are refused
// (http.CrossOriginProtection), so that a page cannot drain a coordinator
// through an operator's browser.
func coordinatorDrainHandler(gw *gateway.Gateway, on bool) http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.FormValue("coordinator")
		addr := raw
		if i := strings.Index(addr, "://"); i >= 0 {
			addr = strings.TrimSuffix(addr[i+3:], "/")
		}
		canon, err := discovery.CanonicalAddr(addr)
		if err != nil {
			http.Error(w, fmt.Sprintf("coordinator %q: want host:port or http(s)://host:port", raw), http.StatusBadRequest)
			return
		}
		var groups []string
		for _, g := range gw.Groups() {
			zc := g.Router.ZooKeeper()
			if zc == nil {
				continue
			}
			if on {
				listed, err := lists(r, g, canon)
				if err != nil {
					http.Error(w, fmt.Sprintf("group %s: %v", g.Name, err), http.StatusBadGateway)
					return
				}
				if !listed {
					continue
				}
			}
			cfg := registrar.Config{Servers: zc.Servers, Namespace: zc.Path, SessionTimeout: zc.SessionTimeout}
			if zc.AuthScheme != "" {
				cfg.Auth = &registrar.Auth{Scheme: zc.AuthScheme, Credentials: zc.Auth}
			}
			if zc.TLS != nil {
				if cfg.TLS, err = zc.TLS.TLSConfig(); err != nil {
					http.Error(w, fmt.Sprintf("group %s: ZooKeeper TLS: %v", g.Name, err), http.StatusInternalServerError)
					return
				}
			}
			if err := registrar.SetDrained(r.Context(), cfg, canon, on); err != nil {
				http.Error(w, fmt.Sprintf("group %s: %v", g.Name, err), http.StatusBadGateway)
				return
			}
			groups = append(groups, g.Name)
		}
		if len(groups) == 0 {
			http.Error(w, fmt.Sprintf("no group discovers coordinator %s in ZooKeeper", canon), http.StatusNotFound)
			return
		}
		verb := "drained"
		if !on {
			verb = "undrained"
		}
		fmt.Fprintf(w, "%s %s in group %s\n", verb, canon, strings.Join(groups, ", "))
	})
	return http.NewCrossOriginProtection().Handler(h)
}

// lists reports whether g's discovery lists the coordinator at addr now.
// It opens the group's discovery if no statement has yet (discovery is
// opened on first use), so that a drain sent right after the gateway
// starts finds what ZooKeeper lists.
func lists(r *http.Request, g *gateway.Group, addr string) (bool, error) {
	snap, err := g.Router.Snapshot(r.Context())
	if err != nil {
		return false, err
	}
	for i := range snap.Nodes {
		if snap.Nodes[i].Addr == addr {
			return true, nil
		}
	}
	return false, nil
}
