package discovery

import (
	"context"
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
//
// go-zookeeper's calls take no context, so the compare-and-set runs in a
// goroutine of its own and Next stops waiting for it when its context is
// done. At most one such goroutine exists per counter: while a call whose
// caller gave up is still waiting on ZooKeeper (the client may notice a
// black-holed network only two thirds of a session timeout later), later
// calls fail at once instead of starting more. That goroutine ends when
// ZooKeeper answers, when the client gives up on the connection, or when the
// session is closed.
type ZKCounter struct {
	z    *ZooKeeper
	path string

	mu   sync.Mutex
	call *counterCall // the compare-and-set running now; nil when none
}

// counterCall is one compare-and-set. value and err are set before done is
// closed.
type counterCall struct {
	done      chan struct{}
	value     uint64
	err       error
	abandoned bool // its caller stopped waiting; guarded by ZKCounter.mu
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
// It returns by the time ctx is done, with an error, even when ZooKeeper has
// not answered; a call whose caller went away may still increment the
// counter. Errors name the ensemble and path: an unreachable ensemble, no
// answer before ctx was done, an earlier call still waiting on ZooKeeper,
// data that is not a decimal counter, or more than 32 lost races in a row.
func (c *ZKCounter) Next(ctx context.Context) (uint64, error) {
	if c.path == "/" {
		return 0, c.errorf("no counter path given")
	}
	if err := ctx.Err(); err != nil {
		return 0, c.errorf("not started: %w", err)
	}
	for {
		c.mu.Lock()
		call := c.call
		if call == nil {
			call = &counterCall{done: make(chan struct{})}
			c.call = call
			c.mu.Unlock()
			go c.run(ctx, call)
			return c.await(ctx, call)
		}
		abandoned := call.abandoned
		c.mu.Unlock()
		if abandoned {
			return 0, c.errorf("an earlier call is still waiting for ZooKeeper to answer; not waiting behind it")
		}
		// A live call: take the next turn, unless ctx ends first.
		select {
		case <-call.done:
		case <-ctx.Done():
			return 0, c.errorf("waiting for this counter's previous call: %w", ctx.Err())
		}
	}
}

// await waits for the call Next started, or marks it abandoned when ctx
// ends first.
func (c *ZKCounter) await(ctx context.Context, call *counterCall) (uint64, error) {
	select {
	case <-call.done:
		return call.value, call.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	running := c.call == call
	if running {
		call.abandoned = true
	}
	c.mu.Unlock()
	if !running {
		// It finished meanwhile: done is about to close, the value is ours.
		<-call.done
		return call.value, call.err
	}
	return 0, c.errorf("no answer from ZooKeeper in time: %w", ctx.Err())
}

// run does the compare-and-set for call and then clears the counter's turn.
func (c *ZKCounter) run(ctx context.Context, call *counterCall) {
	call.value, call.err = c.compareAndSet(ctx)
	c.mu.Lock()
	c.call = nil
	c.mu.Unlock()
	close(call.done)
}

// compareAndSet is the read and versioned write, retried on lost races. It
// stops between attempts once ctx is done: nobody is waiting for the value.
func (c *ZKCounter) compareAndSet(ctx context.Context) (uint64, error) {
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
		if err := ctx.Err(); err != nil {
			return 0, c.errorf("abandoned before writing: %w", err)
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
		t := time.NewTimer(time.Duration(rand.Int64N(int64(backoff))) + 1)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, c.errorf("abandoned after %d lost races: %w", attempt, ctx.Err())
		}
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
	return fmt.Errorf("discovery: counter %s on ZooKeeper ensemble %s: "+format,
		append([]any{c.path, c.z.w.cfg.Ensemble()}, args...)...)
}
