package metrics

import (
	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// FromConnector reads a zkpresto connector's Stats as the driver collector's
// source:
//
//	prometheus.MustRegister(metrics.NewDriverCollector(metrics.FromConnector(connector)))
//
// A connector is a StatsSource itself; FromConnector keeps the type of the
// source explicit where a collector is built.
func FromConnector(c *zkdriver.Connector) StatsSource { return StatsFunc(c.Stats) }
