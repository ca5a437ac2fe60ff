package metrics

import (
	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// FromConnector reads a zkpresto connector's Stats as the driver collector's
// source:
//
//	prometheus.MustRegister(metrics.NewDriverCollector(metrics.FromConnector(connector)))
func FromConnector(c *zkdriver.Connector) StatsFunc {
	return func() DriverStats {
		st := c.Stats()
		out := DriverStats{Discovery: DiscoveryStats{
			Connected:  st.Discovery.Connected,
			StaleSince: st.Discovery.StaleSince,
			Skipped:    st.Discovery.Skipped,
		}}
		out.Nodes = make([]NodeStats, len(st.Nodes))
		for i, n := range st.Nodes {
			out.Nodes[i] = NodeStats{
				Addr: n.Node.Addr, Usable: n.Usable, Picks: n.Picks, Failures: n.Failures,
				Failovers: n.Failovers, Ejections: n.Ejections, InFlight: n.InFlight, Latency: n.Latency,
			}
		}
		return out
	}
}
