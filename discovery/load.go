package discovery

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// znodeKeyLoad is the k=v; data key under which `zkpresto register` publishes
// the coordinator's own load figures (FormatZkpresto only).
const znodeKeyLoad = "load"

// znodeKeyNotReady is the k=v; data key under which `zkpresto register`
// marks a coordinator that answers but must get no new statement (see
// Node.NotReady; FormatZkpresto only).
const znodeKeyNotReady = "notready"

// PublishedLoad is the load a coordinator published about itself through
// its registration: the queries it was running and queueing when its
// registrar read them, and when that was. The zero value means the
// coordinator published nothing; strategies then balance it on what the
// client knows alone.
type PublishedLoad struct {
	// Running and Queued are the coordinator's running and queued queries,
	// as the coordinator itself counts them (all clients together).
	Running, Queued int
	// Slots is how many queries the coordinator runs at once (a resource
	// group's hard concurrency limit), when the operator registered it; 0
	// means unknown, and strategies use the node's weight as its capacity.
	Slots int
	// ReadAt is when the registrar read the figures, on the registrar's
	// clock; zero means no figures.
	ReadAt time.Time
	// Unwatched says this client does not watch the coordinator's data
	// (ZooKeeperConfig.LoadWatchSubset), so what it publishes is unknown
	// here and the other fields are zero. shared_p2c then sends to the
	// watched coordinators and keeps the unwatched ones for when fewer than
	// two are watched.
	Unwatched bool
}

// Known reports whether the coordinator published figures.
func (p PublishedLoad) Known() bool { return !p.ReadAt.IsZero() }

// Total returns running plus queued queries.
func (p PublishedLoad) Total() int { return p.Running + p.Queued }

// Equal reports whether p and q carry the same figures read at the same
// instant (and are both watched or both not).
func (p PublishedLoad) Equal(q PublishedLoad) bool {
	return p.Running == q.Running && p.Queued == q.Queued && p.Slots == q.Slots && p.ReadAt.Equal(q.ReadAt) &&
		p.Unwatched == q.Unwatched
}

// znodeMaxQueries bounds a published figure, far above any real coordinator,
// so that sums over a fleet cannot overflow.
const znodeMaxQueries = 1_000_000

// String writes p as the value of the load= key:
// "running,queued,slots,unix-milliseconds", e.g. "12,3,16,1764620000123".
// It is "" for the zero value.
func (p PublishedLoad) String() string {
	if !p.Known() {
		return ""
	}
	return strconv.Itoa(p.Running) + "," + strconv.Itoa(p.Queued) + "," + strconv.Itoa(p.Slots) + "," +
		strconv.FormatInt(p.ReadAt.UnixMilli(), 10)
}

// ParsePublishedLoad reads the value of a load= key, as String writes it.
// Every figure must be a whole number in 0..1000000 and the time a positive
// number of Unix milliseconds.
func ParsePublishedLoad(s string) (PublishedLoad, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	if len(parts) != 4 {
		return PublishedLoad{}, fmt.Errorf("%d comma-separated fields, want 4 (running,queued,slots,unix-milliseconds)", len(parts))
	}
	var figures [3]int
	for i, name := range [3]string{"running", "queued", "slots"} {
		v, err := strconv.Atoi(strings.TrimSpace(parts[i]))
		if err != nil || v < 0 || v > znodeMaxQueries {
			return PublishedLoad{}, fmt.Errorf("%s %s: want a whole number from 0 to %d", name, znodeQuote(parts[i]), znodeMaxQueries)
		}
		figures[i] = v
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(parts[3]), 10, 64)
	if err != nil || ms <= 0 || ms > 1<<53 {
		return PublishedLoad{}, fmt.Errorf("read time %s: want positive Unix milliseconds", znodeQuote(parts[3]))
	}
	return PublishedLoad{Running: figures[0], Queued: figures[1], Slots: figures[2], ReadAt: time.UnixMilli(ms)}, nil
}
