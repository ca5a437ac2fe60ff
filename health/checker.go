package health

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/wire"
)

// Checker limits and defaults.
const (
	// DefaultCheckInterval is used when StartChecker is given no interval.
	DefaultCheckInterval = 10 * time.Second
	// MaxCheckTimeout bounds one /v1/info request; shorter intervals use
	// the interval as the timeout, so a round never overlaps the next.
	MaxCheckTimeout = 5 * time.Second
	// maxConcurrentChecks bounds the requests of one round in flight at once.
	maxConcurrentChecks = 8
)

// Checker checks every node's GET /v1/info in the background and reports
// the results to a Tracker. Close stops it.
type Checker struct {
	interval time.Duration
	timeout  time.Duration
	client   *http.Client
	nodes    func() []discovery.Node
	tracker  *Tracker
	log      *slog.Logger

	ctx    context.Context // cancelled by Close; aborts running checks
	cancel context.CancelFunc
	done   chan struct{} // closed when the background loop has returned
	round  sync.Mutex    // one round at a time, so results land in order
}

// StartChecker starts checking the nodes that nodes returns every interval
// (DefaultCheckInterval when interval is not positive), each request with a
// timeout of min(interval, MaxCheckTimeout), through client (a plain
// http.Client when nil). A node that answers 200 with a JSON object saying
// "starting": false is marked healthy in t. One that fails to answer,
// answers another status or a redirect (redirects are not followed, whatever
// the client's CheckRedirect says), sends something that is not Presto's
// /v1/info, or reports "starting": true is marked unhealthy. The registrar
// and the CLI judge a coordinator by the same rules. The first round runs
// one interval after the start; call CheckNow to run one at once. t is
// required; client, nodes and logger may be nil.
//
// Close does not close the client's idle connections, since the client may
// be shared; keep-alive connections let each round reuse its connections.
func StartChecker(interval time.Duration, client *http.Client, nodes func() []discovery.Node, t *Tracker, logger *slog.Logger) *Checker {
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	if client == nil {
		client = &http.Client{}
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
		client:   client,
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
	info := wire.ProbeInfo(probeCtx, c.client, node.URL())
	cancel()
	if ctx.Err() != nil {
		return // cancelled by the caller or Close: the node proved nothing
	}
	if info.Verdict != wire.Up {
		err := fmt.Errorf("health check: %w", info.Err)
		c.log.Debug("coordinator check failed", "addr", node.Addr, "verdict", info.Verdict, "error", err)
		c.tracker.SetUnhealthy(node.Addr, err)
		return
	}
	c.tracker.SetHealthy(node.Addr)
}
