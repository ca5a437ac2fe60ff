package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Action is one kind of fault, or the end of one.
type Action int

// The actions of a fault schedule.
const (
	// Crash stops a coordinator as if its process died: the listener and
	// every connection close, running queries are lost, the port refuses.
	Crash Action = iota + 1
	// Deregister removes a crashed coordinator's registration, as ZooKeeper
	// does when the dead process's session expires.
	Deregister
	// Recover restarts a crashed coordinator on the same port and registers
	// it again if its registration was removed.
	Recover
	// StartingOn makes a coordinator answer 503 to new statements, as a
	// Presto server does while it starts.
	StartingOn
	// StartingOff ends a starting phase.
	StartingOff
	// ResetOn makes a coordinator read each statement whole and reset its
	// connection without answering: the statement may have run there.
	ResetOn
	// ResetOff ends a reset phase.
	ResetOff
	// KillLeader kills the ZooKeeper leader with SIGKILL.
	KillLeader
	// RestartZooKeeper starts the killed ZooKeeper server again and waits
	// for the ensemble to settle.
	RestartZooKeeper
)

var actionNames = map[Action]string{
	Crash:            "crash",
	Deregister:       "deregister",
	Recover:          "recover",
	StartingOn:       "starting",
	StartingOff:      "started",
	ResetOn:          "resetting",
	ResetOff:         "reset-over",
	KillLeader:       "kill-zk-leader",
	RestartZooKeeper: "restart-zk",
}

// String names the action as progress lines show it.
func (a Action) String() string {
	if s, ok := actionNames[a]; ok {
		return s
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Event is one scheduled fault.
type Event struct {
	// At is the time since the start of the run.
	At time.Duration
	// Action is what happens.
	Action Action
	// Coordinator is the index of the coordinator concerned (c1 is 0); -1
	// for ZooKeeper actions.
	Coordinator int
}

// String formats the event as one line: time, action, target.
func (e Event) String() string {
	return fmt.Sprintf("%8s %-14s %s", e.At.Round(time.Millisecond), e.Action, e.target())
}

// target names the coordinator (c1, c2, ...) or "zookeeper".
func (e Event) target() string {
	if e.Coordinator < 0 {
		return "zookeeper"
	}
	return fmt.Sprintf("c%d", e.Coordinator+1)
}

// nodeState is a coordinator's state while the plan is built.
type nodeState int

const (
	serving nodeState = iota
	down
	starting
	resetting
)

// Plan returns the fault schedule of a run with opts, in time order. It
// depends only on opts (Seed included), so a seed reproduces a schedule.
//
// Every CrashEvery one serving coordinator, chosen at random, crashes and
// recovers after a random time between MinDown and MaxDown; its
// registration is removed DeregisterAfter after the crash if it is still
// down. Every StartingEvery (offset by half a period) one serving
// coordinator is starting for StartingFor. Every ResetEvery (offset by a
// quarter of a period) one serving coordinator resets connections for
// ResetFor. A fault that would leave fewer than Coordinators − MaxUnavailable coordinators serving
// is skipped. Every LeaderKillEvery, first at half that period, the
// ZooKeeper leader is killed and restarted LeaderDownFor later. Faults
// begin before opts.Duration; the ends of faults may come after it (a run
// that ends early ends every fault itself).
func Plan(opts Options) []Event {
	opts = opts.withDefaults()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6368616f73)) // "chaos"
	var events []Event

	// Coordinator faults: candidates in time order, applied to a simulated
	// state so the limit on unavailable coordinators holds at every instant.
	type candidate struct {
		at     time.Duration
		action Action // Crash, StartingOn or ResetOn
	}
	var cands []candidate
	if opts.CrashEvery > 0 {
		for t := opts.CrashEvery; t < opts.Duration; t += opts.CrashEvery {
			cands = append(cands, candidate{at: t, action: Crash})
		}
	}
	if opts.StartingEvery > 0 && opts.StartingFor > 0 {
		for t := opts.StartingEvery / 2; t < opts.Duration; t += opts.StartingEvery {
			cands = append(cands, candidate{at: t, action: StartingOn})
		}
	}
	if opts.ResetEvery > 0 && opts.ResetFor > 0 {
		for t := opts.ResetEvery / 4; t < opts.Duration; t += opts.ResetEvery {
			cands = append(cands, candidate{at: t, action: ResetOn})
		}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return compareDurations(a.at, b.at) })

	state := make([]nodeState, opts.Coordinators)
	backAt := make([]time.Duration, opts.Coordinators) // when a down or starting node serves again
	for _, c := range cands {
		unavailable := 0
		var choices []int
		for i := range state {
			if state[i] != serving && backAt[i] <= c.at {
				state[i] = serving
			}
			if state[i] == serving {
				choices = append(choices, i)
			} else {
				unavailable++
			}
		}
		if unavailable >= opts.MaxUnavailable || len(choices) == 0 {
			continue
		}
		i := choices[rng.IntN(len(choices))]
		switch c.action {
		case Crash:
			downFor := opts.MinDown
			if spread := opts.MaxDown - opts.MinDown; spread > 0 {
				downFor += time.Duration(rng.Int64N(int64(spread) + 1))
			}
			state[i], backAt[i] = down, c.at+downFor
			events = append(events, Event{At: c.at, Action: Crash, Coordinator: i})
			if opts.DeregisterAfter > 0 && opts.DeregisterAfter < downFor {
				events = append(events, Event{At: c.at + opts.DeregisterAfter, Action: Deregister, Coordinator: i})
			}
			events = append(events, Event{At: backAt[i], Action: Recover, Coordinator: i})
		case StartingOn:
			state[i], backAt[i] = starting, c.at+opts.StartingFor
			events = append(events,
				Event{At: c.at, Action: StartingOn, Coordinator: i},
				Event{At: backAt[i], Action: StartingOff, Coordinator: i})
		case ResetOn:
			state[i], backAt[i] = resetting, c.at+opts.ResetFor
			events = append(events,
				Event{At: c.at, Action: ResetOn, Coordinator: i},
				Event{At: backAt[i], Action: ResetOff, Coordinator: i})
		}
	}

	if opts.LeaderKillEvery > 0 {
		for t := opts.LeaderKillEvery / 2; t < opts.Duration; t += opts.LeaderKillEvery {
			events = append(events,
				Event{At: t, Action: KillLeader, Coordinator: -1},
				Event{At: t + opts.LeaderDownFor, Action: RestartZooKeeper, Coordinator: -1})
		}
	}
	slices.SortStableFunc(events, func(a, b Event) int { return compareDurations(a.At, b.At) })
	return events
}

func compareDurations(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
