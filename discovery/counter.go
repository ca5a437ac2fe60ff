package discovery

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Bounds for ZKCounter's compare-and-set loop. Each failed attempt means
// another client incremented the counter in between, so the loop makes
// progress for the cluster as a whole; the bound only caps how long one
// caller waits behind heavy contention (about a second at worst).
const (
	counterMaxAttempts = 32
	counterBaseBackoff = 500 * time.Microsecond
	counterMaxBackoff  = 50 * time.Millisecond
)

// ZKCounter is a cluster-wide counter kept in one znode whose data is the
// decimal value. Next reads the znode and writes value+1 conditioned on the
// version it read (a compare-and-set), retrying with a short jittered backoff
// when another client won the race. Every client that names the same
// ensemble and path shares the count; strategy global_poll uses it as its
// strategy.SharedCounter.
//
// Each Next is two round trips to the ensemble, one of them a write the
// ensemble commits to its log (milliseconds), more under contention, so it
// suits a pick per connection, not a hot loop. A ZKCounter is safe for
// concurrent use; calls on one ZKCounter take turns, since racing each other
// for the znode would only make all but one of them retry. It works while
// the ZooKeeper handle it came from is open.
type ZKCounter struct {
	z    *ZooKeeper
	path string
	mu   sync.Mutex // one compare-and-set in flight per counter
}

// Counter returns the counter kept at path (e.g. "/zkpresto/counters/etl"),
// using this handle's session. The znode, and any missing parent, is created
// as a persistent node on first use; an existing znode is used as it is.
func (z *ZooKeeper) Counter(path string) *ZKCounter {
	return &ZKCounter{z: z, path: "/" + strings.Trim(path, "/")}
}

// Path returns the counter's znode path.
func (c *ZKCounter) Path() string { return c.path }

// Next increments the counter and returns its value before the increment.
// Errors name the ensemble and path: an unreachable ensemble, data that is
// not a decimal counter, or more than 32 lost races in a row.
func (c *ZKCounter) Next() (uint64, error) {
	if c.path == "/" {
		return 0, c.errorf("no counter path given")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	conn := c.z.w.conn
	backoff := counterBaseBackoff
	for attempt := 1; ; attempt++ {
		data, stat, err := conn.Get(c.path)
		if errors.Is(err, zk.ErrNoNode) {
			if err := c.create(conn); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, c.errorf("reading: %w", err)
		}
		value, err := parseCounter(data)
		if err != nil {
			return 0, c.errorf("%w", err)
		}
		_, err = conn.Set(c.path, []byte(strconv.FormatUint(value+1, 10)), stat.Version)
		switch {
		case err == nil:
			return value, nil
		case errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode):
			// Another client got there first (or deleted the znode): read again.
		default:
			return 0, c.errorf("writing: %w", err)
		}
		if attempt == counterMaxAttempts {
			return 0, c.errorf("lost the compare-and-set to other clients %d times in a row", attempt)
		}
		// Full jitter: clients that collided once do not collide again in
		// lockstep.
		time.Sleep(time.Duration(rand.Int64N(int64(backoff))) + 1)
		backoff = min(2*backoff, counterMaxBackoff)
	}
}

// create makes the counter znode with value 0, and its missing parents
// empty; a node another client created meanwhile is fine.
func (c *ZKCounter) create(conn *zk.Conn) error {
	acl := zk.WorldACL(zk.PermAll)
	parts := strings.Split(strings.TrimPrefix(c.path, "/"), "/")
	for i := range parts {
		path := "/" + strings.Join(parts[:i+1], "/")
		var data []byte
		if i == len(parts)-1 {
			data = []byte("0")
		}
		if _, err := conn.Create(path, data, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return c.errorf("creating %s: %w", path, err)
		}
	}
	return nil
}

// parseCounter reads a counter's data; empty data is 0, so that a znode
// created by hand works.
func parseCounter(data []byte) (uint64, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("data %.40q is not a decimal counter", s)
	}
	return v, nil
}

func (c *ZKCounter) errorf(format string, args ...any) error {
	return fmt.Errorf("zkpresto: discovery: counter %s on ZooKeeper ensemble %s: "+format,
		append([]any{c.path, c.z.w.cfg.Ensemble()}, args...)...)
}
