// Package realserver starts real Trino and PrestoDB coordinators for
// integration tests: single-node servers (the coordinator schedules work on
// itself) on a free loopback port, with the tpch, memory and blackhole
// catalogs, a small heap and a data directory of their own, stopped by
// Close.
//
// The servers are not installed by this package: scripts/fetch-real-servers.sh
// resolves them through Maven into a cache (ZKPRESTO_REAL_SERVERS, by default
// ~/.cache/zkpresto/real-servers) with the Java each needs recorded beside
// it; Start reads that cache and says how to fill it when it is empty. A
// server takes tens of seconds to start on two cores, so a test binary
// starts its servers once (in TestMain) and shares them.
//
// Start returns only when the server has run a statement: /v1/info says it
// is no longer starting, and a count of tpch.tiny.region, which needs the
// coordinator to schedule work on itself, has finished. A server that is not
// ready within Options.StartTimeout is killed, and the error carries the
// tail of its log.
package realserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkpresto/zkpresto/internal/childproc"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Versions of the servers scripts/fetch-real-servers.sh fetches.
const (
	TrinoVersion  = "476"
	PrestoVersion = "0.287"
)

// Options say which server to start and how.
type Options struct {
	// Flavour is coordinator.Trino or coordinator.Presto (PrestoDB).
	Flavour coordinator.Flavour
	// Name is the node id (node.id), default "coordinator"; it also names
	// the server in errors.
	Name string
	// Config holds extra config.properties entries, which replace the
	// defaults of the same key.
	Config map[string]string
	// Files are extra files under the server's etc directory, by path
	// relative to it (for example "resource-groups.json" or
	// "resource-groups.properties"); "etc/" in a Config value is replaced
	// by the etc directory's path.
	Files map[string]string
	// NoWorkers starts a coordinator that does not schedule work on itself
	// (node-scheduler.include-coordinator=false) and that no worker joins,
	// as one whose workers are all gone; it is ready once /v1/info says it
	// has started, since no query can run.
	NoWorkers bool
	// HTTPSKeyStore, when set, is the absolute path of a PEM file holding
	// a private key and then its certificate (valid for 127.0.0.1, as
	// testtls.Files.ServerKeyStore): the server then also serves https on
	// a port of its own (Server.HTTPSURL), beside its http port.
	HTTPSKeyStore string
	// Passwords, when set, turns on password authentication
	// (http-server.authentication.type=PASSWORD) with the file
	// authenticator of the password-authenticators plugin, whose password
	// file holds these users and passwords (hashed); Query then runs as
	// the first user over https. Both servers check passwords only on
	// https (HTTPSKeyStore). Over http, Trino with https on refuses all
	// authentication (403), Trino without https refuses a password (401)
	// and takes a user without one, and PrestoDB 0.287 checks nothing.
	Passwords map[string]string
	// JWT, when set, turns on access-token authentication
	// (http-server.authentication.type=JWT) with its public key; Trino
	// only, with HTTPSKeyStore (Trino checks tokens on https only), and
	// not with Passwords. Query then runs over https as JWT.User with
	// JWT.Token.
	JWT *JWT
	// OAuth2, when set, turns on OAuth2 authentication with its identity
	// provider (Trino only, and with HTTPSKeyStore: Trino authenticates
	// only on https). The http port keeps taking a user without
	// credentials (allow-insecure-over-http), which Query and the
	// readiness check use.
	OAuth2 *OAuth2
	// TimeZone is the JVM's zone (user.timezone), the session zone of a
	// statement that names none; default the machine's.
	TimeZone string
	// HeapMB is the JVM's maximum heap, default 1024.
	HeapMB int
	// StartTimeout bounds the start, default 4 minutes.
	StartTimeout time.Duration
	// Cache is the directory scripts/fetch-real-servers.sh filled; default
	// $ZKPRESTO_REAL_SERVERS, else ~/.cache/zkpresto/real-servers.
	Cache string
}

// JWT is how a Trino coordinator checks access tokens (Options.JWT).
type JWT struct {
	// KeyFile is the absolute path of the PEM public key that signs the
	// tokens the coordinator takes
	// (http-server.authentication.jwt.key-file; testjwt.Key.PublicKeyFile).
	KeyFile string
	// User and Token are who the kit's own statements (Server.Query) run
	// as and the token, signed by KeyFile's key, that says so.
	User, Token string
}

// Server is a running coordinator. Its methods are safe for concurrent use.
type Server struct {
	flavour coordinator.Flavour
	name    string
	version string
	port    int
	// httpsPort is the https port, 0 without Options.HTTPSKeyStore.
	httpsPort int
	// check, when set, is how the kit's own statements (Query) reach a
	// server with Options.Passwords; nil: QueryAt's way, http as "test".
	check *checker
	dir   string
	log   string
	// environment is node.environment, unique to this start.
	environment string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Cache returns the directory the servers are read from: $ZKPRESTO_REAL_SERVERS,
// else ~/.cache/zkpresto/real-servers (under $XDG_CACHE_HOME when set).
func Cache() string {
	if d := os.Getenv("ZKPRESTO_REAL_SERVERS"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "zkpresto", "real-servers")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "zkpresto", "real-servers")
}

// install is one fetched server: its jars, plugins and the JVM to run it.
type install struct {
	dir, javaHome, mainClass, version string
}

func findInstall(cache string, flavour coordinator.Flavour) (install, error) {
	var name string
	switch flavour {
	case coordinator.Trino:
		name = "trino-" + TrinoVersion
	case coordinator.Presto:
		name = "presto-" + PrestoVersion
	default:
		return install{}, fmt.Errorf("realserver: unknown flavour %q (want %q or %q)", flavour, coordinator.Trino, coordinator.Presto)
	}
	dir := filepath.Join(cache, name)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return install{}, fmt.Errorf("realserver: %s is not in %s: run scripts/fetch-real-servers.sh (make test-deps does)", name, cache)
	}
	read := func(f string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("realserver: %s: %w (run scripts/fetch-real-servers.sh again)", name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	in := install{dir: dir}
	var err error
	if in.javaHome, err = read("java-home"); err != nil {
		return install{}, err
	}
	if in.mainClass, err = read("main-class"); err != nil {
		return install{}, err
	}
	if in.version, err = read("version"); err != nil {
		return install{}, err
	}
	if _, err := os.Stat(filepath.Join(in.javaHome, "bin", "java")); err != nil {
		return install{}, fmt.Errorf("realserver: %s: the Java it was fetched for is gone (%v): run scripts/fetch-real-servers.sh again", name, err)
	}
	return in, nil
}

// Available reports whether a server of the flavour can be started here,
// and if not, why.
func Available(flavour coordinator.Flavour) error {
	_, err := findInstall(Cache(), flavour)
	return err
}

// jvmOpens are the packages PrestoDB 0.287's libraries reach into (Guice's
// cglib, Airlift's bytecode, Netty): Java 17 refuses them unless opened.
var jvmOpens = []string{
	"java.lang", "java.lang.reflect", "java.lang.invoke", "java.util",
	"java.util.concurrent", "java.util.concurrent.atomic", "java.io",
	"java.nio", "java.net", "sun.nio.ch", "jdk.internal.misc",
	"jdk.internal.ref", "sun.security.action",
}

// Start starts a server and returns once it has run a statement.
func Start(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := checkOAuth2(opts); err != nil {
		return nil, err
	}
	in, err := findInstall(opts.Cache, opts.Flavour)
	if err != nil {
		return nil, err
	}
	if err := checkPasswordPlugin(in, opts); err != nil {
		return nil, err
	}
	// A port another process takes between FreePort and the bind is the
	// one start failure worth a second try.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(opts, in)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

// withDefaults fills the zero values of opts.
func (opts Options) withDefaults() Options {
	if opts.Name == "" {
		opts.Name = "coordinator"
	}
	if opts.HeapMB == 0 {
		opts.HeapMB = 1024
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 4 * time.Minute
	}
	if opts.Cache == "" {
		opts.Cache = Cache()
	}
	return opts
}

var errPortTaken = errors.New("port taken")

// starts numbers the servers this process starts, for an environment name
// of each one's own: readiness is only believed from the server that
// carries it, never from whatever else answers on a port taken meanwhile.
var starts atomic.Int64

// readyCheck is the statement a server must have run to be ready: it
// needs a worker, so it fails until the coordinator schedules on itself.
const readyCheck = "SELECT count(*) FROM tpch.tiny.region"

// launch starts a server's process and returns at once.
func launch(opts Options, in install) (*Server, error) {
	port, err := zkserver.FreePort()
	if err != nil {
		return nil, fmt.Errorf("realserver: %s: %w", opts.Name, err)
	}
	httpsPort := 0
	if opts.HTTPSKeyStore != "" {
		if httpsPort, err = zkserver.FreePort(); err != nil {
			return nil, fmt.Errorf("realserver: %s: %w", opts.Name, err)
		}
	}
	dir, err := os.MkdirTemp("", "zkpresto-"+string(opts.Flavour)+"-")
	if err != nil {
		return nil, fmt.Errorf("realserver: %s: %w", opts.Name, err)
	}
	s := &Server{
		flavour: opts.Flavour, name: opts.Name, version: in.version, port: port, httpsPort: httpsPort,
		dir: dir, log: filepath.Join(dir, "server.log"), done: make(chan struct{}),
		environment: fmt.Sprintf("zkpresto_%d_%d", os.Getpid(), starts.Add(1)),
	}
	if s.check, err = newChecker(opts); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	etc := filepath.Join(dir, "etc")
	if err := s.writeEtc(etc, opts); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	args := []string{
		fmt.Sprintf("-Xmx%dm", opts.HeapMB), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-XX:+ExitOnOutOfMemoryError", "-Djdk.attach.allowAttachSelf=true",
		"-Dconfig=" + filepath.Join(etc, "config.properties"),
		"-Dlog.levels-file=" + filepath.Join(etc, "log.properties"),
		"-Dnode.environment=" + s.environment, "-Dnode.id=" + opts.Name,
		"-Dnode.data-dir=" + filepath.Join(dir, "data"),
		"-Dcatalog.config-dir=" + filepath.Join(etc, "catalog"),
		"-Dplugin.dir=" + filepath.Join(in.dir, "plugin"),
	}
	if opts.TimeZone != "" {
		args = append(args, "-Duser.timezone="+opts.TimeZone)
	}
	if opts.Flavour == coordinator.Presto {
		for _, p := range jvmOpens {
			args = append(args, "--add-opens=java.base/"+p+"=ALL-UNNAMED")
		}
	}
	args = append(args, "-cp", filepath.Join(in.dir, "lib", "*"), in.mainClass)
	logf, err := os.Create(s.log)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("realserver: %s: %w", opts.Name, err)
	}
	cmd := exec.Command(filepath.Join(in.javaHome, "bin", "java"), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childproc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("realserver: %s: starting java: %w", opts.Name, err)
	}
	s.cmd = cmd
	go func() {
		err := cmd.Wait()
		_ = logf.Close()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	}()
	return s, nil
}

func start(opts Options, in install) (*Server, error) {
	s, err := launch(opts, in)
	if err != nil {
		return nil, err
	}
	if err := s.awaitReady(opts); err != nil {
		return nil, err
	}
	return s, nil
}

// awaitReady waits for a launched server as Start does: one that is not
// ready in time is killed and its directory removed, and the error says
// whether its port was taken.
func (s *Server) awaitReady(opts Options) error {
	if err := s.waitReady(opts.StartTimeout, !opts.NoWorkers); err != nil {
		tail := s.LogTail(40)
		_ = s.Kill()
		// The bind failure is at the top of the log, under Guice's
		// legend, so the whole log is searched, not its tail.
		if whole, _ := os.ReadFile(s.log); bytes.Contains(whole, []byte("Address already in use")) || bytes.Contains(whole, []byte("BindException")) {
			_ = os.RemoveAll(s.dir)
			return fmt.Errorf("realserver: %s: %w: %w", opts.Name, errPortTaken, err)
		}
		_ = os.RemoveAll(s.dir)
		return fmt.Errorf("realserver: %s %s %s: %w; the log ends:\n%s", opts.Flavour, s.version, opts.Name, err, tail)
	}
	return nil
}

func (s *Server) writeEtc(etc string, opts Options) error {
	config := map[string]string{
		"coordinator":                        "true",
		"node-scheduler.include-coordinator": "true",
		"http-server.http.port":              strconv.Itoa(s.port),
		"discovery.uri":                      s.URL(),
		"query.max-memory":                   "256MB",
		"query.max-memory-per-node":          "256MB",
	}
	if opts.Flavour == coordinator.Presto {
		config["discovery-server.enabled"] = "true"
	}
	if opts.NoWorkers {
		config["node-scheduler.include-coordinator"] = "false"
	}
	files := map[string]string{}
	if err := s.secureEtc(opts, etc, config, files); err != nil {
		return err
	}
	for k, v := range opts.Config {
		config[k] = strings.ReplaceAll(v, "etc/", etc+"/")
	}
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, config[k])
	}
	files["config.properties"] = b.String()
	files["log.properties"] = "io.airlift=WARN\ncom.facebook.airlift=WARN\n"
	files["catalog/tpch.properties"] = "connector.name=tpch\n"
	files["catalog/memory.properties"] = "connector.name=memory\n"
	files["catalog/blackhole.properties"] = "connector.name=blackhole\n"
	for p, content := range opts.Files {
		if filepath.IsAbs(p) || strings.Contains(p, "..") {
			return fmt.Errorf("realserver: %s: file %q must be relative to etc", opts.Name, p)
		}
		files[p] = content
	}
	for p, content := range files {
		path := filepath.Join(etc, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("realserver: %s: %w", opts.Name, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("realserver: %s: %w", opts.Name, err)
		}
	}
	return nil
}

// waitReady waits for /v1/info to say the server has started, then for a
// scan of tpch to finish: a coordinator that has started may not yet have
// seen itself as a worker, and a query that needs one fails with
// NO_NODES_AVAILABLE (seen on Trino 476 after SELECT 1 had finished); without
// scan (Options.NoWorkers), once it has started.
func (s *Server) waitReady(timeout time.Duration, scan bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	var last error = errors.New("no answer yet")
	for {
		select {
		case <-s.done:
			return fmt.Errorf("the server exited before it was ready (%v)", s.exitErr())
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s (last: %v)", timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
		info, err := s.info(ctx, client)
		if err != nil {
			last = err
			continue
		}
		if info.Environment != s.environment {
			last = fmt.Errorf("another server answers on port %d (environment %q)", s.port, info.Environment)
			continue
		}
		if info.Starting {
			last = errors.New("/v1/info says starting")
			continue
		}
		if !scan {
			return nil
		}
		qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = s.Query(qctx, readyCheck)
		qcancel()
		if err == nil {
			select {
			case <-s.done:
				return fmt.Errorf("the server exited before it was ready (%v)", s.exitErr())
			default:
				return nil
			}
		}
		last = fmt.Errorf("%s: %w", readyCheck, err)
	}
}

func (s *Server) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// URL is the server's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Flavour is the server's flavour.
func (s *Server) Flavour() coordinator.Flavour { return s.flavour }

// Name is the server's node id.
func (s *Server) Name() string { return s.name }

// Version is the server's release, as fetched ("476", "0.287").
func (s *Server) Version() string { return s.version }

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	tail, err := childproc.LogTail(s.log, n)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return tail
}

// Exited is closed when the server's process has ended.
func (s *Server) Exited() <-chan struct{} { return s.done }

// Kill ends the server at once (SIGKILL), as a crash would, and waits for
// its process to end. Its directory stays until Close.
func (s *Server) Kill() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("realserver: %s: kill: %w", s.name, err)
	}
	<-s.done
	return nil
}

// Close stops the server (SIGTERM, then SIGKILL after 20 s) and removes its
// directory.
func (s *Server) Close() error {
	if s.check != nil {
		s.check.client.CloseIdleConnections()
	}
	select {
	case <-s.done:
	default:
		_ = childproc.Terminate(s.cmd.Process)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			_ = s.Kill()
		}
	}
	return os.RemoveAll(s.dir)
}
