// Package spread measures, on real processes, how evenly strategies spread
// running queries over coordinators when many clients share them: driver
// pools and gateway replicas, each a process of its own, against simulated
// coordinators that `zkpresto register` registers (and whose load it
// publishes) in a real ZooKeeper, everything on loopback.
//
// Each pool sends statements open-loop (Poisson arrivals; each statement a
// sleep of exponentially distributed length on the coordinator) for a fixed
// time; the coordinators run at most Slots at once and queue the rest in
// order, as a resource group's hard concurrency limit does. While the pools
// run, the coordinators' running and queued counts are sampled: a strategy
// that spreads well keeps the queues short and even.
package spread

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Options configure a run. The zero value of a field means its default.
type Options struct {
	// Zkpresto is the zkpresto binary (register and gateway); required.
	Zkpresto string
	// Self is the binary that serves as a pool when run with PoolCommand
	// as its first argument; required.
	Self string
	// Strategies are compared in order; default least_active, p2c,
	// shared_p2c.
	Strategies []string
	// Pools is how many driver pools, each a process, go through ZooKeeper
	// directly; default 10. Gateways is how many gateway replicas, each a
	// process with a pool of its own in front; default 2.
	Pools, Gateways int
	// Coordinators and Slots: how many simulated coordinators, and how many
	// statements each runs at once; default 3 and 4.
	Coordinators, Slots int
	// MeanService is a statement's mean time on a coordinator; default
	// 400ms. The coordinator notices a statement's end at the client's
	// next poll, about 50 ms later on average, which adds to the load.
	MeanService time.Duration
	// Load is the arrival rate as a share of all the slots, counting
	// MeanService alone; default 0.75 (with the polls, about 0.85).
	Load float64
	// Duration is how long each strategy's pools send; default 40s. The
	// first Warmup of it is left out of the samples; default 2s.
	Duration, Warmup time.Duration
	// Progress, when set, receives a line per step.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	if o.Zkpresto == "" || o.Self == "" {
		return o, errors.New("spread: the zkpresto binary and the pool binary are required")
	}
	if o.Strategies == nil {
		o.Strategies = []string{"least_active", "p2c", "shared_p2c"}
	}
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&o.Pools, 10)
	set(&o.Gateways, 2)
	set(&o.Coordinators, 3)
	set(&o.Slots, 4)
	if o.MeanService == 0 {
		o.MeanService = 400 * time.Millisecond
	}
	if o.Load == 0 {
		o.Load = 0.75
	}
	if o.Duration == 0 {
		o.Duration = 40 * time.Second
	}
	if o.Warmup == 0 {
		o.Warmup = 2 * time.Second
	}
	switch {
	case o.Pools < 0 || o.Gateways < 0 || o.Pools+o.Gateways == 0 || o.Pools+o.Gateways > 100:
		return o, fmt.Errorf("spread: %d pools and %d gateways: want 1 to 100 clients", o.Pools, o.Gateways)
	case o.Coordinators < 1 || o.Coordinators > 20 || o.Slots < 1 || o.Slots > 100:
		return o, fmt.Errorf("spread: %d coordinators of %d slots: want 1 to 20 of 1 to 100", o.Coordinators, o.Slots)
	case o.Duration > 10*time.Minute || o.Warmup >= o.Duration:
		return o, fmt.Errorf("spread: duration %s with warm-up %s: want at most 10m, more than the warm-up", o.Duration, o.Warmup)
	case !(o.Load > 0 && o.Load <= 2):
		return o, fmt.Errorf("spread: load %v: want a share of capacity in (0, 2]", o.Load)
	case o.MeanService < time.Millisecond || o.MeanService > time.Minute:
		return o, fmt.Errorf("spread: mean service %s: want 1ms to 1m", o.MeanService)
	}
	return o, nil
}

// Result is what one strategy achieved.
type Result struct {
	Strategy string
	// Statements is how many statements the pools completed; Failed how
	// many ended with an error.
	Statements, Failed int
	// P50 and P99 are the statements' latencies, all pools together.
	P50, P99 time.Duration
	// InFlight is, per coordinator, its mean running plus queued
	// statements over the samples; Queued its mean queued ones.
	InFlight, Queued []float64
	// MaxMeanInFlight is the largest InFlight over their mean: 1 is even.
	MaxMeanInFlight float64
	// MeanQueued is the mean queue summed over the coordinators: what
	// waits although, with an even spread, a slot might be free elsewhere.
	MeanQueued float64
}

// Run starts ZooKeeper, the coordinators and their registrars once, then
// each strategy's gateways and pools in turn, and returns a Result per
// strategy. Everything it starts is stopped before it returns.
func Run(ctx context.Context, o Options) ([]Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	dir, err := os.MkdirTemp("", "zkpresto-spread-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	zk, err := zkserver.Start(zkserver.Options{Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("spread: ZooKeeper: %w", err)
	}
	defer zk.Close()
	say("ZooKeeper on %s", zk.Addr())

	coords := make([]*coordinator.Coordinator, o.Coordinators)
	for i := range coords {
		c, err := coordinator.Start(coordinator.Options{Name: fmt.Sprintf("c%d", i+1), Version: "0.289", MaxRunning: o.Slots})
		if err != nil {
			return nil, fmt.Errorf("spread: coordinator %d: %w", i+1, err)
		}
		defer c.Close()
		coords[i] = c
	}
	var procs processes
	defer procs.stopAll()
	for _, c := range coords {
		cmd := exec.CommandContext(ctx, o.Zkpresto, "register", "--zookeeper", zk.Addr(), "--advertise", c.URL(),
			"--interval", "1s", "--load-source", "presto", "--load-slots", fmt.Sprint(o.Slots), "--log-level", "warn")
		if _, err := procs.start(cmd, nil); err != nil {
			return nil, fmt.Errorf("spread: zkpresto register for %s: %w", c.Name(), err)
		}
	}
	say("%d coordinators of %d slots, registered with their load by zkpresto register", len(coords), o.Slots)

	var results []Result
	for _, strategy := range o.Strategies {
		res, err := runStrategy(ctx, o, zk.Addr(), coords, strategy, say)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	return results, nil
}

// gatewayKeys is the routing-token secret the replicas share; a fixed test
// key, the run being on loopback only.
const gatewayKeys = "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"

func runStrategy(ctx context.Context, o Options, zkAddr string, coords []*coordinator.Coordinator, strategy string, say func(string, ...any)) (Result, error) {
	var procs processes
	defer procs.stopAll()
	dsn := "presto://" + zkAddr + "/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto;zooKeeperStrategy=" + strategy + "?user=spread"
	// Each client's share of the arrivals.
	rate := o.Load * float64(o.Coordinators*o.Slots) / o.MeanService.Seconds() / float64(o.Pools+o.Gateways)
	var pools []*process
	startPool := func(target string) error {
		// Pool k gets the same seed under every strategy.
		cmd := exec.CommandContext(ctx, o.Self, PoolCommand, "--dsn", target, "--seed", fmt.Sprint(len(pools)+1),
			"--rate", fmt.Sprint(rate), "--mean", o.MeanService.String(), "--duration", o.Duration.String())
		p, err := procs.start(cmd, nil)
		if err != nil {
			return fmt.Errorf("spread: pool: %w", err)
		}
		pools = append(pools, p)
		return nil
	}
	for range o.Gateways {
		cmd := exec.CommandContext(ctx, o.Zkpresto, "gateway", "--listen", "127.0.0.1:0", "--log-level", "error",
			"--drain-timeout", "1s", "--dsn", dsn)
		cmd.Env = append(os.Environ(), "ZKPRESTO_GATEWAY_SECRET="+gatewayKeys)
		p, err := procs.start(cmd, regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`))
		if err != nil {
			return Result{}, fmt.Errorf("spread: zkpresto gateway: %w", err)
		}
		host := strings.TrimPrefix(p.announced, "http://")
		if err := startPool("presto://" + host + "/?user=spread"); err != nil {
			return Result{}, err
		}
	}
	for range o.Pools {
		if err := startPool(dsn); err != nil {
			return Result{}, err
		}
	}
	say("%s: %d pools and %d gateway replicas send %.1f statements/s each for %s", strategy, o.Pools, o.Gateways, rate, o.Duration)

	// Sample the coordinators while the pools send.
	inFlight, queued := make([]float64, len(coords)), make([]float64, len(coords))
	samples := 0
	began := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Since(began) < o.Duration {
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-tick.C:
		}
		if time.Since(began) < o.Warmup {
			continue
		}
		for i, c := range coords {
			r, q := c.Load()
			inFlight[i] += float64(r + q)
			queued[i] += float64(q)
		}
		samples++
	}
	res := Result{Strategy: strategy, InFlight: inFlight, Queued: queued}
	var latencies []time.Duration
	for _, p := range pools {
		report, err := p.wait(o.Duration + time.Minute)
		if err != nil {
			return Result{}, fmt.Errorf("spread: pool: %w", err)
		}
		var pr poolReport
		if err := json.Unmarshal(report, &pr); err != nil {
			return Result{}, fmt.Errorf("spread: pool report %q: %w", report, err)
		}
		for _, ms := range pr.LatenciesMillis {
			latencies = append(latencies, time.Duration(ms*float64(time.Millisecond)))
		}
		res.Failed += pr.Failed
	}
	res.Statements = len(latencies)
	if len(latencies) > 0 {
		slices.Sort(latencies)
		res.P50, res.P99 = quantile(latencies, 0.5), quantile(latencies, 0.99)
	}
	var sum, most float64
	for i := range inFlight {
		inFlight[i] /= float64(max(samples, 1))
		queued[i] /= float64(max(samples, 1))
		sum += inFlight[i]
		most = max(most, inFlight[i])
		res.MeanQueued += queued[i]
	}
	if sum > 0 {
		res.MaxMeanInFlight = most / (sum / float64(len(inFlight)))
	}
	return res, nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// process is a child process whose stdout the run reads.
type process struct {
	cmd       *exec.Cmd
	announced string // what its announce pattern matched
	stdout    bytes.Buffer
	stderr    bytes.Buffer
	mu        sync.Mutex
	exited    chan struct{}
}

type processes struct{ list []*process }

// start starts cmd; with announce, it waits until a line of its stdout
// matches and keeps the first group.
func (ps *processes) start(cmd *exec.Cmd, announce *regexp.Regexp) (*process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ps.list = append(ps.list, p)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			line := sc.Text()
			if announce != nil {
				if m := announce.FindStringSubmatch(line); m != nil {
					select {
					case found <- m[1]:
					default:
					}
				}
			}
			p.mu.Lock()
			p.stdout.WriteString(line + "\n")
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	if announce == nil {
		return p, nil
	}
	select {
	case p.announced = <-found:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited: %s", cmd.Path, p.errText())
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("%s did not start within 30s: %s", cmd.Path, p.errText())
	}
}

func (p *process) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.TrimSpace(p.stderr.String())
}

// wait waits for the process to exit by itself and returns its stdout.
func (p *process) wait(timeout time.Duration) ([]byte, error) {
	select {
	case <-p.exited:
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s did not finish within %s", p.cmd.Path, timeout)
	}
	if !p.cmd.ProcessState.Success() {
		return nil, fmt.Errorf("%s: %s: %s", p.cmd.Path, p.cmd.ProcessState, p.errText())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.TrimSpace(p.stdout.Bytes()), nil
}

// stopAll ends every process still running: SIGTERM, then SIGKILL after 5s.
func (ps *processes) stopAll() {
	for _, p := range ps.list {
		select {
		case <-p.exited:
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range ps.list {
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
