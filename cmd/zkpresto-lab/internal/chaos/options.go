package chaos

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Options configure a chaos run. Zero fields take the defaults of
// DefaultOptions; Quick returns a shorter set for tests.
type Options struct {
	// Clients is the number of concurrent clients sharing one *sql.DB.
	Clients int
	// Statements is how many statements each client runs.
	Statements int
	// Duration caps the run: no client starts a statement after it, and
	// faults begin only before it.
	Duration time.Duration
	// FinishAll lets every client run all its Statements, past Duration
	// if the machine is slow; the faults still begin only before it. A
	// test that counts the statements run sets it, so that its count does
	// not depend on how busy the machine is.
	FinishAll bool
	// Think is each client's pause between two statements, which spreads
	// the statements over the fault schedule.
	Think time.Duration
	// StatementTimeout bounds each statement (its context's deadline).
	StatementTimeout time.Duration

	// Coordinators is the number of coordinators; ZooKeeperServers the size
	// of the ensemble.
	Coordinators, ZooKeeperServers int
	// MinLatency and MaxLatency are the statement latencies of the first
	// and last coordinator; the others are spread evenly between them.
	MinLatency, MaxLatency time.Duration

	// Strategy is the driver's zooKeeperStrategy; Retries its retries.
	Strategy string
	Retries  int
	// SessionTimeout is the driver's zooKeeperSessionTimeout.
	SessionTimeout time.Duration
	// HealthCheckInterval, when positive, is the driver's
	// healthCheckInterval (active checks); zero leaves them off.
	HealthCheckInterval time.Duration

	// Seed makes the fault schedule reproducible.
	Seed uint64
	// CrashEvery is the period of coordinator crashes; each crashed
	// coordinator recovers after MinDown to MaxDown. Negative disables.
	CrashEvery, MinDown, MaxDown time.Duration
	// DeregisterAfter is when a crashed coordinator's registration
	// disappears from ZooKeeper, as its session would expire. Negative
	// keeps registrations.
	DeregisterAfter time.Duration
	// StartingEvery is the period of starting phases (503 to statements),
	// each StartingFor long. Negative disables.
	StartingEvery, StartingFor time.Duration
	// ResetEvery is the period of reset phases, each ResetFor long: the
	// coordinator reads each statement whole and resets its connection
	// (SO_LINGER 0) without answering, so that the statement may have
	// started there and must not be sent anywhere else. Negative disables.
	ResetEvery, ResetFor time.Duration
	// MaxUnavailable is how many coordinators may be down, starting or
	// resetting at once; it must leave at least one serving.
	MaxUnavailable int
	// LeaderKillEvery is the period of ZooKeeper leader kills; the killed
	// server restarts LeaderDownFor later. Negative disables.
	LeaderKillEvery, LeaderDownFor time.Duration

	// Logger, when set, gets the driver's logs (ejections, failovers,
	// ZooKeeper connection changes).
	Logger *slog.Logger `json:"-"`
}

// DefaultOptions is the full run: 8 clients × 500 statements over 4
// coordinators and a 3-server ensemble, at most 60 s of statements.
func DefaultOptions() Options {
	return Options{
		Clients:          8,
		Statements:       500,
		Duration:         60 * time.Second,
		Think:            100 * time.Millisecond,
		StatementTimeout: 30 * time.Second,
		Coordinators:     4,
		ZooKeeperServers: 3,
		MinLatency:       2 * time.Millisecond,
		MaxLatency:       10 * time.Millisecond,
		Strategy:         "p2c",
		Retries:          3,
		SessionTimeout:   4 * time.Second,
		Seed:             1,
		CrashEvery:       1500 * time.Millisecond,
		MinDown:          time.Second,
		MaxDown:          4 * time.Second,
		DeregisterAfter:  3 * time.Second,
		StartingEvery:    5 * time.Second,
		StartingFor:      2 * time.Second,
		ResetEvery:       4 * time.Second,
		ResetFor:         time.Second,
		MaxUnavailable:   2,
		LeaderKillEvery:  20 * time.Second,
		LeaderDownFor:    3 * time.Second,
	}
}

// Quick is a run of a few seconds for tests: 4 clients × 80 statements,
// faults twice as often, one ZooKeeper leader kill.
func Quick() Options {
	o := DefaultOptions()
	o.Clients, o.Statements = 4, 80
	o.Duration = 8 * time.Second
	o.Think = 50 * time.Millisecond
	o.CrashEvery, o.MinDown, o.MaxDown = 700*time.Millisecond, 500*time.Millisecond, 1500*time.Millisecond
	o.DeregisterAfter = time.Second
	o.StartingEvery, o.StartingFor = 2*time.Second, time.Second
	o.ResetEvery, o.ResetFor = 1500*time.Millisecond, 700*time.Millisecond
	o.LeaderKillEvery, o.LeaderDownFor = 4*time.Second, 1500*time.Millisecond
	return o
}

// withDefaults fills zero fields from DefaultOptions and turns negative
// periods into zero (disabled).
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fillD := func(v *time.Duration, def time.Duration) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	fill(&o.Clients, d.Clients)
	fill(&o.Statements, d.Statements)
	fill(&o.Coordinators, d.Coordinators)
	fill(&o.ZooKeeperServers, d.ZooKeeperServers)
	fill(&o.Retries, d.Retries)
	fill(&o.MaxUnavailable, d.MaxUnavailable)
	if o.Strategy == "" {
		o.Strategy = d.Strategy
	}
	fillD(&o.Duration, d.Duration)
	fillD(&o.Think, d.Think)
	fillD(&o.StatementTimeout, d.StatementTimeout)
	fillD(&o.MinLatency, d.MinLatency)
	fillD(&o.MaxLatency, d.MaxLatency)
	fillD(&o.SessionTimeout, d.SessionTimeout)
	fillD(&o.CrashEvery, d.CrashEvery)
	fillD(&o.MinDown, d.MinDown)
	fillD(&o.MaxDown, d.MaxDown)
	fillD(&o.DeregisterAfter, d.DeregisterAfter)
	fillD(&o.StartingEvery, d.StartingEvery)
	fillD(&o.StartingFor, d.StartingFor)
	fillD(&o.ResetEvery, d.ResetEvery)
	fillD(&o.ResetFor, d.ResetFor)
	fillD(&o.LeaderKillEvery, d.LeaderKillEvery)
	fillD(&o.LeaderDownFor, d.LeaderDownFor)
	return o
}

// validate reports options a run cannot honour.
func (o Options) validate() error {
	var errs []error
	if o.Clients < 0 || o.Statements < 0 || o.Coordinators < 0 || o.ZooKeeperServers < 0 || o.Retries < 0 || o.MaxUnavailable < 0 {
		errs = append(errs, errors.New("counts must not be negative"))
	}
	if o.MaxUnavailable >= o.Coordinators {
		errs = append(errs, fmt.Errorf("at most %d of %d coordinators may be unavailable at once, so that one serves", o.Coordinators-1, o.Coordinators))
	}
	if o.MinLatency > o.MaxLatency {
		errs = append(errs, fmt.Errorf("latency %v..%v: the minimum exceeds the maximum", o.MinLatency, o.MaxLatency))
	}
	if o.MinDown > o.MaxDown {
		errs = append(errs, fmt.Errorf("down time %v..%v: the minimum exceeds the maximum", o.MinDown, o.MaxDown))
	}
	if o.LeaderKillEvery > 0 && o.LeaderKillEvery <= o.LeaderDownFor {
		errs = append(errs, fmt.Errorf("ZooKeeper leader kills every %v must be further apart than the %v a server stays down", o.LeaderKillEvery, o.LeaderDownFor))
	}
	if o.LeaderKillEvery > 0 && o.ZooKeeperServers < 3 {
		errs = append(errs, fmt.Errorf("killing the ZooKeeper leader needs an ensemble of at least 3 servers, not %d", o.ZooKeeperServers))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chaos: bad options: %w", err)
	}
	return nil
}
