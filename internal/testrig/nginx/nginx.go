// Package nginx runs nginx on the loopback interface as a plain streaming
// reverse proxy in front of one upstream, the floor any proxy is measured
// against (the gateway's benchmarks compare themselves with it).
//
// Start writes a minimal nginx.conf into a directory of its own: one
// upstream with keepalive connections, proxy_pass over HTTP/1.1,
// proxy_buffering and proxy_request_buffering off so that answers stream
// through as they come (as the gateway streams them), X-Forwarded-Proto,
// -Host and -Port naming the proxy (so that a coordinator honouring them
// builds its links on the proxy's address), no access log, the error log,
// pid file and temporary files in that directory. It starts
// "nginx -p dir -c conf" in the foreground (daemon off) on a free loopback
// port, waits until it answers, and Close stops it by its pid.
//
// The binary is $ZKPRESTO_NGINX, else nginx on PATH, else /usr/sbin/nginx
// (Debian's package; scripts/install-nginx.sh installs it).
package nginx

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/zkpresto/zkpresto/internal/childproc"
)

// BinaryEnv names the environment variable that, when set, is the nginx
// binary to run.
const BinaryEnv = "ZKPRESTO_NGINX"

// installHint tells a developer how to get nginx.
const installHint = "install it with scripts/install-nginx.sh (Debian package \"nginx\") or set " + BinaryEnv

// debianBinary is where Debian's nginx package puts the binary (not on the
// PATH of ordinary users).
const debianBinary = "/usr/sbin/nginx"

// ReadyPath is answered 204 by nginx itself, without the upstream: Start
// polls it to know that nginx serves.
const ReadyPath = "/_testrig/nginx-ready"

// Defaults.
const (
	DefaultStartTimeout = 10 * time.Second
	DefaultStopTimeout  = 5 * time.Second
	startAttempts       = 5
)

// Options configure a proxy.
type Options struct {
	// Upstream is the host:port nginx proxies every request to; required.
	Upstream string
	// Dir holds nginx.conf, the pid file, the error log and temporary
	// files; empty means a new temporary directory, removed by Close.
	Dir string
	// Workers is worker_processes; 0 means "auto", one worker per core.
	// The default gives nginx the cores a Go server gets (GOMAXPROCS is
	// the number of cores too), so that neither side of a comparison is
	// held to fewer cores than the other.
	Workers int
	// StartTimeout bounds how long Start waits for nginx to answer;
	// default DefaultStartTimeout.
	StartTimeout time.Duration
}

// Proxy is a running nginx.
type Proxy struct {
	dir     string
	ownsDir bool
	addr    string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the master process has exited
	waitErr error         // set before exited is closed
}

// Available reports whether nginx can be started here: nil when the binary
// is found, else an error that says how to install it.
func Available() error {
	if _, err := binary(); err != nil {
		return fmt.Errorf("nginx: not available: %w; %s", err, installHint)
	}
	return nil
}

// binary finds the nginx binary.
func binary() (string, error) {
	if p := strings.TrimSpace(os.Getenv(BinaryEnv)); p != "" {
		if info, err := os.Stat(p); err != nil || info.IsDir() {
			return "", fmt.Errorf("%s=%s is not a file", BinaryEnv, p)
		}
		return p, nil
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if info, err := os.Stat(debianBinary); err == nil && !info.IsDir() {
		return debianBinary, nil
	}
	return "", errors.New("nginx not found on PATH or at " + debianBinary)
}

// Start starts nginx in front of opts.Upstream and waits until it answers.
// The caller must Close it.
func Start(opts Options) (*Proxy, error) {
	if opts.Upstream == "" {
		return nil, errors.New("nginx: Options.Upstream is required")
	}
	if _, _, err := net.SplitHostPort(opts.Upstream); err != nil {
		return nil, fmt.Errorf("nginx: upstream %q: %w", opts.Upstream, err)
	}
	if err := platformSupported(); err != nil {
		return nil, err
	}
	bin, err := binary()
	if err != nil {
		return nil, fmt.Errorf("nginx: %w; %s", err, installHint)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	dir, ownsDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "testrig-nginx-"); err != nil {
			return nil, fmt.Errorf("nginx: %w", err)
		}
		ownsDir = true
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	// Another process may take the free port between the pick and nginx's
	// bind: try again with a fresh one.
	var errs []error
	for range startAttempts {
		p, err := start(bin, dir, opts)
		if err == nil {
			p.ownsDir = ownsDir
			return p, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if ownsDir {
		os.RemoveAll(dir)
	}
	return nil, errors.Join(errs...)
}

var errAddrInUse = errors.New("nginx: the port was taken")

func start(bin, dir string, opts Options) (*Proxy, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, Config(opts, addr, dir), 0o644); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	errorLog := filepath.Join(dir, "error.log")
	// -e: the error log nginx writes before it has read the config, which
	// otherwise is the package's path under /var/log.
	cmd := exec.Command(bin, "-p", dir+string(filepath.Separator), "-c", conf, "-e", errorLog)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A process group of its own (childproc), so that a master that will
	// not stop can be killed with its workers; the kernel's kill if the
	// test binary dies reaches the master only.
	cmd.SysProcAttr = childproc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nginx: start %s: %w", bin, err)
	}
	p := &Proxy{dir: dir, addr: addr, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(opts.StartTimeout)
	for {
		select {
		case <-p.exited:
			tail := p.ErrorLog() + out.String()
			if strings.Contains(tail, "Address already in use") {
				return nil, fmt.Errorf("%w: %s: %s", errAddrInUse, addr, lastLines(tail, 5))
			}
			return nil, fmt.Errorf("nginx: exited while starting (%v): %s", p.waitErr, lastLines(tail, 10))
		default:
		}
		resp, err := client.Get(p.URL() + ReadyPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("nginx: not answering on %s after %v: %v; error log: %s", addr, opts.StartTimeout, err, lastLines(p.ErrorLog(), 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var confTemplate = template.Must(template.New("nginx.conf").Parse(`# Written by the test rig: a plain streaming reverse proxy to one upstream.
daemon off;
{{- if .User}}
user {{.User}};
{{- end}}
worker_processes {{.Workers}};
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log warn;

events {
    worker_connections 4096;
}

http {
    access_log off;
    client_body_temp_path {{.Dir}}/client_body;
    proxy_temp_path {{.Dir}}/proxy;
    fastcgi_temp_path {{.Dir}}/fastcgi;
    uwsgi_temp_path {{.Dir}}/uwsgi;
    scgi_temp_path {{.Dir}}/scgi;
    keepalive_requests 1000000;
    client_max_body_size 16m;
    large_client_header_buffers 8 64k;

    upstream upstream {
        server {{.Upstream}};
        keepalive 128;
        keepalive_requests 1000000;
    }

    server {
        listen {{.Listen}};

        location = {{.ReadyPath}} {
            return 204;
        }

        location / {
            proxy_pass http://upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $host;
            proxy_set_header X-Forwarded-Port $server_port;
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 300s;
            proxy_send_timeout 300s;
        }
    }
}
`))

// Config returns the nginx.conf Start writes for opts, nginx listening on
// listen and keeping its files in dir.
func Config(opts Options, listen, dir string) []byte {
	workers := "auto"
	if opts.Workers > 0 {
		workers = strconv.Itoa(opts.Workers)
	}
	user := ""
	if os.Geteuid() == 0 {
		// Workers would otherwise run as nobody, who cannot enter a
		// private temporary directory.
		user = "root"
	}
	var b bytes.Buffer
	err := confTemplate.Execute(&b, map[string]string{
		"User": user, "Workers": workers, "Dir": dir, "Upstream": opts.Upstream,
		"Listen": listen, "ReadyPath": ReadyPath,
	})
	if err != nil {
		panic(err) // the template and its data are fixed
	}
	return b.Bytes()
}

// Addr is the host:port nginx listens on.
func (p *Proxy) Addr() string { return p.addr }

// URL is "http://" + Addr().
func (p *Proxy) URL() string { return "http://" + p.addr }

// Dir is the directory of the config, logs and pid file.
func (p *Proxy) Dir() string { return p.dir }

// Pid is the master process's pid.
func (p *Proxy) Pid() int { return p.cmd.Process.Pid }

// Pids are the master's and its workers' pids, read from /proc.
func (p *Proxy) Pids() []int {
	pids := []int{p.Pid()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.Pid(), p.Pid()))
	if err != nil {
		return pids
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ErrorLog returns nginx's error log so far.
func (p *Proxy) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "error.log"))
	return string(b)
}

// Close stops nginx (a fast shutdown: open connections are closed) and
// removes the directory Start created.
func (p *Proxy) Close() error {
	err := p.stop()
	if p.ownsDir {
		if rerr := os.RemoveAll(p.dir); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// stop sends the master SIGTERM, which ends its workers and then itself;
// if it is still there after DefaultStopTimeout, its process group (the
// master's pid: sysProcAttr gives it a group of its own) is killed.
func (p *Proxy) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		<-p.exited
		return nil
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(DefaultStopTimeout):
	}
	killGroup(p.cmd.Process.Pid)
	<-p.exited
	return fmt.Errorf("nginx: pid %d did not stop within %v of SIGTERM; killed", p.Pid(), DefaultStopTimeout)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("nginx: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// platformSupported reports whether the rig runs here.
func platformSupported() error {
	if runtime.GOOS == "windows" {
		return errors.New("nginx: the test rig runs on Unix systems only")
	}
	return nil
}
