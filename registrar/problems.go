package registrar

import (
	"log/slog"
	"sync"
	"time"
)

// DefaultRepeatLogInterval is how often a problem that keeps happening is
// logged again.
const DefaultRepeatLogInterval = 30 * time.Second

// Problem groups: a recovery clears every problem of its group at once.
const (
	groupCoordinator = "coordinator" // health checks
	groupSession     = "session"     // dialling ZooKeeper, the session, auth
	groupStep        = "step"        // creates, deletes and reads in ZooKeeper
	groupLoad        = "load"        // reading the coordinator's load figures
	groupWorkers     = "workers"     // reading the coordinator's active workers
)

// problemLog keeps the registrar from being silent without flooding the
// log: the first occurrence of a problem is logged at once at WARN, repeats
// at most once per interval with the number of repeats since the last
// line, and the recovery of a group once at INFO. An operator who never
// sees a line must be able to conclude that nothing is wrong.
type problemLog struct {
	log      *slog.Logger
	interval time.Duration

	mu   sync.Mutex
	open map[problemKey]*problem
}

type problemKey struct{ group, detail string }

type problem struct {
	logged  time.Time // when the last line about it went out
	repeats int       // occurrences since that line
	total   int       // occurrences since it was first seen
}

func newProblemLog(log *slog.Logger, interval time.Duration) *problemLog {
	return &problemLog{log: log, interval: interval, open: map[problemKey]*problem{}}
}

// warn reports one occurrence of the problem detail in group. force logs it
// whatever the rate limit, for lines that mark a change of state; the rate
// limit counts from there.
func (p *problemLog) warn(group, detail string, force bool, msg string, args ...any) {
	now := time.Now()
	p.mu.Lock()
	k := problemKey{group, detail}
	pr := p.open[k]
	if pr == nil {
		pr = &problem{}
		p.open[k] = pr
	} else if !force && now.Sub(pr.logged) < p.interval {
		pr.repeats++
		pr.total++
		p.mu.Unlock()
		return
	}
	pr.total++
	repeats := pr.repeats
	pr.logged, pr.repeats = now, 0
	p.mu.Unlock()
	if repeats > 0 {
		args = append(args, "repeats", repeats, "over", p.interval.String())
	}
	p.log.Warn(msg, args...)
}

// resolve clears every problem of group and says how many occurrences
// there were; 0 when the group had none open.
func (p *problemLog) resolve(group string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, pr := range p.open {
		if k.group == group {
			n += pr.total
			delete(p.open, k)
		}
	}
	return n
}

// recover clears group and, when it had problems, logs msg at INFO with
// their count.
func (p *problemLog) recover(group, msg string, args ...any) {
	if n := p.resolve(group); n > 0 {
		p.log.Info(msg, append(args, "after_failures", n)...)
	}
}
