//go:build linux

package gateway_test

// The gateway against nginx, the floor for any proxy (BENCHMARKS.md, "The
// gateway against nginx"). Every benchmark runs one coordinator simulator
// and the same client over five paths: straight to the coordinator
// (/path=direct), through `zkpresto gateway` as its own process, built from
// ./cmd/zkpresto (/path=gateway), through nginx as a plain streaming
// reverse proxy (/path=nginx, internal/testrig/nginx), through Go's
// httputil.ReverseProxy, this test binary re-executed as a process of its
// own (/path=goproxy: what any proxy on net/http costs), and through a TCP
// relay in Go, the same way (/path=gorelay: what any proxy in Go costs
// before it reads a byte of HTTP). The coordinator is a
// Trino one that honours X-Forwarded-*: behind nginx it builds its links on
// nginx's address, so every request of a statement goes through nginx, as
// every request goes through the gateway, which rewrites the links itself
// (and sends no forwarding header); behind the relay it
// builds them on the Host the client sent, the relay's. The client checks
// that each nextUri is on the address it started from.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/internal/testrig/nginx"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

var paths = []string{"direct", "gateway", "nginx", "goproxy", "gorelay"}

// benchRig is one coordinator and the four ways to it.
type benchRig struct {
	coord *coordinator.Coordinator
	gw    *proxyProcess
	ngx   *nginx.Proxy
	gp    *proxyProcess
	gr    *proxyProcess
}

func (r *benchRig) base(path string) string {
	switch path {
	case "gateway":
		return r.gw.url
	case "nginx":
		return r.ngx.URL()
	case "goproxy":
		return r.gp.url
	case "gorelay":
		return r.gr.url
	}
	return r.coord.URL()
}

// pids are the processes of a path's proxy; none for direct.
func (r *benchRig) pids(path string) []int {
	switch path {
	case "gateway":
		return []int{r.gw.cmd.Process.Pid}
	case "nginx":
		return r.ngx.Pids()
	case "goproxy":
		return []int{r.gp.cmd.Process.Pid}
	case "gorelay":
		return []int{r.gr.cmd.Process.Pid}
	}
	return nil
}

func newBenchRig(b *testing.B, opts coordinator.Options) *benchRig {
	b.Helper()
	separate := os.Getenv(separateCoresEnv) == "1"
	ngxOpts := nginx.Options{}
	if separate {
		ngxOpts.Workers = separateCores(b)
	}
	opts.Flavour = coordinator.Trino
	opts.HonourForwarded = true
	c, err := coordinator.Start(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ngxOpts.Upstream = c.Addr()
	rig := &benchRig{
		coord: c,
		gw:    startGatewayProcess(b, c.Addr()),
		ngx:   nginx.StartT(b, ngxOpts),
		gp:    startSelfProxy(b, "goproxy", goProxyEnv, c.Addr()),
		gr:    startSelfProxy(b, "gorelay", goRelayEnv, c.Addr()),
	}
	if separate {
		for _, path := range paths[1:] {
			for _, pid := range rig.pids(path) {
				pinProcess(b, pid, proxyCores())
			}
		}
	}
	return rig
}

// separateCoresEnv, set to 1, runs every proxy on cores of its own: this
// process (the client and the coordinator) on the first core, with
// GOMAXPROCS 1, the proxies on the others (nginx with one worker a core,
// the Go proxies with GOMAXPROCS the number of those cores, as each
// inherits its first core at start), as a proxy runs on hosts of its own
// in production. Without it, every process shares every core, and the
// CPU a proxy takes is also time the client and the coordinator wait.
const separateCoresEnv = "ZKPRESTO_BENCH_SEPARATE_CORES"

// separateCores moves this process to the first core until the benchmark
// ends, and returns the number of cores left for the proxies.
func separateCores(b *testing.B) int {
	b.Helper()
	n := runtime.NumCPU()
	if n < 2 {
		b.Fatalf("%s=1 needs 2 cores or more; this machine has %d", separateCoresEnv, n)
	}
	prev := runtime.GOMAXPROCS(1)
	pinProcess(b, os.Getpid(), "0")
	b.Cleanup(func() {
		pinProcess(b, os.Getpid(), fmt.Sprintf("0-%d", n-1))
		runtime.GOMAXPROCS(prev)
	})
	return n - 1
}

func proxyCores() string { return fmt.Sprintf("1-%d", runtime.NumCPU()-1) }

// pinProcess binds every thread of pid to cpus (taskset's list format).
func pinProcess(b *testing.B, pid int, cpus string) {
	b.Helper()
	out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		b.Fatalf("taskset -a -p -c %s %d: %v: %s", cpus, pid, err, out)
	}
}

// usage is what a proxy's processes have taken of the machine so far.
type usage struct {
	cpu      time.Duration // on a core, every thread
	switches int64         // context switches, voluntary or not
}

// readUsage sums the usage of every thread of pids, from /proc.
func readUsage(b *testing.B, pids []int) usage {
	b.Helper()
	var u usage
	for _, pid := range pids {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tasks {
			dir := fmt.Sprintf("/proc/%d/task/%s/", pid, t.Name())
			sched, err := os.ReadFile(dir + "schedstat")
			if err != nil {
				continue // the thread has exited
			}
			if f := strings.Fields(string(sched)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				u.cpu += time.Duration(ns)
			}
			statusValues(dir+"status", func(key, value string) {
				if strings.HasSuffix(key, "ctxt_switches") {
					n, _ := strconv.ParseInt(value, 10, 64)
					u.switches += n
				}
			})
		}
	}
	return u
}

// statusValues calls fn with each "key: value" line of a /proc status
// file, the value trimmed; false when the file cannot be read.
func statusValues(file string, fn func(key, value string)) bool {
	s, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(s)) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fn(k, strings.TrimSpace(v))
		}
	}
	return true
}

// reportUsage reports what path's proxy took per statement since from.
func (r *benchRig) reportUsage(b *testing.B, path string, from usage, statements int) {
	pids := r.pids(path)
	if pids == nil || statements == 0 {
		return
	}
	u := readUsage(b, pids)
	b.ReportMetric(float64((u.cpu-from.cpu).Nanoseconds())/float64(statements), "proxy-cpu-ns/stmt")
	b.ReportMetric(float64(u.switches-from.switches)/float64(statements), "proxy-switches/stmt")
}

// usageNow is readUsage of path's proxy; zero for direct.
func (r *benchRig) usageNow(b *testing.B, path string) usage {
	if pids := r.pids(path); pids != nil {
		return readUsage(b, pids)
	}
	return usage{}
}

// The gateway binary, built once per test binary into a directory removed
// when the benchmarks end (TestMain's cleanup).
var (
	gatewayBuild struct {
		once sync.Once
		dir  string
		bin  string
		err  error
	}
)

func init() { testMainCleanups = append(testMainCleanups, removeGatewayBinary) }

func removeGatewayBinary() {
	if gatewayBuild.dir != "" {
		os.RemoveAll(gatewayBuild.dir)
	}
}

func gatewayBinary(b *testing.B) string {
	b.Helper()
	gatewayBuild.once.Do(func() {
		gatewayBuild.dir, gatewayBuild.err = os.MkdirTemp("", "zkpresto-gateway-bench-")
		if gatewayBuild.err != nil {
			return
		}
		gatewayBuild.bin = filepath.Join(gatewayBuild.dir, "zkpresto")
		out, err := exec.Command("go", "build", "-o", gatewayBuild.bin, "github.com/zkpresto/zkpresto/cmd/zkpresto").CombinedOutput()
		if err != nil {
			gatewayBuild.err = fmt.Errorf("go build ./cmd/zkpresto: %v\n%s", err, out)
		}
	})
	if gatewayBuild.err != nil {
		b.Fatal(gatewayBuild.err)
	}
	return gatewayBuild.bin
}

// plainClient asks the processes for their health and metrics on
// connections of its own, closed after each request.
var plainClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// proxyProcess is a proxy in front of one coordinator, in a process of
// its own.
type proxyProcess struct {
	cmd *exec.Cmd
	url string
}

func startGatewayProcess(b *testing.B, coordAddr string) *proxyProcess {
	b.Helper()
	cmd := exec.Command(gatewayBinary(b), "gateway", "--listen", "127.0.0.1:0", "--log-level", "error",
		"--drain-timeout", "1s", "--dsn", "trino://"+coordAddr+"/")
	cmd.Env = append(os.Environ(), "ZKPRESTO_GATEWAY_SECRET="+testKeys)
	p := startProxyProcess(b, "zkpresto gateway", cmd)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := plainClient.Get(p.url + "/_zk/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("zkpresto gateway not healthy: %v", err)
		}
	}
	return p
}

// goProxyEnv, set to a coordinator's address, makes this test binary
// serve as the goproxy path instead of running tests: Go's own
// httputil.ReverseProxy in front of it, the floor for a proxy built on
// net/http.
const goProxyEnv = "ZKPRESTO_BENCH_GOPROXY"

// goRelayEnv, set to a coordinator's address, makes this test binary serve
// as the gorelay path: a TCP relay that copies bytes both ways between
// each client connection and a connection of its own to the coordinator,
// with no HTTP at all. What it adds is what Go's runtime and the kernel
// cost any proxy written in Go, before it reads a header.
const goRelayEnv = "ZKPRESTO_BENCH_GORELAY"

func serveGoRelay(coordAddr string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("gorelay on http://%s\n", ln.Addr())
	for {
		client, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go func() {
			defer client.Close()
			coord, err := net.Dial("tcp", coordAddr)
			if err != nil {
				return
			}
			defer coord.Close()
			go func() {
				io.Copy(coord, client)
				coord.(*net.TCPConn).CloseWrite()
			}()
			io.Copy(client, coord)
		}()
	}
}

// selfProxies are the proxies this test binary serves as, re-executed
// with one of these variables set to a coordinator's address.
var selfProxies = map[string]func(coordAddr string){
	goProxyEnv: serveGoProxy,
	goRelayEnv: serveGoRelay,
}

func init() {
	for env, serve := range selfProxies {
		if addr := os.Getenv(env); addr != "" {
			serve(addr)
			os.Exit(0)
		}
	}
}

// startSelfProxy runs this test binary as the proxy env selects, in front
// of the coordinator at coordAddr.
func startSelfProxy(b *testing.B, name, env, coordAddr string) *proxyProcess {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env+"="+coordAddr)
	return startProxyProcess(b, name, cmd)
}

// serveGoProxy is the goproxy path: a plain streaming reverse proxy with
// forwarding headers, so that the coordinator builds its links on the
// proxy's address, as behind nginx.
func serveGoProxy(coordAddr string) {
	target := &url.URL{Scheme: "http", Host: coordAddr}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("goproxy on http://%s\n", ln.Addr())
	fmt.Fprintln(os.Stderr, http.Serve(ln, proxy))
	os.Exit(1)
}

// startProxyProcess starts cmd, which announces "on http://127.0.0.1:port"
// on its standard output, and ends it when the benchmark does.
func startProxyProcess(b *testing.B, name string, cmd *exec.Cmd) *proxyProcess {
	b.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		announce := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)
		for sc.Scan() {
			if m := announce.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		cmd.Wait()
		close(exited)
	}()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	p := &proxyProcess{cmd: cmd}
	select {
	case p.url = <-addr:
	case <-exited:
		b.Fatalf("%s exited: %s", name, stderr.String())
	case <-time.After(30 * time.Second):
		b.Fatalf("%s did not announce its address: %s", name, stderr.String())
	}
	return p
}

// benchClient is the one client of every path: it POSTs a statement and
// GETs each nextUri until there is none, reading every byte and decoding
// only the head of each answer (the nextUri comes before the data).
type benchClient struct {
	http *http.Client
}

// newBenchClient keeps up to conns connections per host. With gzip the
// client asks for compressed answers, as presto-go-client (Go's transport)
// and the JVM clients do.
func newBenchClient(conns int, gzip bool) *benchClient {
	return &benchClient{http: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: conns,
		DisableCompression:  !gzip,
		IdleConnTimeout:     time.Minute,
	}}}
}

func (c *benchClient) close() { c.http.CloseIdleConnections() }

// statement runs sql through base and returns the bytes of the answers'
// bodies (after decompression).
func (c *benchClient) statement(base, sql string) (int64, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		return 0, err
	}
	var total int64
	for {
		req.Header.Set("X-Trino-User", "bench")
		next, n, err := c.do(req)
		total += n
		if err != nil || next == "" {
			return total, err
		}
		if !strings.HasPrefix(next, base+"/") {
			return total, fmt.Errorf("nextUri %q leaves %s", next, base)
		}
		if req, err = http.NewRequest(http.MethodGet, next, nil); err != nil {
			return total, err
		}
	}
}

var nextURIKey = []byte(`"nextUri":"`)

// headBytes is how much of an answer is searched for its nextUri.
const headBytes = 8 << 10

func (c *benchClient) do(req *http.Request) (next string, n int64, err error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	var head [headBytes]byte
	m, err := io.ReadFull(resp.Body, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", int64(m), err
	}
	if resp.StatusCode != http.StatusOK {
		return "", int64(m), fmt.Errorf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, head[:m])
	}
	rest, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return "", int64(m) + rest, err
	}
	h := head[:m]
	if bytes.Contains(h, []byte(`"error":{`)) {
		return "", int64(m) + rest, fmt.Errorf("statement failed: %s", h)
	}
	i := bytes.Index(h, nextURIKey)
	if i < 0 {
		return "", int64(m) + rest, nil
	}
	start := i + len(nextURIKey) - 1
	end := bytes.IndexByte(h[start+1:], '"')
	if end < 0 {
		return "", int64(m) + rest, errors.New("nextUri beyond the head of the answer")
	}
	if err := json.Unmarshal(h[start:start+end+2], &next); err != nil {
		return "", int64(m) + rest, err
	}
	return next, int64(m) + rest, nil
}

// smallStatement is the statement of the round-trip and throughput
// benchmarks: 10 rows of one bigint, answered in one page after the queued
// answers to the POST and to the first GET, which dispatches it (the
// client makes that GET through the gateway too, except under the former
// rule, BenchmarkGatewaySubmissionRule's "every" one: see dispatchChecks).
const smallStatement = "SELECT * FROM rows(10)"

// BenchmarkGatewayRoundTrip is the latency a proxy adds: one statement
// (POST, then GET of its pages) at a time, with a small result; p50-ns and
// p99-ns are the percentiles of the statements' durations.
func BenchmarkGatewayRoundTrip(b *testing.B) {
	rig := newBenchRig(b, coordinator.Options{})
	for _, path := range paths {
		b.Run("path="+path, func(b *testing.B) {
			c := newBenchClient(4, true)
			defer c.close()
			base := rig.base(path)
			if _, err := c.statement(base, smallStatement); err != nil { // a warm connection
				b.Fatal(err)
			}
			durations := make([]time.Duration, 0, b.N)
			var mallocs float64
			if path == "gateway" {
				mallocs = gatewayMetric(b, base, "go_memstats_mallocs_total")
			}
			from := rig.usageNow(b, path)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if _, err := c.statement(base, smallStatement); err != nil {
					b.Fatal(err)
				}
				durations = append(durations, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, durations)
			rig.reportUsage(b, path, from, len(durations))
			if path == "gateway" && len(durations) > 0 {
				// The metrics request itself allocates too: a few hundred
				// out of the thousands of statements.
				b.ReportMetric((gatewayMetric(b, base, "go_memstats_mallocs_total")-mallocs)/float64(len(durations)), "gateway-allocs/stmt")
			}
		})
	}
}

// BenchmarkGatewayAddedLatency is the latency each proxy adds, every path
// measured in the same moments: each iteration runs the small statement
// once on every path, in an order that turns by one each time, so that
// what the shared machine does meanwhile falls on all paths alike.
// (BenchmarkGatewayRoundTrip measures one path after the other, and a
// drift of the machine between two of them shows as latency one of them
// added.) It reports each path's p50 (<path>-p50-ns), what it adds to
// direct's (<path>-added-ns), the gateway's added p50 over nginx's
// (gateway-x-nginx) and over httputil.ReverseProxy's (gateway-x-goproxy),
// each proxy's CPU per statement (<path>-cpu-ns/stmt) and the gateway's
// over nginx's, goproxy's and gorelay's (gateway-cpu-x-nginx,
// gateway-cpu-x-goproxy, gateway-cpu-x-gorelay).
func BenchmarkGatewayAddedLatency(b *testing.B) {
	rig := newBenchRig(b, coordinator.Options{})
	clients := make([]*benchClient, len(paths))
	durations := make([][]time.Duration, len(paths))
	for i, path := range paths {
		clients[i] = newBenchClient(4, true)
		defer clients[i].close()
		if _, err := clients[i].statement(rig.base(path), smallStatement); err != nil { // a warm connection
			b.Fatal(err)
		}
	}
	from := make([]usage, len(paths))
	for i, path := range paths {
		from[i] = rig.usageNow(b, path)
	}
	turn := 0
	for b.Loop() {
		for j := range paths {
			i := (turn + j) % len(paths)
			start := time.Now()
			if _, err := clients[i].statement(rig.base(paths[i]), smallStatement); err != nil {
				b.Fatalf("path %s: %v", paths[i], err)
			}
			durations[i] = append(durations[i], time.Since(start))
		}
		turn++
	}
	b.StopTimer()
	p50 := make([]float64, len(paths))
	for i, path := range paths {
		slices.Sort(durations[i])
		p50[i] = float64(durations[i][len(durations[i])/2].Nanoseconds())
		b.ReportMetric(p50[i], path+"-p50-ns")
		if i > 0 {
			b.ReportMetric(p50[i]-p50[0], path+"-added-ns")
		}
	}
	gw, ngx, gp := slices.Index(paths, "gateway"), slices.Index(paths, "nginx"), slices.Index(paths, "goproxy")
	if added := p50[ngx] - p50[0]; added > 0 {
		b.ReportMetric((p50[gw]-p50[0])/added, "gateway-x-nginx")
	}
	if added := p50[gp] - p50[0]; added > 0 {
		b.ReportMetric((p50[gw]-p50[0])/added, "gateway-x-goproxy")
	}
	// CPU per statement of each proxy's processes, and the gateway's over
	// nginx's, goproxy's and gorelay's.
	cpu := make([]float64, len(paths))
	for i, path := range paths {
		if rig.pids(path) == nil || len(durations[i]) == 0 {
			continue
		}
		cpu[i] = float64((readUsage(b, rig.pids(path)).cpu - from[i].cpu).Nanoseconds()) / float64(len(durations[i]))
		b.ReportMetric(cpu[i], path+"-cpu-ns/stmt")
	}
	if cpu[ngx] > 0 {
		b.ReportMetric(cpu[gw]/cpu[ngx], "gateway-cpu-x-nginx")
	}
	if cpu[gp] > 0 {
		b.ReportMetric(cpu[gw]/cpu[gp], "gateway-cpu-x-goproxy")
	}
	if gr := slices.Index(paths, "gorelay"); cpu[gr] > 0 {
		b.ReportMetric(cpu[gw]/cpu[gr], "gateway-cpu-x-gorelay")
	}
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[min(len(d)-1, int(q*float64(len(d))))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// throughputClients is the number of concurrent clients of
// BenchmarkGatewayThroughput.
const throughputClients = 64

// BenchmarkGatewayThroughput is statements per second with 64 concurrent
// clients, each running the small statement over and over.
func BenchmarkGatewayThroughput(b *testing.B) {
	rig := newBenchRig(b, coordinator.Options{})
	for _, path := range paths {
		b.Run("path="+path, func(b *testing.B) {
			c := newBenchClient(2*throughputClients, true)
			defer c.close()
			base := rig.base(path)
			warm(b, c, base, throughputClients)
			procs := max(1, runtime.GOMAXPROCS(0))
			b.SetParallelism((throughputClients + procs - 1) / procs)
			from := rig.usageNow(b, path)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.statement(base, smallStatement); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "stmts/s")
			rig.reportUsage(b, path, from, b.N)
		})
	}
}

// warm opens n connections to base by running n statements at once.
func warm(b *testing.B, c *benchClient, base string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, err := c.statement(base, smallStatement); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// Streaming: one page of streamRows rows of streamRowBytes bytes (32 MiB
// of data in a page of about as many bytes).
const (
	streamRows     = 32
	streamRowBytes = 1 << 20
)

// BenchmarkGatewayStream is MB/s for a statement with one large page.
// The client asks for no compression: these pages (one letter repeated)
// compress about 1000:1, so with gzip the figure would be the
// compressor's, not the relay's.
func BenchmarkGatewayStream(b *testing.B) {
	rig := newBenchRig(b, coordinator.Options{BatchRows: streamRows})
	sql := fmt.Sprintf("SELECT * FROM bigrows(%d, %d)", streamRows, streamRowBytes)
	for _, path := range paths {
		b.Run("path="+path, func(b *testing.B) {
			c := newBenchClient(4, false)
			defer c.close()
			base := rig.base(path)
			n, err := c.statement(base, sql)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(n)
			b.ResetTimer()
			for b.Loop() {
				got, err := c.statement(base, sql)
				if err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("%d bytes, the first statement had %d", got, n)
				}
			}
		})
	}
}

// Memory: memQueries statements at once, each stuck in the middle of one
// large page: its client read the first memReadBytes of the page and then
// stopped reading, the slowest client there is.
const (
	memQueries   = 128
	memReadBytes = 64 << 10
	memSettle    = 500 * time.Millisecond
)

// BenchmarkGatewayMemory is what a proxy process holds per query in flight,
// for two page sizes: (resident set with memQueries stuck queries −
// resident set before) / memQueries, as rss-B/query; for the gateway also
// its Go heap in use (go_memstats_heap_inuse_bytes from /_zk/metrics), as
// heap-B/query. nginx's resident set is its master's and workers'.
func BenchmarkGatewayMemory(b *testing.B) {
	for _, page := range []int{32 << 20, 256 << 20} {
		rows := page / (32 << 20) * 8
		if rows == 0 {
			rows = 1
		}
		sql := fmt.Sprintf("SELECT * FROM bigrows(%d, %d)", rows, page/rows)
		b.Run(fmt.Sprintf("page=%dMiB", page>>20), func(b *testing.B) {
			rig := newBenchRig(b, coordinator.Options{BatchRows: rows, AbandonAfter: 10 * time.Second})
			for _, path := range []string{"gateway", "nginx"} {
				b.Run("path="+path, func(b *testing.B) {
					base := rig.base(path)
					pids := func() []int { return []int{rig.gw.cmd.Process.Pid} }
					if path == "nginx" {
						pids = rig.ngx.Pids
					}
					var rssSum, heapSum float64
					for b.Loop() {
						rss, heap := stuckQueries(b, base, sql, pids, path == "gateway")
						rssSum += rss
						heapSum += heap
					}
					b.ReportMetric(rssSum/float64(b.N), "rss-B/query")
					if path == "gateway" {
						b.ReportMetric(heapSum/float64(b.N), "heap-B/query")
					}
				})
			}
		})
	}
}

// stuckQueries runs memQueries statements through base, each stopped
// reading in its large page, and returns the growth of the processes'
// resident set and (withHeap) of the gateway's heap per query.
func stuckQueries(b *testing.B, base, sql string, pids func() []int, withHeap bool) (rss, heap float64) {
	b.Helper()
	c := newBenchClient(2*memQueries, false)
	defer c.close()
	// A first query, so that what a process allocates once is in the
	// baseline.
	warmPage(b, c, base, sql)
	time.Sleep(memSettle)
	rss0, heap0 := residentSet(b, pids()), 0.0
	if withHeap {
		heap0 = heapInuse(b, base)
	}
	var bodies []io.Closer
	defer func() {
		for _, body := range bodies {
			body.Close()
		}
	}()
	for range memQueries {
		bodies = append(bodies, openPage(b, c, base, sql))
	}
	time.Sleep(memSettle)
	rss1, heap1 := residentSet(b, pids()), 0.0
	if withHeap {
		heap1 = heapInuse(b, base)
	}
	return (rss1 - rss0) / memQueries, (heap1 - heap0) / memQueries
}

// openPage submits sql, GETs its first page, reads memReadBytes of it and
// returns its body, unread from there.
func openPage(b *testing.B, c *benchClient, base, sql string) io.Closer {
	b.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/statement", strings.NewReader(sql))
	req.Header.Set("X-Trino-User", "bench")
	next, _, err := c.do(req)
	if err != nil || next == "" {
		b.Fatalf("submit: %q, %v", next, err)
	}
	resp, err := c.http.Get(next)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, memReadBytes); err != nil || resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		b.Fatalf("page: %d, %v", resp.StatusCode, err)
	}
	return resp.Body
}

// warmPage has one query stop in its page and lets it go.
func warmPage(b *testing.B, c *benchClient, base, sql string) {
	b.Helper()
	openPage(b, c, base, sql).Close()
}

// residentSet is the sum of VmRSS over pids, in bytes.
func residentSet(b *testing.B, pids []int) float64 {
	b.Helper()
	var total float64
	for _, pid := range pids {
		file := fmt.Sprintf("/proc/%d/status", pid)
		read := statusValues(file, func(key, value string) {
			if key == "VmRSS" {
				kb, err := strconv.ParseFloat(strings.TrimSuffix(value, " kB"), 64)
				if err != nil {
					b.Fatalf("%s: VmRSS %q: %v", file, value, err)
				}
				total += kb * 1024
			}
		})
		if !read {
			b.Fatalf("%s cannot be read", file)
		}
	}
	return total
}

// heapInuse reads go_memstats_heap_inuse_bytes from the gateway's metrics.
func heapInuse(b *testing.B, base string) float64 {
	b.Helper()
	return gatewayMetric(b, base, "go_memstats_heap_inuse_bytes")
}

// gatewayMetric reads one of the gateway's metrics without labels.
func gatewayMetric(b *testing.B, base, name string) float64 {
	b.Helper()
	resp, err := plainClient.Get(base + "/_zk/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("no %s in %s/_zk/metrics", name, base)
	return 0
}

// memStatements is how many statements BenchmarkGatewayStatementsMemory
// runs per round, and memStatementClients how many clients run them.
const (
	memStatements       = 100_000
	memStatementClients = 8
)

// BenchmarkGatewayStatementsMemory is what a proxy process keeps after
// memStatements small statements, each read to its end: (resident set
// after − resident set before) per 100,000 statements, as
// rss-MiB/100k-statements, and for the gateway its Go heap in use, as
// heap-MiB/100k-statements. What a gateway keeps of a finished query
// (the query id → coordinator table, the drain's set) is bounded by count
// and by age; nginx keeps nothing of a finished request.
func BenchmarkGatewayStatementsMemory(b *testing.B) {
	rig := newBenchRig(b, coordinator.Options{})
	for _, path := range []string{"gateway", "nginx"} {
		b.Run("path="+path, func(b *testing.B) {
			base := rig.base(path)
			pids := func() []int { return []int{rig.gw.cmd.Process.Pid} }
			if path == "nginx" {
				pids = rig.ngx.Pids
			}
			c := newBenchClient(memStatementClients, false)
			defer c.close()
			if _, err := c.statement(base, smallStatement); err != nil {
				b.Fatal(err)
			}
			time.Sleep(memSettle)
			var rssSum, heapSum float64
			for b.Loop() {
				rss0, heap0 := residentSet(b, pids()), 0.0
				if path == "gateway" {
					heap0 = heapInuse(b, base)
				}
				runStatements(b, c, base, memStatements, memStatementClients)
				time.Sleep(memSettle)
				rss1, heap1 := residentSet(b, pids()), 0.0
				if path == "gateway" {
					heap1 = heapInuse(b, base)
				}
				rssSum += rss1 - rss0
				heapSum += heap1 - heap0
			}
			per := float64(b.N) * memStatements / 100_000 * (1 << 20)
			b.ReportMetric(rssSum/per, "rss-MiB/100k-statements")
			if path == "gateway" {
				b.ReportMetric(heapSum/per, "heap-MiB/100k-statements")
			}
		})
	}
}

// runStatements runs n small statements through base from clients
// clients at once, each read to its end.
func runStatements(b *testing.B, c *benchClient, base string, n, clients int) {
	b.Helper()
	var left atomic.Int64
	left.Store(int64(n))
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if _, err := c.statement(base, smallStatement); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
