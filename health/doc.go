// Package health keeps track of which coordinators should get no new work
// for a while: passive ejection (outlier detection) from the failures the
// driver sees, and optional active health checks by a probe the caller
// passes in (package httpprobe's asks for GET /v1/info).
//
// # Passive ejection
//
// A Tracker counts failures per node, as Envoy's outlier detection and
// Apache Curator's DownInstancePolicy do. ConsecutiveFailures failures in a
// row eject a node; Eject ejects at once, for a strong signal such as a
// refused connection. The n-th ejection in a row lasts n × BaseEjection,
// capped at MaxEjection (linear growth, as Envoy's ejection multiplier).
// When an ejection ends the node is on probation: its next failure ejects
// it again, for longer, without waiting for a new run of failures; its next
// success ends the probation and resets the multiplier, so a node that
// recovered starts over. A success while a node is ejected (a statement that
// began before the ejection) resets its failure count but ends nothing.
//
// At most MaxEjectedPercent of the known nodes are ejected at once, but
// always at least one, so a client-side fault that makes every node look bad
// cannot eject them all.
//
// # Active checks
//
// A Checker asks a Probe about every node and marks a node the probe fails
// unhealthy (SetUnhealthy) until a later check passes (SetHealthy). The
// package knows nothing of HTTP: package httpprobe's probe, the one the
// driver uses, sends GET /v1/info and fails a node that does not answer
// 200 with "starting": false. Unhealthy marks come from a direct observation
// of the node, so they are not limited by MaxEjectedPercent and do not count
// towards it; a passing check also ends a running ejection early (as Envoy's
// successful_active_health_check_uneject_host does), leaving the node on
// probation.
//
// # Picking
//
// Usable filters a node list down to the nodes that are neither ejected nor
// unhealthy, and returns every node when none is usable, as Presto Router
// does: a flapping check or a network fault on the client never stops all
// traffic. Version changes whenever the result of Usable may change, including
// when an ejection runs out, so the driver can rebuild its picker only when
// needed by comparing one number per statement.
package health
