package strategy

import (
	"os"
	"strings"

	"github.com/zkpresto/zkpresto/discovery"
)

// ZoneEnv is the environment variable local_first reads the client's zone
// from when Options.Zone is empty.
const ZoneEnv = "ZKPRESTO_ZONE"

// localFirstStrategy is local_first: least_active among the nodes in the
// client's zone (Node.Zone equal to Options.Zone, else to $ZKPRESTO_ZONE,
// ignoring case), or among all nodes when no zone is set or no node is in
// it.
type localFirstStrategy struct {
	loadAware
	zone string
}

func newLocalFirst(opts Options) Strategy {
	zone := strings.TrimSpace(opts.Zone)
	if zone == "" {
		zone = strings.TrimSpace(os.Getenv(ZoneEnv))
	}
	return &localFirstStrategy{loadAware: newLoadAware(opts), zone: zone}
}

func (s *localFirstStrategy) Build(nodes []discovery.Node) Picker {
	loads := s.loadsFor(nodes)
	var cands []candidate
	if s.zone != "" {
		cands = candidates(nodes, loads, func(n *discovery.Node) bool { return strings.EqualFold(n.Zone, s.zone) })
	}
	if len(cands) == 0 {
		cands = candidates(nodes, loads, nil)
	}
	return &activePicker{cands: cands, rng: s.rng}
}
