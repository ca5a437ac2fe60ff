package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// Checker limits and defaults.
const (
	// DefaultCheckInterval is used when StartChecker is given no interval.
	DefaultCheckInterval = 10 * time.Second
	// MaxCheckTimeout bounds one check (one /v1/info request); shorter
	// intervals use the interval as the timeout, so a round never overlaps
	// the next.
	MaxCheckTimeout = 5 * time.Second
	// maxConcurrentChecks bounds the requests of one round in flight at once.
	maxConcurrentChecks = 8
)

// Probe checks one node once. It returns nil when the node takes
// statements, and otherwise an error that says why not, naming the node
// (its URL or address) and what was wrong, and wrapping ErrStarting when
// the node answered that it is starting. ctx bounds the check: a probe
// returns soon after ctx ends. A Probe is called for several nodes at once.
//
// The Checker knows nothing of how a node is asked: the driver passes a
// probe that sends GET /v1/info and judges the answer by the rules the
// registrar and the CLI use too.
type Probe func(ctx context.Context, node discovery.Node) error

// ErrStarting is wrapped by a Probe's error when the node answered that it
// is starting: not ready yet, rather than failing.
var ErrStarting = errors.New("coordinator reports it is starting")

// Checker checks every node with a Probe in the background and reports
// the results to a Tracker. Close stops it.
type Checker struct {
	interval time.Duration
	timeout  time.Duration
	probe    Probe
	nodes    func() []discovery.Node
	tracker  *Tracker
	log      *slog.Logger

	ctx    context.Context // cancelled by Close; aborts running checks
	cancel context.CancelFunc
	done   chan struct{} // closed when the background loop has returned
	round  sync.Mutex    // one round at a time, so results land in order
}

// StartChecker starts checking the nodes that nodes returns every interval
// (DefaultCheckInterval when interval is not positive) with probe, each
// check with a timeout of min(interval, MaxCheckTimeout). A node the probe
// passes is marked healthy in t; one it fails is marked unhealthy, with the
// probe's error as the reason. The first round runs one interval after the
// start; call CheckNow to run one at once. probe and t are required (a nil
// probe panics here, not at the first round); nodes and logger may be nil.
//
// Close closes nothing of the probe's: a probe's connections are its
// owner's, and may be shared.
func StartChecker(interval time.Duration, probe Probe, nodes func() []discovery.Node, t *Tracker, logger *slog.Logger) *Checker {
	if probe == nil {
		panic("health: StartChecker without a Probe")
	}
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if nodes == nil {
		nodes = func() []discovery.Node { return nil }
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Checker{
		interval: interval,
		timeout:  min(interval, MaxCheckTimeout),
		probe:    probe,
		nodes:    nodes,
		tracker:  t,
		log:      logger,
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	go c.loop()
	return c
}

func (c *Checker) loop() {
	defer close(c.done)
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-ticker.C:
			c.CheckNow(c.ctx)
		}
	}
}

// Close stops the checker and waits for a running round to end; the round's
// requests are cancelled and their results dropped. Close is idempotent.
func (c *Checker) Close() {
	c.cancel()
	<-c.done
}

// CheckNow runs one round of checks and returns when every node has been
// checked, ctx is done, or the checker is closed. A check cut short by ctx
// or Close changes nothing.
func (c *Checker) CheckNow(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()

	c.round.Lock()
	defer c.round.Unlock()
	// c.ctx is checked directly: AfterFunc cancels ctx asynchronously.
	if ctx.Err() != nil || c.ctx.Err() != nil {
		return
	}
	nodes := c.nodes()
	sem := make(chan struct{}, maxConcurrentChecks)
	var wg sync.WaitGroup
	for i := range nodes {
		node := &nodes[i]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.checkOne(ctx, node)
		}()
	}
	wg.Wait()
}

// checkOne checks one node and reports the result, unless ctx ended first.
func (c *Checker) checkOne(ctx context.Context, node *discovery.Node) {
	probeCtx, cancel := context.WithTimeout(ctx, c.timeout)
	err := c.probe(probeCtx, *node)
	cancel()
	if ctx.Err() != nil {
		return // cancelled by the caller or Close: the node proved nothing
	}
	if err != nil {
		err = fmt.Errorf("health check: %w", err)
		c.log.Debug("coordinator check failed", "addr", node.Addr, "verdict", verdict(err), "error", err)
		c.tracker.SetUnhealthy(node.Addr, err)
		return
	}
	c.tracker.SetHealthy(node.Addr)
}

// verdict is the word for a failed check in the log: "starting" for a node
// that said so, "down" otherwise, as the CLI prints a coordinator's state.
func verdict(err error) string {
	if errors.Is(err, ErrStarting) {
		return "starting"
	}
	return "down"
}
