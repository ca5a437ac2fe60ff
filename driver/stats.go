package driver

import "github.com/zkpresto/zkpresto/routing"

// Stats is a point-in-time view of a connector: what discovery lists, and
// per coordinator what the driver did with it. It is the routing core's.
type Stats = routing.Stats

// DiscoveryStats describes the discovery source.
type DiscoveryStats = routing.DiscoveryStats

// NodeStats is what the driver knows of one coordinator.
type NodeStats = routing.NodeStats
