package zkserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait on a condition in these tests.
const waitTimeout = 20 * time.Second

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// connect opens a client session and waits until it is established.
func connect(t *testing.T, servers ...string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatalf("zk.Connect(%v): %v", servers, err)
	}
	t.Cleanup(conn.Close)
	timeout := time.After(waitTimeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			t.Fatalf("no session with %v within %v", servers, waitTimeout)
		}
	}
}

// eventually retries f until it succeeds or waitTimeout passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, waitTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getData(conn *zk.Conn, path string) (string, error) {
	data, _, err := conn.Get(path)
	return string(data), err
}

func wantData(conn *zk.Conn, path, want string) func() error {
	return func() error {
		got, err := getData(conn, path)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("get %s = %q, want %q", path, got, want)
		}
		return nil
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reply   string
		want    string
		wantErr bool
	}{
		{reply: "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n", want: "follower"},
		{reply: "Mode: leader\n", want: "leader"},
		{reply: "Mode:standalone", want: "standalone"},
		{reply: "This ZooKeeper instance is not currently serving requests\n", wantErr: true},
		{reply: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseMode(tt.reply)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseMode(%q) = %q, %v; want %q, error %v", tt.reply, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFreePortsDistinctAndBindable(t *testing.T) {
	t.Parallel()
	first, err := freePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	second, err := freePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(first), second...)
	slices.Sort(all)
	if len(slices.Compact(all)) != 20 {
		t.Fatalf("ports repeat: %v %v", first, second)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", first[0]))
	if err != nil {
		t.Fatalf("port %d handed out but not bindable: %v", first[0], err)
	}
	_ = l.Close()
}

func TestAvailableReportsBadClasspathOverride(t *testing.T) {
	// Not parallel: it changes the environment.
	missing := t.TempDir() + "/missing.jar"
	t.Setenv(ClasspathEnv, missing)
	err := Available()
	if err == nil {
		t.Fatalf("Available() = nil with %s=%s", ClasspathEnv, missing)
	}
	for _, want := range []string{missing, "apt-get install zookeeper"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Available() = %q, want it to mention %q", err, want)
		}
	}
	if _, err := Start(Options{}); err == nil {
		t.Errorf("Start succeeded with a missing classpath")
	}
}

func TestStartEnsembleRejectsBadSize(t *testing.T) {
	t.Parallel()
	if _, err := StartEnsemble(0, Options{}); err == nil {
		t.Fatal("StartEnsemble(0) succeeded")
	}
}

func TestStandaloneServesClients(t *testing.T) {
	t.Parallel()
	s := StartT(t)
	if host, _, err := net.SplitHostPort(s.Addr()); err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr() = %q, want a 127.0.0.1 address", s.Addr())
	}
	mode, err := s.Mode()
	if err != nil || mode != "standalone" {
		t.Fatalf("Mode() = %q, %v; want standalone", mode, err)
	}
	conn := connect(t, s.Addr())
	if _, err := conn.Create("/harness", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := wantData(conn, "/harness", "hello")(); err != nil {
		t.Fatal(err)
	}
	if tail := s.LogTail(5); tail == "" || strings.Count(tail, "\n") > 4 {
		t.Errorf("LogTail(5) = %q, want 1 to 5 lines", tail)
	}

	// Dump lists the session while it is open, and not once it is closed.
	sid := fmt.Sprintf("0x%x", conn.SessionID())
	dump, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, sid) {
		t.Fatalf("dump lacks the open session %s:\n%s", sid, dump)
	}
	conn.Close()
	eventually(t, "the closed session to leave the dump", func() error {
		dump, err := s.Dump()
		if err == nil && strings.Contains(dump, sid) {
			err = fmt.Errorf("session %s still listed", sid)
		}
		return err
	})
}

func TestStopKillRestartKeepData(t *testing.T) {
	t.Parallel()
	s := StartT(t)
	addr := s.Addr()
	conn := connect(t, addr)
	if _, err := conn.Create("/kept", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := s.Mode(); err == nil {
		t.Fatal("Mode succeeded on a stopped server")
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart after Stop: %v", err)
	}
	if s.Addr() != addr {
		t.Fatalf("Addr changed across Restart: %s -> %s", addr, s.Addr())
	}
	// Each read is made in a new session: what is tested is that the
	// server kept its data and its address, not how a client whose
	// session spans the restarts reconnects (under load a restart may
	// outlast the session, and that client's recovery is go-zookeeper's).
	conn = connect(t, addr)
	eventually(t, "read after restart", wantData(conn, "/kept", "v1"))

	// A committed write must survive a crash.
	eventually(t, "write before crash", func() error {
		_, err := conn.Set("/kept", []byte("v2"), -1)
		return err
	})
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart after Kill: %v", err)
	}
	eventually(t, "read after crash", wantData(connect(t, addr), "/kept", "v2"))

	// Restart of a running server stops it first.
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart while running: %v", err)
	}
	eventually(t, "read after running restart", wantData(connect(t, addr), "/kept", "v2"))
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := StartT(t)
	conn := connect(t, s.Addr())

	if err := s.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	// SIGSTOP takes effect asynchronously: a command already being served
	// may still be answered, so wait for the silence.
	eventually(t, "the paused server to stop answering", func() error {
		if _, err := s.Mode(); err == nil {
			return errors.New("a paused server answered srvr")
		}
		return nil
	})
	if err := s.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	eventually(t, "mode after resume", func() error {
		_, err := s.Mode()
		return err
	})
	eventually(t, "create after resume", func() error {
		_, err := conn.Create("/after-resume", nil, 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // an earlier attempt got through
		}
		return err
	})

	// Close works on a paused server too.
	if err := s.Pause(); err != nil {
		t.Fatalf("second Pause: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop while paused: %v", err)
	}
	if err := s.Pause(); err == nil {
		t.Error("Pause on a stopped server succeeded")
	}
	if err := s.Resume(); err == nil {
		t.Error("Resume on a stopped server succeeded")
	}
}

func TestCloseRemovesDirAndIsIdempotent(t *testing.T) {
	t.Parallel()
	Require(t)
	s, err := Start(Options{Dir: t.TempDir(), StartTimeout: waitTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.dir); err != nil {
		t.Fatalf("server dir missing while running: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("server dir still there after Close: %v", err)
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
}

func TestStartFailsFastOnBadConfig(t *testing.T) {
	t.Parallel()
	Require(t)
	_, err := Start(Options{Dir: t.TempDir(), ExtraConfig: []string{"tickTime=not-a-number"}})
	if err == nil {
		t.Fatal("Start succeeded with an invalid zoo.cfg")
	}
	if !errors.Is(err, errExitedEarly) || errors.Is(err, errBindFailed) {
		t.Fatalf("Start error = %v, want an early exit that is not a port conflict", err)
	}
	if !strings.Contains(err.Error(), "not-a-number") {
		t.Errorf("Start error does not carry the server log: %v", err)
	}
}

// conflictingPicker returns a port picker whose first answer has the port
// at index slot replaced by one that is already taken, as if another
// process grabbed it between picking and binding. It also counts calls.
func conflictingPicker(t *testing.T, slot int) (pick func(int) ([]int, error), takenPort int, calls *atomic.Int32) {
	t.Helper()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = taken.Close() })
	takenPort = taken.Addr().(*net.TCPAddr).Port
	calls = new(atomic.Int32)
	pick = func(n int) ([]int, error) {
		ports, err := freePorts(n)
		if err == nil && calls.Add(1) == 1 {
			ports[slot] = takenPort
		}
		return ports, err
	}
	return pick, takenPort, calls
}

func TestStartRetriesAfterPortConflict(t *testing.T) {
	t.Parallel()
	Require(t)
	pick, takenPort, calls := conflictingPicker(t, 0)
	s, err := Start(Options{Dir: t.TempDir(), pickPorts: pick})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if calls.Load() < 2 {
		t.Fatalf("Start picked ports %d times, want a retry after the conflict", calls.Load())
	}
	if s.Addr() == fmt.Sprintf("127.0.0.1:%d", takenPort) {
		t.Fatalf("server claims the taken port %d", takenPort)
	}
	if mode, err := s.Mode(); err != nil || mode != "standalone" {
		t.Fatalf("Mode() = %q, %v; want standalone", mode, err)
	}
}

func TestStartEnsembleRetriesAfterElectionPortConflict(t *testing.T) {
	t.Parallel()
	Require(t)
	// Ports come as client, quorum, election per member; index 2 is the
	// first member's election port. ZooKeeper keeps such a member running
	// without its election listener, so only the log reveals the problem.
	pick, _, calls := conflictingPicker(t, 2)
	e, err := StartEnsemble(3, Options{Dir: t.TempDir(), pickPorts: pick})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if calls.Load() < 2 {
		t.Fatalf("StartEnsemble picked ports %d times, want a retry after the conflict", calls.Load())
	}
	for i, s := range e.Servers {
		if strings.Contains(s.LogTail(1000), "BindException") {
			t.Errorf("server %d of the returned ensemble failed to bind:\n%s", i, s.LogTail(errorTailLines))
		}
	}
}

func TestEnsembleFailover(t *testing.T) {
	t.Parallel()
	e := StartEnsembleT(t, 3)
	if got := strings.Split(e.Connect(), ","); !slices.Equal(got, e.Addrs()) || len(got) != 3 {
		t.Fatalf("Connect() = %q, Addrs() = %v", e.Connect(), e.Addrs())
	}
	leader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range e.Servers {
		want := "follower"
		if i == leader {
			want = "leader"
		}
		if mode, err := s.Mode(); err != nil || mode != want {
			t.Fatalf("server %d Mode() = %q, %v; want %s", i, mode, err, want)
		}
	}

	conn := connect(t, e.Addrs()...)
	if _, err := conn.Create("/replicated", []byte("before"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}

	if err := e.Servers[leader].Kill(); err != nil {
		t.Fatalf("kill leader: %v", err)
	}
	newLeader, err := e.WaitLeader(waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if newLeader == leader {
		t.Fatalf("killed leader %d is still leader", leader)
	}
	eventually(t, "read after failover", wantData(conn, "/replicated", "before"))
	eventually(t, "write after failover", func() error {
		_, err := conn.Set("/replicated", []byte("after"), -1)
		return err
	})

	// The old leader rejoins as a follower and has the new write.
	if err := e.Servers[leader].Restart(); err != nil {
		t.Fatalf("restart old leader: %v", err)
	}
	if _, err := e.WaitLeader(waitTimeout); err != nil {
		t.Fatal(err)
	}
	rejoined := connect(t, e.Servers[leader].Addr())
	eventually(t, "read on rejoined server", wantData(rejoined, "/replicated", "after"))
}
