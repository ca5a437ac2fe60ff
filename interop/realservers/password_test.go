package realservers

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
	"github.com/zkpresto/zkpresto/zkprestotest/testjwt"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// passwordUser is the one user of the password servers' password file.
const passwordUser = "alice"

// secureFleet is a flavour's coordinator with https and the file password
// authenticator, registered at its https address under a namespace of its
// own in the shared ZooKeeper.
type secureFleet struct {
	flavour coordinator.Flavour
	cluster *realserver.Cluster
	server  *realserver.Server
	// certs is the coordinators' CA and certificate; gatewayCerts the
	// gateway's, a CA of its own, which is all its clients trust.
	certs, gatewayCerts *testtls.Files
	// password is passwordUser's, random per run, so that finding it in
	// an error or a log cannot be chance.
	password string
	// plain is, for Trino, a coordinator with the same password file and
	// no https: where a password meets plain http.
	plain *realserver.Server
	// jwtKey signs the tokens Trino's coordinator takes beside passwords;
	// token is signed by it, forged by another key, both naming
	// passwordUser.
	jwtKey        *testjwt.Key
	token, forged string
}

// startSecureFleet returns f's password coordinator, and for Trino beside
// it one with passwords on plain http only. Each flavour's starts once, for
// the first test that asks, and is closed when every test has run (run):
// a coordinator start costs a minute or more of CI on two cores. Trino's
// takes access tokens too (PASSWORD,JWT), for TestJWTAuthentication;
// PrestoDB's serves TestPrestoCancelCarriesThePassword too.
func startSecureFleet(t *testing.T, f coordinator.Flavour) *secureFleet {
	t.Helper()
	shared := secureFleets[f]
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "zkpresto-secure-")
		if err != nil {
			shared.err = err
			return
		}
		shared.fleet, shared.err = newSecureFleet(dir, f)
		closers.add(func() {
			shared.fleet.close()
			_ = os.RemoveAll(dir)
		})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.fleet
}

// sharedSecureFleet is a flavour's secure fleet, started once (startSecureFleet).
type sharedSecureFleet struct {
	once  sync.Once
	fleet *secureFleet
	err   error
}

// secureFleets are the flavours' shared secure fleets.
var secureFleets = map[coordinator.Flavour]*sharedSecureFleet{
	coordinator.Trino:  {},
	coordinator.Presto: {},
}

// closers are what run closes once every test has run.
var closers closeList

// closeList is a list of closing functions, run last added first.
type closeList struct {
	mu  sync.Mutex
	fns []func()
}

func (c *closeList) add(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, fn)
}

func (c *closeList) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}

// newSecureFleet starts f's secure fleet, its files under dir; what
// started is in the fleet returned, which close ends, with the error.
func newSecureFleet(dir string, f coordinator.Flavour) (*secureFleet, error) {
	certs, err := testtls.Generate(dir, "coordinators")
	if err != nil {
		return &secureFleet{}, err
	}
	gatewayCerts, err := testtls.Generate(dir, "gateway")
	if err != nil {
		return &secureFleet{}, err
	}
	password, err := newPassword()
	if err != nil {
		return &secureFleet{}, err
	}
	sf := &secureFleet{flavour: f, certs: certs, gatewayCerts: gatewayCerts, password: password}
	passwords := map[string]string{passwordUser: sf.password}
	var jwt *realserver.JWT
	if f == coordinator.Trino {
		if sf.jwtKey, err = testjwt.Generate(dir, "issuer"); err != nil {
			return sf, err
		}
		other, err := testjwt.Generate(dir, "forger")
		if err != nil {
			return sf, err
		}
		if sf.token, err = sf.jwtKey.Sign(passwordUser, time.Hour); err != nil {
			return sf, err
		}
		if sf.forged, err = other.Sign(passwordUser, time.Hour); err != nil {
			return sf, err
		}
		jwt = &realserver.JWT{KeyFile: sf.jwtKey.PublicKeyFile, User: passwordUser, Token: sf.token}
	}
	// These start while the shared servers run, two or three JVMs more
	// on two cores: a wider bound than a lone start needs.
	const startTimeout = 8 * time.Minute
	// Side by side: each takes a minute or more on two busy cores.
	var plainErr error
	plainStarted := make(chan struct{})
	go func() {
		defer close(plainStarted)
		if f == coordinator.Trino {
			sf.plain, plainErr = realserver.Start(realserver.Options{Flavour: f, Name: "trino-http-password", Passwords: passwords, StartTimeout: startTimeout})
		}
	}()
	var clusterErr error
	sf.cluster, clusterErr = realserver.StartCluster(realserver.ClusterOptions{
		Flavour: f, Servers: 1, Namespace: string(f) + "-password", ZooKeeper: zkServer,
		Server: realserver.Options{HTTPSKeyStore: certs.ServerKeyStore, Passwords: passwords, JWT: jwt, StartTimeout: startTimeout},
	})
	<-plainStarted
	if err := errors.Join(clusterErr, plainErr); err != nil {
		return sf, err
	}
	sf.server = sf.cluster.Servers()[0]
	return sf, nil
}

// close ends what of sf started.
func (sf *secureFleet) close() {
	if sf.cluster != nil {
		_ = sf.cluster.Close()
	}
	if sf.plain != nil {
		_ = sf.plain.Close()
	}
}

// newPassword is a random password holding the characters a DSN's user
// info must carry as they are (';', '@', ':'), so that their parsing is
// tested too; or why there is none.
func newPassword() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "pw;" + hex.EncodeToString(b) + "@x:y", nil
}

// noSecretIn fails t when text holds either password.
func noSecretIn(t *testing.T, what, text string, passwords ...string) {
	t.Helper()
	for _, p := range passwords {
		if strings.Contains(text, p) || strings.Contains(text, url.QueryEscape(p)) || strings.Contains(text, url.PathEscape(p)) {
			t.Errorf("%s carries a password: %s", what, text)
		}
	}
}

// whoAmI is the statement the password tests run: the user the coordinator
// authenticated, and the node that ran it.
const whoAmI = "SELECT current_user, node_id FROM system.runtime.nodes"

// queryWhoAmI runs whoAmI on db and reads its result to the end, as every
// client here does: a client follows the query's nextUri until an answer
// has none, and through the gateway the answer to the POST always has one
// (the gateway passes on no ended answer in its place), so the query
// takes two requests at least, which the replicas' front sends to both.
// QueryRow would stop at the first row, which presto-go-client can have
// from the first answer.
func queryWhoAmI(t *testing.T, db *sql.DB) (user, node string, err error) {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), whoAmI)
	if err != nil {
		return "", "", err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := rows.Scan(&user, &node); err != nil {
			return "", "", err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return "", "", err
	}
	if n != 1 {
		t.Fatalf("%s: %d rows, want the one node", whoAmI, n)
	}
	return user, node, nil
}

// Password authentication end to end, on each flavour's coordinator with
// https and the file authenticator (TLS in http-server.https.*, PASSWORD
// in http-server.authentication.type, Trino's PASSWORD,JWT as
// TestJWTAuthentication shares it, etc/password-authenticator.properties
// naming the file authenticator and its password file): the driver
// straight to the coordinators, the gateway in front of them for every
// client, and what plain http does with a password. The servers check
// HTTP basic authentication on https (trino server/security
// PasswordAuthenticator and plugin/trino-password-authenticators
// FileAuthenticator; PrestoDB server/security PasswordAuthenticator and
// presto-password-authenticators FileAuthenticator) and answer a wrong
// password 401 "Access Denied: Invalid credentials".
func TestPasswordAuthentication(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		sf := startSecureFleet(t, f.flavour)
		t.Run("driver", func(t *testing.T) { testPasswordDriver(t, sf) })
		t.Run("gateway", func(t *testing.T) { testPasswordGateway(t, sf) })
		t.Run("plain http", func(t *testing.T) { testPasswordPlainHTTP(t, sf) })
	})
}

// The driver with the DSN's ssl_ca and user:password reaches the
// coordinators over TLS and is let in as the user; a wrong password fails
// with an error that says so and carries neither password.
func testPasswordDriver(t *testing.T, sf *secureFleet) {
	dsn := func(password string) string {
		return sf.cluster.DSN(";ssl_ca=" + sf.certs.CAFile + "?user=" + passwordUser + "&password=" + url.QueryEscape(password))
	}
	db, err := sql.Open("zkpresto", dsn(sf.password))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	user, node, err := queryWhoAmI(t, db)
	if err != nil {
		t.Fatalf("with the right password: %v", err)
	}
	if user != passwordUser || node != sf.server.Name() {
		t.Fatalf("ran as %q on %q, want %q on %q", user, node, passwordUser, sf.server.Name())
	}

	wrong := sf.password + "-wrong"
	bad, err := sql.Open("zkpresto", dsn(wrong))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, _, err = queryWhoAmI(t, bad)
	if err == nil {
		t.Fatal("a wrong password was let in")
	}
	noSecretIn(t, "the wrong password's error", err.Error(), wrong, sf.password)
	// One line naming the coordinator and its reason: PrestoDB's answer is
	// a page of Jetty's HTML, which the driver boils down.
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, sf.server.HTTPSURL()) ||
		!strings.Contains(msg, "401 Unauthorized") || !strings.Contains(msg, "Invalid credentials") {
		t.Errorf("a wrong password: %q; want one line with the coordinator, its 401 and its reason", msg)
	}
	t.Logf("a wrong password: %v", err)
}

// lockedLog is a log written from many goroutines, read at the end.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startPasswordGateway serves a gateway on https with the gateway's own
// certificate, routing with dsnText as `zkpresto gateway --dsn` does, and
// returns its host:port. It logs to log, debug level and up, discovery's
// and the routing's lines included.
func startPasswordGateway(t *testing.T, sf *secureFleet, dsnText string, log *lockedLog) string {
	t.Helper()
	cfg, err := zkdriver.ParseDSN(dsnText)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	group, err := gateway.DSNGroup(gateway.DefaultGroup, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := gateway.NewGroups([]*gateway.Group{group}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Config{Groups: groups, Keys: gatewayKeys, Logger: logger})
	if err != nil {
		groups.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	pair := gatewayPair(t, sf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gateway.NewServer(g, logger, gateway.ServerLimits{})
	// What `zkpresto gateway --tls-cert --tls-key` serves with.
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the gateway's server: %v", err)
		}
	})
	return ln.Addr().String()
}

// gatewayPair is the gateway's certificate and key.
func gatewayPair(t *testing.T, sf *secureFleet) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(sf.gatewayCerts.ServerKeyStore, sf.gatewayCerts.ServerKeyStore)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// passwordReplicas are two replicas of the gateway on https, sharing
// their routing-token secret, behind a round-robin front on https with
// the gateway's certificate, as a TLS-terminating load balancer that
// re-encrypts to its backends runs: each request lands on the other
// replica than the one before, so that a query's pages cross replicas
// and each replica reads the other's tokens. Clients trust the gateway's
// CA only.
type passwordReplicas struct {
	// addr is the front's host:port, where clients connect.
	addr string
	// log is both replicas' and the front's.
	log  *lockedLog
	hits [2]atomic.Int64
}

// startPasswordReplicas starts the replicas, routing with dsnText, and
// their front, all closed when t ends.
func startPasswordReplicas(t *testing.T, sf *secureFleet, dsnText string) *passwordReplicas {
	t.Helper()
	p := &passwordReplicas{log: &lockedLog{}}
	var replicas [2]*url.URL
	for i := range replicas {
		replicas[i] = &url.URL{Scheme: "https", Host: startPasswordGateway(t, sf, dsnText, p.log)}
	}
	ca, err := os.ReadFile(sf.gatewayCerts.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in %s", sf.gatewayCerts.CAFile)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	var next atomic.Int64
	front := httptest.NewUnstartedServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := next.Add(1) % 2
			p.hits[i].Add(1)
			pr.SetURL(replicas[i])
			pr.Out.Host = pr.In.Host // the replicas hand out URIs on the front's host
		},
		Transport: transport,
		ErrorLog:  stdlog.New(p.log, "front: ", 0),
	})
	front.TLS = &tls.Config{Certificates: []tls.Certificate{gatewayPair(t, sf)}, MinVersion: tls.VersionTLS12}
	front.StartTLS()
	t.Cleanup(func() {
		front.Close()
		transport.CloseIdleConnections()
	})
	p.addr = front.Listener.Addr().String()
	return p
}

// Hits returns how many requests the front sent each replica.
func (p *passwordReplicas) Hits() [2]int64 { return [2]int64{p.hits[0].Load(), p.hits[1].Load()} }

// crossed fails t unless both replicas served requests since before, a
// Hits of earlier: what names the client.
func (p *passwordReplicas) crossed(t *testing.T, before [2]int64, what string) {
	t.Helper()
	after := p.Hits()
	if after[0] == before[0] || after[1] == before[1] {
		t.Errorf("%s: the replicas served %d and %d requests; want the query's requests on both", what, after[0]-before[0], after[1]-before[1])
	}
}

// goClientThrough opens the flavour's own Go client (presto-go-client,
// trino-go-client) on the gateway at addr over https, trusting the
// gateway's CA, with password.
func goClientThrough(t *testing.T, sf *secureFleet, addr, password string) *sql.DB {
	t.Helper()
	name := "presto"
	if sf.flavour == coordinator.Trino {
		name = "trino"
	}
	db, err := sql.Open(name, goClientDSN(sf, addr, password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// goClientDSN is goClientThrough's DSN.
func goClientDSN(sf *secureFleet, addr, password string) string {
	userinfo := url.UserPassword(passwordUser, password).String()
	if sf.flavour == coordinator.Trino {
		return "https://" + userinfo + "@" + addr + "?catalog=tpch&schema=tiny&SSLCertPath=" + url.QueryEscape(sf.gatewayCerts.CAFile)
	}
	return "presto://" + userinfo + "@" + addr + "/tpch/tiny?ssl_ca=" + url.QueryEscape(sf.gatewayCerts.CAFile)
}

// runPythonPassword runs testdata/python_password.py: whoAmI with client's
// Basic authentication as passwordUser over https to addr, trusting caFile.
// It returns the rows, or the client's error.
func runPythonPassword(t *testing.T, client, addr, caFile, password string) (rows [][]string, failure string) {
	t.Helper()
	python := pythonClients(t)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, python, "testdata/python_password.py", client, host, port, caFile, whoAmI)
	cmd.Env = append(os.Environ(), "ZKPRESTO_PASSWORD="+password)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	noSecretIn(t, "the Python client's stderr", stderr.String(), password)
	if err != nil {
		t.Fatalf("python_password.py %s: %v\n%s", client, err, stderr.Bytes())
	}
	var res struct {
		Rows  [][]string `json:"rows"`
		Error string     `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python_password.py printed %q: %v", out, err)
	}
	return res.Rows, res.Error
}

// interopToolchain returns the Go toolchain the interop/trino module
// needs: $INTEROP_TOOLCHAIN when set (the Makefile passes its own), else
// the toolchain line of that module's go.mod, which the Makefile reads
// too: the one place that names it.
func interopToolchain(t *testing.T) string {
	t.Helper()
	if v := os.Getenv("INTEROP_TOOLCHAIN"); v != "" {
		return v
	}
	mod, err := os.ReadFile(filepath.Join("..", "trino", "go.mod"))
	if err != nil {
		t.Fatalf("the interop/trino module's toolchain: %v", err)
	}
	for line := range strings.Lines(string(mod)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "toolchain "); ok {
			return v
		}
	}
	t.Fatal("the interop/trino module's go.mod has no toolchain line")
	return ""
}

// runTrinoProbe runs whoAmI with trino-go-client v1.5.0 on dsn: the
// interop/trino module's probe command, on the Go toolchain that module
// needs. It returns what the command printed on stdout and on stderr, and
// its error.
func runTrinoProbe(t *testing.T, dsn string) (stdout, stderr string, err error) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to run trino-go-client v1.5.0: %v", err)
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, goCmd, "run", "./probe", whoAmI)
	cmd.Dir = filepath.Join("..", "trino")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+interopToolchain(t), "TRINO_DSN="+dsn)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// Two gateway replicas whose DSN reaches the coordinators over TLS
// (ssl_ca), on https behind a round-robin front on https: a client's Basic
// authentication passes through either replica to the coordinator, which
// checks it. The Go clients, the JDBC driver and the Python client of each
// flavour (and for Trino trino-go-client v1.5.0, the version users have)
// are let in with the right password, each running a query whose requests
// land on both replicas, and refused with a wrong one; the gateway's own
// DSN carries no password, nor does any log.
func testPasswordGateway(t *testing.T, sf *secureFleet) {
	p := startPasswordReplicas(t, sf, sf.cluster.DSN(";ssl_ca="+sf.certs.CAFile))
	addr := p.addr
	wrong := sf.password + "-wrong"
	defer func() {
		noSecretIn(t, "the gateway's log", p.log.String(), sf.password, wrong, basicAuth(passwordUser, sf.password), basicAuth(passwordUser, wrong))
	}()

	t.Run("go client", func(t *testing.T) {
		before := p.Hits()
		user, node, err := queryWhoAmI(t, goClientThrough(t, sf, addr, sf.password))
		if err != nil {
			t.Fatalf("with the right password through the gateway: %v", err)
		}
		if user != passwordUser || node != sf.server.Name() {
			t.Fatalf("ran as %q on %q, want %q on %q", user, node, passwordUser, sf.server.Name())
		}
		p.crossed(t, before, "the go client")
		_, _, err = queryWhoAmI(t, goClientThrough(t, sf, addr, wrong))
		if err == nil {
			t.Fatal("a wrong password was let in through the gateway")
		}
		noSecretIn(t, "the wrong password's error", err.Error(), wrong, sf.password)
		t.Logf("a wrong password through the gateway: %v", err)
	})

	t.Run("zkpresto driver", func(t *testing.T) {
		// The driver on a host list of one, the front: no discovery.
		scheme := "presto://"
		if sf.flavour == coordinator.Trino {
			scheme = "trino://"
		}
		dsn := func(password string) string {
			return scheme + addr + "/tpch/tiny;ssl_ca=" + sf.gatewayCerts.CAFile + "?user=" + passwordUser + "&password=" + url.QueryEscape(password)
		}
		db, err := sql.Open("zkpresto", dsn(sf.password))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		before := p.Hits()
		user, _, err := queryWhoAmI(t, db)
		if err != nil || user != passwordUser {
			t.Fatalf("through the gateway: %q, %v", user, err)
		}
		p.crossed(t, before, "the driver")
		bad, err := sql.Open("zkpresto", dsn(wrong))
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		_, _, err = queryWhoAmI(t, bad)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("a wrong password through the gateway: %v; want the 401", err)
		}
		noSecretIn(t, "the wrong password's error", err.Error(), wrong, sf.password)
	})

	t.Run("python", func(t *testing.T) {
		client := "presto"
		if sf.flavour == coordinator.Trino {
			client = "trino"
		}
		before := p.Hits()
		rows, failure := runPythonPassword(t, client, addr, sf.gatewayCerts.CAFile, sf.password)
		if failure != "" || len(rows) != 1 || rows[0][0] != passwordUser || rows[0][1] != sf.server.Name() {
			t.Fatalf("%s-python-client through the gateway: %q %s; want %s on %s", client, rows, failure, passwordUser, sf.server.Name())
		}
		p.crossed(t, before, client+"-python-client")
		_, failure = runPythonPassword(t, client, addr, sf.gatewayCerts.CAFile, wrong)
		if !strings.Contains(failure, "401") {
			t.Fatalf("%s-python-client with a wrong password through the gateway: %q; want the 401", client, failure)
		}
		noSecretIn(t, "the Python client's error", failure, wrong, sf.password)
		t.Logf("%s-python-client with a wrong password: %.300s", client, failure)
	})

	if sf.flavour == coordinator.Trino {
		t.Run("trino-go-client v1.5.0", func(t *testing.T) {
			before := p.Hits()
			out, errOut, err := runTrinoProbe(t, goClientDSN(sf, addr, sf.password))
			noSecretIn(t, "trino-go-client v1.5.0's stderr", errOut, sf.password)
			if err != nil || out != passwordUser+"\t"+sf.server.Name()+"\n" {
				t.Fatalf("trino-go-client v1.5.0 through the gateway: %q, %v\n%s\nwant %s on %s", out, err, errOut, passwordUser, sf.server.Name())
			}
			p.crossed(t, before, "trino-go-client v1.5.0")
			out, errOut, err = runTrinoProbe(t, goClientDSN(sf, addr, wrong))
			if err == nil || !strings.Contains(errOut, "401") {
				t.Fatalf("trino-go-client v1.5.0 with a wrong password through the gateway: %q, %v\n%s\nwant the 401", out, err, errOut)
			}
			noSecretIn(t, "trino-go-client v1.5.0's error", errOut, wrong, sf.password)
			t.Logf("trino-go-client v1.5.0 with a wrong password: %.300s", errOut)
		})
	}

	t.Run("jdbc", func(t *testing.T) {
		driverJar, scheme := jar(t, realserver.PrestoJDBC), "jdbc:presto://"
		if sf.flavour == coordinator.Trino {
			driverJar, scheme = jar(t, realserver.TrinoJDBC), "jdbc:trino://"
		}
		jdbcURL := func(password string) string {
			return scheme + addr + "/tpch/tiny?SSL=true&SSLTrustStorePath=" + url.QueryEscape(sf.gatewayCerts.CAFile) + "&password=" + url.QueryEscape(password)
		}
		before := p.Hits()
		rows := probe(t, driverJar, []string{jdbcURL(sf.password), whoAmI})
		p.crossed(t, before, "JDBC")
		if len(rows[1]) != 1 || rows[1][0][0] != passwordUser || rows[1][0][1] != sf.server.Name() {
			t.Fatalf("JDBC through the gateway: %q, want %s on %s", rows[1], passwordUser, sf.server.Name())
		}
		out, err := javaCombined(t, "-cp", driverJar, "testdata/JdbcProbe.java", jdbcURL(wrong), whoAmI)
		if err == nil && !strings.Contains(out, "\tERROR\t") {
			t.Fatalf("JDBC with a wrong password through the gateway: %s", out)
		}
		if !strings.Contains(out, "401") && !strings.Contains(strings.ToLower(out), "authentication failed") {
			t.Errorf("JDBC with a wrong password: %s; want the 401", out)
		}
		t.Logf("JDBC with a wrong password: %.400s", out)
		// Without SSL=true the driver keeps the password to itself
		// (trino-jdbc TrinoDriverUri, presto-jdbc PrestoDriverUri).
		out, _ = javaCombined(t, "-cp", driverJar, "testdata/JdbcProbe.java", scheme+addr+"/tpch/tiny?password="+url.QueryEscape(sf.password), whoAmI)
		refusal := "Authentication using username/password requires SSL to be enabled"
		if sf.flavour == coordinator.Trino {
			refusal = "TLS/SSL is required for authentication with username and password"
		}
		if !strings.Contains(out, refusal) {
			t.Errorf("JDBC with a password and without SSL: %.400s; want its refusal %q", out, refusal)
		}
	})

	if sf.flavour != coordinator.Trino {
		return // presto-go-client sends a password over http as well (client.go: Basic auth whatever the scheme)
	}
	t.Run("trino-go-client without TLS", func(t *testing.T) {
		db, err := sql.Open("trino", "http://"+url.UserPassword(passwordUser, sf.password).String()+"@"+addr+"?catalog=tpch&schema=tiny")
		if err == nil {
			_, _, err = queryWhoAmI(t, db)
			db.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "TLS/SSL is required for authentication with username and password") {
			t.Fatalf("trino-go-client with a password over http: %v; want its refusal", err)
		}
	})
}

// javaCombined runs a Java program as java does, but returns its output
// and stderr together with its error instead of failing t.
func javaCombined(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := realserver.Java(coordinator.Trino)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(c, bin, args...).CombinedOutput()
	return string(out), err
}

// postWithPassword POSTs a statement to baseURL as passwordUser with
// password, and returns the answer's status and body.
func postWithPassword(t *testing.T, flavour coordinator.Flavour, baseURL, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, baseURL+"/v1/statement", strings.NewReader("SELECT current_user"))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(passwordUser, password)
	req.Header.Set(flavour.HeaderPrefix()+"User", passwordUser)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// Plain http and passwords, as each server has it. Trino with https on
// refuses every authentication over its http port (ServerSecurityModule
// sets http-server.authentication.allow-insecure-over-http to false,
// AuthenticationFilter answers 403 "Authentication over HTTP is not
// enabled"); Trino without https refuses a password ("Password not allowed
// for insecure authentication", InsecureAuthenticator), to the driver and
// through the gateway alike. PrestoDB 0.287 checks nothing over http
// (AuthenticationFilter.doFilter skips a request that is not secure), a
// wrong password included: only its https port checks passwords.
func testPasswordPlainHTTP(t *testing.T, sf *secureFleet) {
	wrong := sf.password + "-wrong"
	status, body := postWithPassword(t, sf.flavour, sf.server.URL(), wrong)
	t.Logf("POST /v1/statement to the https coordinator's http port with a wrong password: %d %.200q", status, body)
	if sf.flavour == coordinator.Presto {
		if status != http.StatusOK {
			t.Fatalf("PrestoDB's http port with a wrong password: %d %.300s; PrestoDB checks no password over http", status, body)
		}
		res, err := realserver.QueryAt(ctx(t), sf.server.URL(), sf.flavour, whoAmI, "Authorization", "Basic "+basicAuth(passwordUser, wrong))
		if err != nil {
			t.Fatalf("PrestoDB's http port with a wrong password: %v", err)
		}
		t.Logf("PrestoDB over http with a wrong password ran as %v", res.Rows)
		return
	}
	if status != http.StatusForbidden || !strings.Contains(body, insecureHTTPRefused) {
		t.Fatalf("Trino's http port beside https: %d %.300s; want 403 %q", status, body, insecureHTTPRefused)
	}

	status, body = postWithPassword(t, sf.flavour, sf.plain.URL(), sf.password)
	if status != http.StatusUnauthorized || !strings.Contains(body, passwordOverHTTPRefused) {
		t.Fatalf("Trino without https, the right password: %d %.300s; want 401 %q", status, body, passwordOverHTTPRefused)
	}
	// The driver straight to it: the coordinator's words, no password.
	db, err := sql.Open("zkpresto", "trino://"+passwordUser+":"+url.PathEscape(sf.password)+"@"+sf.plain.Addr()+"/tpch/tiny")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, _, err = queryWhoAmI(t, db)
	if err == nil || !strings.Contains(err.Error(), passwordOverHTTPRefused) {
		t.Fatalf("the driver to Trino over http with a password: %v; want %q", err, passwordOverHTTPRefused)
	}
	noSecretIn(t, "the driver's error", err.Error(), sf.password)
	t.Logf("the driver over http: %v", err)
	// The gateway with a DSN without ssl_* keys, in front of it: the
	// client's password crosses the gateway's TLS and then plain http.
	addr := startPasswordGateway(t, sf, "trino://"+sf.plain.Addr()+"/", &lockedLog{})
	_, _, err = queryWhoAmI(t, goClientThrough(t, sf, addr, sf.password))
	if err == nil || !strings.Contains(err.Error(), passwordOverHTTPRefused) {
		t.Fatalf("through a gateway on plain http to Trino: %v; want %q", err, passwordOverHTTPRefused)
	}
	noSecretIn(t, "the client's error", err.Error(), sf.password)
	t.Logf("through the gateway over http: %v", err)
}

// The servers' own words for authentication over plain http (Trino's
// AuthenticationFilter and InsecureAuthenticator), which
// docs/gateway-operations.md quotes.
const (
	insecureHTTPRefused     = "Authentication over HTTP is not enabled"
	passwordOverHTTPRefused = "Password not allowed for insecure authentication"
)

func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
