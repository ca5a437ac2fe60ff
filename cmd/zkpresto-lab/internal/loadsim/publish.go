package loadsim

import (
	"fmt"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
)

// Publishing is how the simulated registrars publish their coordinator's
// load through ZooKeeper and how late clients learn of it. A registrar reads
// its coordinator's running plus queued statements (its true count) and
// writes it into its znode: every Periodic, or, with Threshold, when the
// count has moved by at least Threshold since the last write, reading every
// Sample, at most one write per MinGap, and at least one per Refresh so that
// a quiet coordinator's figure does not go stale. Every write reaches each
// client watching the coordinator Delay later.
type Publishing struct {
	// Periodic, when positive, writes the figure at this interval whether
	// or not it changed.
	Periodic time.Duration
	// Threshold, when positive (and Periodic is 0), writes when the figure
	// has moved by at least this much since the last write.
	Threshold int
	// Sample is how often the registrar reads its coordinator when it
	// writes on change.
	Sample time.Duration
	// MinGap is the least time between two writes of one registrar on
	// average: the write budget is one per MinGap, in bursts of up to
	// Burst (registrar.LoadGate).
	MinGap time.Duration
	Burst  int
	// Refresh is the longest a registrar writing on change leaves its
	// figure unwritten; 0 means never rewrite an unchanged figure.
	Refresh time.Duration
	// Delay is how long after a write its notification reaches the clients
	// (and they re-read the node).
	Delay time.Duration
	// IdleList also publishes one list of the coordinators with a free slot,
	// kept current on every change (join-idle-queue); every client watches
	// it and sends to a coordinator it lists, if any, before asking its
	// strategy.
	IdleList bool
}

// DefaultPublishing is the registrar's shipped publishing
// (registrar.DefaultLoadInterval and the rest): on a change by 3 or a
// crossing between "has a free slot" and "full", read every 25 ms, at most
// 10 writes a second in bursts of 3, rewritten at least every 5 s (three
// such intervals are strategy.DefaultPublishedStaleAfter), with
// ZooKeeper's notifications 5 ms late.
func DefaultPublishing() Publishing {
	return Publishing{
		Threshold: registrar.DefaultLoadThreshold,
		Sample:    registrar.DefaultLoadInterval,
		MinGap:    registrar.DefaultLoadMinGap,
		Burst:     registrar.DefaultLoadBurst,
		Refresh:   registrar.DefaultLoadRefresh,
		Delay:     5 * time.Millisecond,
	}
}

// Enabled reports whether figures are published at all.
func (p Publishing) Enabled() bool { return p.Periodic > 0 || p.Threshold > 0 }

// tick is how often the registrar acts.
func (p Publishing) tick() time.Duration {
	if p.Periodic > 0 {
		return p.Periodic
	}
	return p.Sample
}

// String says how figures are published, in a few words: "none", "every
// 1s", "on change by 3 (read every 25ms, at most every 100ms in bursts of
// 3)", with "+ idle list" when there is one.
func (p Publishing) String() string {
	var b strings.Builder
	switch {
	case p.Periodic > 0:
		fmt.Fprintf(&b, "every %s", p.Periodic)
	case p.Threshold > 0:
		fmt.Fprintf(&b, "on change by %d (read every %s, at most every %s", p.Threshold, p.Sample, p.MinGap)
		if p.Burst > 1 {
			fmt.Fprintf(&b, " in bursts of %d", p.Burst)
		}
		b.WriteString(")")
	default:
		return "none"
	}
	if p.IdleList {
		b.WriteString(" + idle list")
	}
	return b.String()
}

func (p Publishing) validate() error {
	switch {
	case p.Periodic < 0 || p.Threshold < 0 || p.Sample < 0 || p.MinGap < 0 || p.Burst < 0 || p.Refresh < 0 || p.Delay < 0:
		return fmt.Errorf("publishing %+v: negative setting", p)
	case p.Periodic == 0 && p.Threshold > 0 && p.Sample <= 0:
		return fmt.Errorf("publishing on change by %d: no sample interval", p.Threshold)
	case p.IdleList && !p.Enabled():
		return fmt.Errorf("an idle list without published figures")
	}
	return nil
}
