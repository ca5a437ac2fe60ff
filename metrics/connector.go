package metrics

// FromConnector returns a connector's Stats as the driver collector's
// source:
//
//	prometheus.MustRegister(metrics.NewDriverCollector(metrics.FromConnector(connector)))
//
// A *driver.Connector and a *routing.Router (a gateway group's Router) are
// StatsSources already, which NewDriverCollector takes as they are;
// FromConnector keeps the kind of source explicit where a collector is
// built. It takes the interface, not the driver's type, so that metrics
// reads routing.Stats only and does not import the driver.
func FromConnector(c StatsSource) StatsSource { return StatsFunc(c.Stats) }
