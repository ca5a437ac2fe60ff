// Package zkserver starts real Apache ZooKeeper servers, standalone or as an
// ensemble, on free loopback ports in temporary directories, for tests
// against the real thing, including crashes, restarts, leader changes and
// stalls.
//
// It needs java and the ZooKeeper jars: Debian's "zookeeper" package
// (apt-get install zookeeper), or the jars of another installation named by
// ZKPRESTO_ZOOKEEPER_CLASSPATH. Available says whether they are present,
// and what to install when they are not.
// The ZooKeeper log of each server goes to a file in its temporary directory
// so test output stays clean; LogTail returns its end for failure messages.
package zkserver

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkpresto/zkpresto/internal/childproc"
)

const (
	defaultStartTimeout = 30 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
	// maxStartAttempts bounds the retries after losing a port race.
	maxStartAttempts = 5
	pollInterval     = 50 * time.Millisecond
	// errorTailLines is how much of the server log start errors carry.
	errorTailLines = 30
	// logTailWindow is the most logSince reads, as childproc.LogTail does.
	logTailWindow = 256 << 10
	tickTime      = 500 * time.Millisecond
)

// jvmFlags keep each server small and its startup fast.
var jvmFlags = []string{
	"-Xmx256m",
	"-XX:+UseSerialGC",
	// The quick compiler alone starts faster and burns less CPU, which
	// matters when many test packages start servers at once.
	"-XX:TieredStopAtLevel=1",
	"-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	"-Dzookeeper.jmx.log4j.disable=true",
	// Elections back off up to 60s between rounds by default; members
	// whose JVMs start a few seconds apart would then wait needlessly.
	"-Dzookeeper.fastleader.maxNotificationInterval=1000",
}

// log4jConfig sends ZooKeeper's log to stdout, which the harness redirects
// to the server's log file, so one file holds both log lines and anything
// the JVM itself prints.
const log4jConfig = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
`

// errExitedEarly marks a server process that died before it became ready.
var errExitedEarly = errors.New("zkserver: ZooKeeper exited before it was ready")

// errBindFailed marks an early exit caused by a port that another process
// took after we picked it; starting again on fresh ports fixes it.
var errBindFailed = errors.New("zkserver: ZooKeeper could not bind its ports")

// Options configures a server or ensemble.
type Options struct {
	// Dir is the parent of the temporary directories; "" means the
	// system default.
	Dir string
	// ExtraConfig holds extra zoo.cfg lines, for example TLS or
	// authentication settings. Later lines override earlier ones, so these
	// may also replace the harness defaults such as tickTime.
	ExtraConfig []string
	// StartTimeout bounds how long Start, StartEnsemble and Restart wait
	// for readiness, retries included; zero means 30s.
	StartTimeout time.Duration

	// pickPorts returns n free loopback ports; tests set it to simulate
	// losing a port race. nil means freePorts.
	pickPorts func(n int) ([]int, error)
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = defaultStartTimeout
	}
	if o.pickPorts == nil {
		o.pickPorts = freePorts
	}
	return o
}

// Server is one ZooKeeper process with its own temporary directory. Its
// methods are safe for concurrent use; lifecycle methods (Stop, Kill,
// Restart, Pause, Resume, Close) run one at a time.
type Server struct {
	opts      Options
	id        int // myid within an ensemble; 0 for a standalone server
	dir       string
	dataDir   string
	cfgPath   string
	logPath   string
	log4jPath string
	// clientPort and standalone are fixed once the server is handed out.
	clientPort int
	standalone bool

	mu     sync.Mutex
	proc   *process // nil when no process was started or it was stopped
	paused bool
	closed bool
}

// process is one run of the JVM.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // exit status; read only after done is closed
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start starts a standalone ZooKeeper server on a free loopback port and
// waits until it serves requests. The caller must Close it.
func Start(opts Options) (*Server, error) {
	return startWithRetries(opts, startStandaloneOnce)
}

// startWithRetries calls once, which starts servers on fresh ports, until it
// succeeds, fails other than by losing a port race, or runs out of attempts
// or of opts.StartTimeout.
func startWithRetries[T any](opts Options, once func(opts Options, deadline time.Time) (T, error)) (T, error) {
	var zero T
	if err := Available(); err != nil {
		return zero, err
	}
	opts = opts.withDefaults()
	deadline := time.Now().Add(opts.StartTimeout)
	var lastErr error
	for attempt := 1; attempt <= maxStartAttempts; attempt++ {
		started, err := once(opts, deadline)
		if err == nil {
			return started, nil
		}
		lastErr = err
		if !errors.Is(err, errBindFailed) || time.Now().After(deadline) {
			break
		}
	}
	return zero, lastErr
}

func startStandaloneOnce(opts Options, deadline time.Time) (*Server, error) {
	ports, err := opts.pickPorts(1)
	if err != nil {
		return nil, err
	}
	s, err := newServer(opts, 0, ports[0], nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	err = s.launchAndWait(deadline)
	s.mu.Unlock()
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// peer is one ensemble member as zoo.cfg describes it.
type peer struct {
	id                       int
	quorumPort, electionPort int
}

// newServer prepares the directory, data directory and configuration of a
// server without starting it. peers is nil for a standalone server.
func newServer(opts Options, id, clientPort int, peers []peer) (*Server, error) {
	dir, err := os.MkdirTemp(opts.Dir, "zkserver-")
	if err != nil {
		return nil, fmt.Errorf("zkserver: create temp dir: %w", err)
	}
	s := &Server{
		opts:       opts,
		id:         id,
		dir:        dir,
		dataDir:    filepath.Join(dir, "data"),
		cfgPath:    filepath.Join(dir, "zoo.cfg"),
		logPath:    filepath.Join(dir, "zookeeper.log"),
		log4jPath:  filepath.Join(dir, "log4j.properties"),
		clientPort: clientPort,
		standalone: len(peers) == 0,
	}
	if err := s.writeFiles(peers); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) writeFiles(peers []peer) error {
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return fmt.Errorf("zkserver: create data dir: %w", err)
	}
	if err := os.WriteFile(s.log4jPath, []byte(log4jConfig), 0o644); err != nil {
		return fmt.Errorf("zkserver: write log4j config: %w", err)
	}
	cfg := []string{
		"tickTime=" + strconv.Itoa(int(tickTime/time.Millisecond)),
		"dataDir=" + s.dataDir,
		"clientPort=" + strconv.Itoa(s.clientPort),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		// Throwaway servers need no fsync per write: it only adds disk
		// latency (milliseconds on a shared machine) to every test and
		// benchmark, and a killed process still leaves its writes in the
		// page cache for Restart.
		"forceSync=no",
	}
	if len(peers) > 0 {
		cfg = append(cfg, "initLimit=10", "syncLimit=5")
		for _, p := range peers {
			cfg = append(cfg, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", p.id, p.quorumPort, p.electionPort))
		}
		myid := []byte(strconv.Itoa(s.id) + "\n")
		if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), myid, 0o644); err != nil {
			return fmt.Errorf("zkserver: write myid: %w", err)
		}
	}
	cfg = append(cfg, s.opts.ExtraConfig...)
	if err := os.WriteFile(s.cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("zkserver: write zoo.cfg: %w", err)
	}
	return nil
}

// Addr returns the client address, "127.0.0.1:port".
func (s *Server) Addr() string {
	return "127.0.0.1:" + strconv.Itoa(s.clientPort)
}

// launchAndWait starts the JVM and waits until it is ready. s.mu must be held.
func (s *Server) launchAndWait(deadline time.Time) error {
	p, logStart, err := s.launch()
	if err != nil {
		return err
	}
	s.proc = p
	return s.waitReady(p, logStart, deadline)
}

// launch starts the JVM and returns it with the log size before the start,
// so failures can look at this run's log lines only. s.mu must be held.
func (s *Server) launch() (*process, int64, error) {
	java, err := javaPath()
	if err != nil {
		return nil, 0, fmt.Errorf("zkserver: %w", err)
	}
	cp, err := classpath()
	if err != nil {
		return nil, 0, fmt.Errorf("zkserver: %w", err)
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("zkserver: open log: %w", err)
	}
	// The child keeps its own copy of the descriptor.
	defer logFile.Close()
	info, err := logFile.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("zkserver: stat log: %w", err)
	}
	logStart := info.Size()

	log4jURL := (&url.URL{Scheme: "file", Path: s.log4jPath}).String()
	args := append([]string{}, jvmFlags...)
	args = append(args,
		"-Dlog4j.configuration="+log4jURL,
		"-cp", cp,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain",
		s.cfgPath,
	)
	cmd := exec.Command(java, args...)
	cmd.Dir = s.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childproc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("zkserver: start java: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, logStart, nil
}

// waitReady polls until the server answers ruok (and, for a standalone
// server, reports its mode, meaning it serves requests), the process exits,
// or the deadline passes. Ensemble members only need ruok here because they
// cannot serve before a quorum forms; the ensemble waits for that itself.
func (s *Server) waitReady(p *process, logStart int64, deadline time.Time) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-p.done:
			return s.earlyExitError(p, logStart)
		case <-timer.C:
		}
		if s.ready() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zkserver: %s not ready after %v; log tail:\n%s",
				s.Addr(), s.opts.StartTimeout, s.LogTail(errorTailLines))
		}
		timer.Reset(pollInterval)
	}
}

func (s *Server) ready() bool {
	reply, err := fourLetter(s.Addr(), "ruok", fourLetterTimeout)
	if err != nil || reply != "imok" {
		return false
	}
	if !s.standalone {
		return true
	}
	_, err = s.Mode()
	return err == nil
}

// earlyExitError describes a process that died while starting, marking it
// with errBindFailed when its log shows a port conflict.
func (s *Server) earlyExitError(p *process, logStart int64) error {
	kind := errExitedEarly
	if bindFailed(s.logSince(logStart)) {
		kind = errBindFailed
	}
	return fmt.Errorf("%w (%s, %v); log tail:\n%s", kind, s.Addr(), p.err, s.LogTail(errorTailLines))
}

func bindFailed(log string) bool {
	return strings.Contains(log, "Address already in use") ||
		strings.Contains(log, "BindException")
}

// logSince returns the log written from offset on, at most logTailWindow bytes.
func (s *Server) logSince(offset int64) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, offset, logTailWindow))
	if err != nil {
		return ""
	}
	return string(data)
}

// LogTail returns the last n lines of the server log (all runs of this
// server, oldest first), or "" when there is none.
func (s *Server) LogTail(n int) string {
	tail, _ := childproc.LogTail(s.logPath, n)
	return tail
}

// Mode returns "standalone", "leader" or "follower" as the server's srvr
// command reports it. It fails when the server is down, paused, or not
// serving (an ensemble member without quorum).
func (s *Server) Mode() (string, error) {
	reply, err := fourLetter(s.Addr(), "srvr", fourLetterTimeout)
	if err != nil {
		return "", err
	}
	mode, err := parseMode(reply)
	if err != nil {
		return "", fmt.Errorf("%w (server %s)", err, s.Addr())
	}
	return mode, nil
}

// Stop stops the server gracefully: SIGTERM, then SIGKILL if it has not
// exited within a grace period. It waits for the exit and does nothing when
// the server is not running.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *Server) stopLocked() error {
	p := s.proc
	if p == nil {
		return nil
	}
	s.proc, s.paused = nil, false
	if p.exited() {
		return nil
	}
	// A stopped JVM cannot act on SIGTERM until it runs again.
	_ = resumeProcess(p.cmd.Process)
	if err := childproc.Terminate(p.cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return errors.Join(fmt.Errorf("zkserver: stop %s: %w", s.Addr(), err), killAndWait(p))
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-p.done:
		return nil
	case <-grace.C:
		return killAndWait(p)
	}
}

// Kill crashes the server with SIGKILL and waits for it to exit. It does
// nothing when the server is not running.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return nil
	}
	s.proc, s.paused = nil, false
	return killAndWait(p)
}

func killAndWait(p *process) error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("zkserver: kill pid %d: %w", p.cmd.Process.Pid, err)
	}
	<-p.done
	return nil
}

// Restart stops the server if it runs, then starts it again on the same
// ports and data directory and waits until it answers. A standalone server
// is then serving; an ensemble member may still be rejoining, which
// Ensemble.WaitLeader waits for.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("zkserver: restart %s: server is closed", s.Addr())
	}
	if err := s.stopLocked(); err != nil {
		return err
	}
	if err := s.launchAndWait(time.Now().Add(s.opts.StartTimeout)); err != nil {
		return fmt.Errorf("zkserver: restart: %w", err)
	}
	return nil
}

// Pause freezes the server with SIGSTOP: connections stay open but nothing
// is answered, as in a long GC pause or a hung host. Use it to make client
// sessions time out.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return fmt.Errorf("zkserver: pause %s: server is not running", s.Addr())
	}
	if err := pauseProcess(s.proc.cmd.Process); err != nil {
		return fmt.Errorf("zkserver: pause %s: %w", s.Addr(), err)
	}
	s.paused = true
	return nil
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return fmt.Errorf("zkserver: resume %s: server is not running", s.Addr())
	}
	if err := resumeProcess(s.proc.cmd.Process); err != nil {
		return fmt.Errorf("zkserver: resume %s: %w", s.Addr(), err)
	}
	s.paused = false
	return nil
}

// running reports whether the process is up and not paused, that is,
// whether it is expected to answer.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited() && !s.paused
}

// Close stops the server and removes its temporary directory, log
// included. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.stopLocked()
	if s.closed {
		return err
	}
	s.closed = true
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("zkserver: remove %s: %w", s.dir, rmErr))
	}
	return err
}
