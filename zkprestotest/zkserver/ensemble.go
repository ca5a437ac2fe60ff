package zkserver

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Ensemble is a group of ZooKeeper servers forming one quorum. Servers are
// in myid order (Servers[i] has myid i+1); tests stop, kill and restart them
// individually.
type Ensemble struct {
	// Servers are the members; do not modify the slice.
	Servers []*Server
	opts    Options
}

// StartEnsemble starts n servers on free loopback ports and waits until all
// of them serve and exactly one is leader. With n == 1 the only server runs
// standalone. The caller must Close the ensemble.
func StartEnsemble(n int, opts Options) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("zkserver: ensemble size %d, want at least 1", n)
	}
	return startWithRetries(opts, func(opts Options, deadline time.Time) (*Ensemble, error) {
		return startEnsembleOnce(n, opts, deadline)
	})
}

func startEnsembleOnce(n int, opts Options, deadline time.Time) (*Ensemble, error) {
	// Client, quorum and election port per member.
	ports, err := opts.pickPorts(3 * n)
	if err != nil {
		return nil, err
	}
	var peers []peer
	if n > 1 {
		for i := range n {
			peers = append(peers, peer{id: i + 1, quorumPort: ports[3*i+1], electionPort: ports[3*i+2]})
		}
	}
	e := &Ensemble{opts: opts}
	for i := range n {
		s, err := newServer(opts, i+1, ports[3*i], peers)
		if err != nil {
			return nil, errors.Join(err, e.Close())
		}
		e.Servers = append(e.Servers, s)
	}

	// Launch all members first: none can finish starting without the others.
	logStarts := make([]int64, n)
	for i, s := range e.Servers {
		s.mu.Lock()
		p, logStart, err := s.launch()
		if err == nil {
			s.proc = p
		}
		s.mu.Unlock()
		if err != nil {
			return nil, errors.Join(err, e.Close())
		}
		logStarts[i] = logStart
	}
	if err := e.waitStarted(logStarts, deadline); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return e, nil
}

// waitStarted waits until every freshly launched member serves and one
// leads. Unlike WaitLeader it fails as soon as any member exits: a member
// that lost a port race may die only after the others formed a quorum.
func (e *Ensemble) waitStarted(logStarts []int64, deadline time.Time) error {
	procs := make([]*process, len(e.Servers))
	for i, s := range e.Servers {
		s.mu.Lock()
		procs[i] = s.proc
		s.mu.Unlock()
	}
	for {
		for i, s := range e.Servers {
			if procs[i].exited() {
				return s.earlyExitError(procs[i], logStarts[i])
			}
		}
		if err := e.checkBinds(logStarts); err != nil {
			return err
		}
		if _, err := e.settledLeader(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			_, err := e.settledLeader()
			return fmt.Errorf("zkserver: ensemble %s not ready after %v: %w", e.Connect(), e.opts.StartTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// checkBinds fails with errBindFailed when a member could not bind its
// election or quorum port. Such a member keeps running and may even serve,
// but it cannot take part in every election, so fault tests would misbehave.
func (e *Ensemble) checkBinds(logStarts []int64) error {
	for i, s := range e.Servers {
		if bindFailed(s.logSince(logStarts[i])) {
			return fmt.Errorf("%w: server %d (%s); log tail:\n%s", errBindFailed, i, s.Addr(), s.LogTail(errorTailLines))
		}
	}
	return nil
}

// Addrs returns the client addresses of all members, in Servers order.
func (e *Ensemble) Addrs() []string {
	addrs := make([]string, len(e.Servers))
	for i, s := range e.Servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Connect returns the connection string "127.0.0.1:p1,127.0.0.1:p2,...".
func (e *Ensemble) Connect() string {
	return strings.Join(e.Addrs(), ",")
}

// Leader returns the index in Servers of the member that currently reports
// itself leader (or standalone). Stopped and paused members are skipped.
func (e *Ensemble) Leader() (int, error) {
	modes, errs := e.modes()
	return e.leaderOf(modes, errs)
}

// leaderOf picks the single leader from the members' modes.
func (e *Ensemble) leaderOf(modes []string, errs []error) (int, error) {
	leader := -1
	for i, mode := range modes {
		if mode != "leader" && mode != "standalone" {
			continue
		}
		if leader >= 0 {
			return -1, fmt.Errorf("zkserver: servers %d and %d both report leader", leader, i)
		}
		leader = i
	}
	if leader < 0 {
		return -1, fmt.Errorf("zkserver: no leader among %s: %s", e.Connect(), describeModes(modes, errs))
	}
	return leader, nil
}

// WaitLeader waits up to timeout until every running, unpaused member
// serves requests and exactly one of them is leader, and returns the
// leader's index. Use it after killing or restarting members.
func (e *Ensemble) WaitLeader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		leader, err := e.settledLeader()
		if err == nil {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("zkserver: ensemble did not settle within %v: %w", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// settledLeader is Leader with the extra demand that every running member
// answers with a mode.
func (e *Ensemble) settledLeader() (int, error) {
	modes, errs := e.modes()
	for i, err := range errs {
		if err != nil {
			return -1, fmt.Errorf("server %d (%s) not serving: %w", i, e.Servers[i].Addr(), err)
		}
	}
	return e.leaderOf(modes, errs)
}

// modes queries all running members in parallel. A member that is not
// running gets mode "" and no error.
func (e *Ensemble) modes() ([]string, []error) {
	modes := make([]string, len(e.Servers))
	errs := make([]error, len(e.Servers))
	var wg sync.WaitGroup
	for i, s := range e.Servers {
		if !s.running() {
			continue
		}
		wg.Go(func() {
			modes[i], errs[i] = s.Mode()
		})
	}
	wg.Wait()
	return modes, errs
}

func describeModes(modes []string, errs []error) string {
	parts := make([]string, len(modes))
	for i := range modes {
		switch {
		case errs[i] != nil:
			parts[i] = fmt.Sprintf("%d=error(%v)", i, errs[i])
		case modes[i] == "":
			parts[i] = fmt.Sprintf("%d=down", i)
		default:
			parts[i] = fmt.Sprintf("%d=%s", i, modes[i])
		}
	}
	return strings.Join(parts, " ")
}

// Close stops all members and removes their directories. It is idempotent.
func (e *Ensemble) Close() error {
	errs := make([]error, len(e.Servers))
	var wg sync.WaitGroup
	for i, s := range e.Servers {
		wg.Go(func() {
			errs[i] = s.Close()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
