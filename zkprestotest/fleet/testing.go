package fleet

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// StartT starts a fleet for a test and closes it at the test's end. Without
// ZooKeeper on the machine the test fails under CI and is skipped elsewhere.
func StartT(tb testing.TB, opts Options) *Fleet {
	tb.Helper()
	if opts.Ensemble == "" {
		zkserver.Require(tb)
	}
	f, err := Start(opts)
	if err != nil {
		tb.Fatalf("starting the fleet: %v", err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// StartTLST is StartT for a fleet whose ZooKeeper also serves TLS, with a
// client certificate required, on the returned port; the plain port keeps
// working beside it.
func StartTLST(tb testing.TB, opts Options) (*Fleet, *testtls.Port) {
	tb.Helper()
	port, err := testtls.NewPort(tb.TempDir(), "zk")
	if err != nil {
		tb.Fatalf("TLS for ZooKeeper: %v", err)
	}
	opts.ZooKeeper.ExtraConfig = append(slices.Clone(opts.ZooKeeper.ExtraConfig), port.Config...)
	return StartT(tb, opts), port
}

// DialT opens a ZooKeeper session to ensemble for a test (see Dial) and
// closes it at the test's end.
func DialT(tb testing.TB, ensemble string) *zk.Conn {
	tb.Helper()
	conn, err := Dial(ensemble)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Close)
	return conn
}
