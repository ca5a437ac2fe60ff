package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
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
	// maxInfoBytes bounds how much of a /v1/info answer is read.
	maxInfoBytes = 64 << 10
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
// http.Client when nil). A node that fails to answer, answers other than
// 200, or reports "starting": true is marked unhealthy in t; one that
// answers 200 and is not starting is marked healthy. The first round runs
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
	err := c.probe(ctx, node)
	if ctx.Err() != nil {
		return // cancelled by the caller or Close: the node proved nothing
	}
	if err != nil {
		c.log.Debug("coordinator check failed", "addr", node.Addr, "error", err)
		c.tracker.SetUnhealthy(node.Addr, err)
		return
	}
	c.tracker.SetHealthy(node.Addr)
}

// errStarting is the reason given for a node that reports it is starting.
var errStarting = errors.New("node reports it is starting")

// probe returns nil when node answers GET /v1/info with 200 and is not
// starting.
func (c *Checker) probe(ctx context.Context, node *discovery.Node) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	url := node.URL() + "/v1/info"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health check %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("health check: %w", err) // *url.Error names the URL
	}
	defer func() {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxInfoBytes))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check GET %s: status %s", url, resp.Status)
	}
	var info struct {
		Starting bool `json:"starting"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxInfoBytes)).Decode(&info); err != nil {
		return fmt.Errorf("health check GET %s: bad answer: %w", url, err)
	}
	if info.Starting {
		return fmt.Errorf("health check GET %s: %w", url, errStarting)
	}
	return nil
}
