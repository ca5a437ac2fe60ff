package discovery

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/internal/zkconn"
)

// The discovery changes an operator reads about: each is logged once, when
// it happens, in plain words, with the ensemble and path (the watch's
// logger carries them). See zkWatch.publish and zkWatch.onDialError.

// zkMaxLoggedNodes bounds the coordinators one change names one per line;
// the rest are counted in one more line.
const zkMaxLoggedNodes = 10

// changeLimit bounds the membership lines a watch logs per minute: a
// coordinator that flaps joins and leaves as often as its registrar
// retries, and would otherwise fill the log.
const (
	changeLimit       = 30
	changeLimitWindow = time.Minute
)

// logLimiter lets through at most limit lines per window and counts the
// rest, which the next line let through reports. It is safe for
// concurrent use.
type logLimiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu         sync.Mutex
	start      time.Time
	sent       int
	suppressed int
}

func newLogLimiter(limit int, window time.Duration) *logLimiter {
	return &logLimiter{limit: limit, window: window, now: time.Now}
}

// allow reports whether a line may be logged now, and how many were
// suppressed since the last one that was.
func (l *logLimiter) allow() (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.start.IsZero() || now.Sub(l.start) >= l.window {
		l.start, l.sent = now, 0
	}
	if l.sent >= l.limit {
		l.suppressed++
		return false, 0
	}
	l.sent++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// log logs msg at level through log unless the limiter holds it back.
func (l *logLimiter) log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	ok, suppressed := l.allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed_before", suppressed)
	}
	log.Log(context.Background(), level, msg, args...)
}

// logMembership logs how next differs from cur: the coordinators that
// joined and left, the first listing, and a namespace that emptied.
func (w *zkWatch) logMembership(cur, next *Snapshot) {
	if cur.Generation == 0 {
		if len(next.Nodes) == 0 {
			w.log.Warn("no coordinator is registered: the namespace is empty")
			return
		}
		w.log.Info("coordinators found", "nodes", len(next.Nodes), "addrs", boundedAddrs(next.Addrs()))
		return
	}
	before := make(map[string]bool, len(cur.Nodes))
	for _, n := range cur.Nodes {
		before[n.Addr] = true
	}
	after := make(map[string]bool, len(next.Nodes))
	var joined, left []string
	for _, n := range next.Nodes {
		after[n.Addr] = true
		if !before[n.Addr] {
			joined = append(joined, n.Addr)
		}
	}
	for _, n := range cur.Nodes {
		if !after[n.Addr] {
			left = append(left, n.Addr)
		}
	}
	w.logNodes("coordinator joined", joined, len(next.Nodes))
	w.logNodes("coordinator left", left, len(next.Nodes))
	if len(next.Nodes) == 0 && len(cur.Nodes) > 0 {
		w.changes.log(w.log, slog.LevelWarn, "no coordinator is registered any more: the namespace is empty")
	}
}

// logNodes logs one line per address, up to zkMaxLoggedNodes, then one for
// the rest.
func (w *zkWatch) logNodes(msg string, addrs []string, total int) {
	for i, addr := range addrs {
		if i == zkMaxLoggedNodes {
			w.changes.log(w.log, slog.LevelInfo, msg+" (and more)", "more", len(addrs)-i, "nodes", total)
			return
		}
		w.changes.log(w.log, slog.LevelInfo, msg, "node", addr, "nodes", total)
	}
}

// boundedAddrs is addrs, cut to zkMaxLoggedNodes for a log line.
func boundedAddrs(addrs []string) []string {
	if len(addrs) > zkMaxLoggedNodes {
		return append(addrs[:zkMaxLoggedNodes:zkMaxLoggedNodes], "...")
	}
	return addrs
}

// onDialError logs when an outage makes the ensemble unreachable: once
// every server failed a dial in a row (one server down of three is no
// outage: go-zookeeper dials the next). It dials on, server after server,
// and every further failure until a session comes back is not news.
func (w *zkWatch) onDialError(err error) {
	if w.closing() {
		return
	}
	if w.dialFailures.Add(1) < int64(len(w.cfg.Servers)) {
		return
	}
	if w.unreachable.CompareAndSwap(false, true) && unreachableLogs.first(w.source) {
		// An error text is not ours to trust not to quote the credentials.
		msg := zkconn.Redact(zkconn.Config{AuthScheme: w.cfg.AuthScheme, Auth: w.cfg.Auth}, err.Error())
		w.log.Warn("ZooKeeper unreachable: no server of the ensemble answers; retrying", "err", msg)
	}
}

// onSession ends an outage: the next one is logged again.
func (w *zkWatch) onSession() {
	w.dialFailures.Store(0)
	w.unreachable.Store(false)
	unreachableLogs.ended(w.source)
}

// outageLog remembers, per ensemble and path, that its outage was logged:
// a discoverer that fails to open is closed, and the next statement (or
// health probe) opens another, whose outage is the same one.
type outageLog struct {
	mu     sync.Mutex
	logged map[string]time.Time
	now    func() time.Time
}

// unreachableLogs is the process's outageLog of unreachable ensembles.
var unreachableLogs = &outageLog{logged: map[string]time.Time{}, now: time.Now}

// first reports whether source's outage is news: not logged within
// changeLimitWindow (a lasting outage is said again once a window).
func (o *outageLog) first(source string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if at, ok := o.logged[source]; ok && now.Sub(at) < changeLimitWindow {
		return false
	}
	o.logged[source] = now
	return true
}

// ended forgets source's outage: a session came.
func (o *outageLog) ended(source string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.logged, source)
}
