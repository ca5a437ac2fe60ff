package driver_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

const (
	zkSecret     = "zk-S3cret;pw&x"
	prestoSecret = "presto-Pa55;w0rd"
)

// secureFleet is a ZooKeeper with a plain and a TLS client port whose
// namespace /secure only user "alice" (password zkSecret) may read, with
// two coordinators registered over the plain port.
type secureFleet struct {
	*fleet.Fleet
	secureAddr string
	files      *testtls.Files
}

func startSecureFleet(t *testing.T) *secureFleet {
	t.Helper()
	f, port := fleet.StartTLST(t, fleet.Options{Coordinators: 2})
	if err := f.SecureNamespace("secure", "alice", zkSecret, zk.DigestACL(zk.PermAll, "alice", zkSecret)); err != nil {
		t.Fatal(err)
	}
	registerAll(t, f)
	return &secureFleet{Fleet: f, secureAddr: port.Addr, files: port.Files}
}

// dsn returns a DSN for hosts with the given ZooKeeper credentials and TLS
// CA ("" for plain TCP).
func (f *secureFleet) dsn(hosts, zkPassword, caFile, extra string) string {
	dsn := "presto://" + hosts + "/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=secure"
	if zkPassword != "" {
		dsn += ";zooKeeperAuth=digest:alice:" + url.QueryEscape(zkPassword)
	}
	if caFile != "" {
		dsn += ";zooKeeperSSLCAFile=" + caFile + ";zooKeeperSSLCertFile=" + f.files.ClientCertFile + ";zooKeeperSSLKeyFile=" + f.files.ClientKeyFile
	}
	return dsn + extra
}

func TestZooKeeperAuthAndTLSEndToEnd(t *testing.T) {
	f := startSecureFleet(t)
	logs := &testutil.Buffer{}
	db, connector := openLogged(t, f.dsn(f.secureAddr, zkSecret, f.files.CAFile, ";zooKeeperStrategy=poll?user=alice"), logs)
	if got := keys(servedBy(t, db, 4)); len(got) != 2 {
		t.Fatalf("over TLS with credentials, served by %v; want both coordinators", got)
	}
	if st := connector.Config(); !st.ZooKeeperSSL || st.ZooKeeperAuthScheme != "digest" {
		t.Fatalf("config %s lacks TLS or credentials", st)
	}
	if strings.Contains(logs.String(), zkSecret) {
		t.Fatalf("logs contain the ZooKeeper password")
	}
}

// TestSecretsNeverLeak runs failing scenarios with credentials in the DSN
// and checks that neither password reaches an error, a log line (the
// driver's, discovery's and go-zookeeper's, all at debug level) or
// Config.String.
func TestSecretsNeverLeak(t *testing.T) {
	f := startSecureFleet(t)
	other, err := testtls.Generate(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()

	const presto = "?user=alice&password=" + "presto-Pa55%3Bw0rd"
	for _, tc := range []struct {
		name  string
		dsn   string
		wants []string
	}{
		{"wrong ZooKeeper password", f.dsn(f.Ensemble(), "not-"+zkSecret, "", presto),
			[]string{f.Ensemble(), "/secure", "permission denied"}},
		{"no ZooKeeper credentials", f.dsn(f.Ensemble(), "", "", presto),
			[]string{f.Ensemble(), "/secure", "permission denied"}},
		{"unreachable ensemble", f.dsn(dead, zkSecret, "", ";zooKeeperConnectTimeout=500ms"+presto),
			[]string{dead, "every server refused the connection", "connection refused"}},
		// Time for the refused handshake to be seen on a busy machine: the
		// error names the last dial's failure.
		{"untrusted server certificate", f.dsn(f.secureAddr, zkSecret, other.CAFile, ";zooKeeperConnectTimeout=4s"+presto),
			[]string{f.secureAddr, "no session within 4s", "TLS to " + f.secureAddr, "certificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &testutil.Buffer{}
			db, connector := openLogged(t, tc.dsn, logs)
			err := db.PingContext(context.Background())
			if err == nil {
				t.Fatal("Ping succeeded")
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			shown := map[string]string{
				"error":         err.Error(),
				"logs":          logs.String(),
				"Config.String": connector.Config().String(),
			}
			for where, text := range shown {
				for _, secret := range []string{zkSecret, url.QueryEscape(zkSecret), prestoSecret, "presto-Pa55%3Bw0rd", "S3cret", "Pa55"} {
					if strings.Contains(text, secret) {
						t.Errorf("%s shows %q:\n%s", where, secret, text)
					}
				}
			}
			if tc.name == "unreachable ensemble" && !strings.Contains(logs.String(), "failed to connect") {
				// go-zookeeper's own lines must reach the captured log, or
				// the check above would prove nothing for them.
				t.Errorf("go-zookeeper's log lines were not captured:\n%s", logs.String())
			}
		})
	}
}
