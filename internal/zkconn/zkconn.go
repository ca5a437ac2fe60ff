// Package zkconn is the ZooKeeper connection setup shared by discovery and
// the registrar: which server addresses and paths are accepted, how a server
// is dialled (bounded by a connect timeout, over TLS when configured), how
// go-zookeeper's own log lines reach slog without the credentials, and how
// credentials are added to a session. Both sides of zkpresto talk to the same
// ensembles, so a setting must mean the same thing in both.
//
// Errors from this package do not name the ensemble: the callers put it (and
// their own prefix) in front, as they do for every other ZooKeeper error.
// They never carry credentials.
package zkconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// DefaultPort is ZooKeeper's client port, used for a server given without
// one, as go-zookeeper and the DSN do.
const DefaultPort = 2181

// Config is what a ZooKeeper session is opened with.
type Config struct {
	// Servers are the ensemble's addresses, in the form Servers accepts.
	Servers []string
	// SessionTimeout is the session timeout asked of ZooKeeper.
	SessionTimeout time.Duration
	// ConnectTimeout, when positive, bounds each dial (TLS handshake
	// included) below go-zookeeper's own per-server timeout, so that a
	// caller waiting ConnectTimeout for a session gets to try a server at
	// least once.
	ConnectTimeout time.Duration

	// AuthScheme and Auth, when AuthScheme is set, are what AddAuth sends,
	// as with zkCli's addauth (for example "digest" and "user:password").
	// Connect masks them in go-zookeeper's log lines.
	AuthScheme string
	Auth       []byte

	// TLS, when set, makes every dial a TLS one. An empty ServerName is
	// set to the host of the server being dialled, so that one
	// configuration serves every member of the ensemble.
	TLS *tls.Config

	// Logger receives go-zookeeper's own messages at debug level; nil
	// means none. They are connection chatter that helps when debugging
	// and is noise otherwise.
	Logger *slog.Logger

	// OnDialError, when set, is called with every failed dial, and with a
	// *NotZooKeeperError for every server that answered the connect
	// request as ZooKeeper never does, so that a caller that gives up
	// waiting for a session can say why. It runs on go-zookeeper's
	// connection goroutine and must not block.
	OnDialError func(error)
}

// Connect opens a session to the ensemble and returns at once; the session
// is established in the background, as with zk.Connect. onEvent, when not
// nil, receives every session and watch event; it runs on go-zookeeper's
// goroutines and must not block. Connect fails when the servers are not
// acceptable to Servers or none of them resolves.
func Connect(cfg Config, onEvent func(zk.Event)) (*zk.Conn, error) {
	servers, err := Servers(cfg.Servers)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	conn, _, err := zk.Connect(servers, cfg.SessionTimeout,
		zk.WithLogger(Logger(cfg.Logger, secrets(cfg.AuthScheme, cfg.Auth)...)),
		// go-zookeeper logs every connect at info level through its
		// logger; the session state reaches the callers as events anyway.
		zk.WithLogInfo(false),
		zk.WithDialer(cfg.dial),
		zk.WithEventCallback(onEvent), // nil is go-zookeeper's "none"
	)
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// secrets returns what must not appear in logs for these credentials: the
// credentials whole and, for digest ("user:password"), the password alone,
// which would otherwise survive a message that quoted only it.
func secrets(scheme string, auth []byte) []string {
	if len(auth) == 0 {
		return nil
	}
	s := []string{string(auth)}
	if scheme == "digest" {
		if _, password, ok := strings.Cut(string(auth), ":"); ok && password != "" {
			s = append(s, password)
		}
	}
	return s
}

// dial connects to one server, over TLS when configured. go-zookeeper
// passes its own per-server timeout; ConnectTimeout may only shorten it.
func (c *Config) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if c.ConnectTimeout > 0 {
		timeout = min(timeout, c.ConnectTimeout)
	}
	d := &net.Dialer{Timeout: timeout}
	var conn net.Conn
	var err error
	if c.TLS == nil {
		conn, err = d.Dial(network, address)
	} else {
		cfg := c.TLS
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(address)
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		// The dialer's timeout bounds the handshake too, so a server
		// that accepts and then says nothing cannot hold the session.
		conn, err = tls.DialWithDialer(d, network, address, cfg)
		if err != nil {
			// Handshake errors do not say which server they came from.
			err = fmt.Errorf("TLS to %s: %w", address, err)
		}
	}
	if err != nil {
		if c.OnDialError != nil {
			c.OnDialError(err)
		}
		return nil, err
	}
	return &handshakeConn{Conn: conn, addr: address, onForeign: c.OnDialError}, nil
}

// AddAuth sends cfg's credentials to the session, which go-zookeeper sends
// again after every reconnection; it does nothing when cfg has no
// AuthScheme. go-zookeeper waits for the answer without a deadline, so when
// ctx ends first AddAuth closes conn, which fails the request, and returns
// ctx's error: a session whose credentials are in doubt is of no use.
func AddAuth(ctx context.Context, conn *zk.Conn, cfg Config) error {
	if cfg.AuthScheme == "" {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- conn.AddAuth(cfg.AuthScheme, cfg.Auth) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		conn.Close()
		<-done
		if cfg.ConnectTimeout > 0 {
			return fmt.Errorf("no answer within %s: %w", cfg.ConnectTimeout, ctx.Err())
		}
		return fmt.Errorf("no answer: %w", ctx.Err())
	}
}

// Mask replaces the secrets in go-zookeeper's log lines.
const Mask = "xxxxx"

// Logger returns a zk.Logger that sends go-zookeeper's messages to log at
// debug level, with every secret replaced by Mask. go-zookeeper prints no
// credentials today; the masking is there so that a future version, or a
// server address or error that happens to quote them, cannot leak them.
func Logger(log *slog.Logger, secrets ...string) zk.Logger {
	return zkLogger{log: log, secrets: ordered(secrets)}
}

// ordered drops empty secrets and sorts the rest longest first, so that a
// secret containing another is masked whole.
func ordered(secrets []string) []string {
	var s []string
	for _, secret := range secrets {
		if secret != "" {
			s = append(s, secret)
		}
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && len(s[j]) > len(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// Redact returns s with cfg's credentials replaced by Mask, for callers
// that log a dial error or event themselves: an error text is not ours to
// trust not to quote them.
func Redact(cfg Config, s string) string {
	for _, secret := range ordered(secrets(cfg.AuthScheme, cfg.Auth)) {
		s = strings.ReplaceAll(s, secret, Mask)
	}
	return s
}

type zkLogger struct {
	log     *slog.Logger
	secrets []string
}

func (l zkLogger) Printf(format string, args ...any) {
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	msg := fmt.Sprintf(format, args...)
	for _, s := range l.secrets {
		msg = strings.ReplaceAll(msg, s, Mask)
	}
	l.log.Debug("zookeeper: " + msg)
}

// Servers checks an ensemble's addresses and returns them as host:port: a
// host without a port gets DefaultPort, as go-zookeeper would give it, and
// an IPv6 address must be in brackets ("[::1]" or "[::1]:2181"), because
// without them its last group cannot be told from a port. It rejects what
// could never be dialled (an empty host, a port that is not 1..65535), so
// that the mistake shows when the configuration is read rather than as
// endless connection failures.
func Servers(servers []string) ([]string, error) {
	if len(servers) == 0 {
		return nil, errors.New("no ZooKeeper servers given")
	}
	out := make([]string, 0, len(servers))
	for _, s := range servers {
		addr, err := server(s)
		if err != nil {
			return nil, fmt.Errorf("ZooKeeper server %q: %w", s, err)
		}
		out = append(out, addr)
	}
	return out, nil
}

// server checks one address for Servers.
func server(s string) (string, error) {
	const want = "want host:port"
	host, port, err := net.SplitHostPort(s)
	switch {
	case err == nil:
	case !strings.Contains(s, ":"):
		host, port = s, strconv.Itoa(DefaultPort)
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		host, port = s[1:len(s)-1], strconv.Itoa(DefaultPort)
	default:
		if addr, perr := netip.ParseAddr(s); perr == nil && addr.Is6() {
			return "", errors.New(want + ", an IPv6 address in brackets, as in [::1]:2181")
		}
		return "", errors.New(want)
	}
	if host == "" {
		return "", errors.New(want + ": empty host")
	}
	if strings.HasPrefix(s, "[") { // brackets are for IPv6 addresses only
		if addr, err := netip.ParseAddr(host); err != nil || !addr.Is6() {
			return "", fmt.Errorf("%s: bad IPv6 address %q", want, host)
		}
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", fmt.Errorf("%s: bad port %q", want, port)
	}
	return net.JoinHostPort(host, port), nil
}

// Path returns p as an absolute ZooKeeper path without surrounding slashes
// ("presto", "/presto" and "/presto/" are all "/presto"; "" and "/" are the
// root), or an error saying why ZooKeeper would reject it: an empty
// segment, a "." or ".." segment, or a character ZooKeeper does not allow.
// Every request on such a path would fail; checking here makes a bad
// namespace fail when it is configured. The error does not quote p, so that
// the caller names it in its own words (a namespace, a path).
func Path(p string) (string, error) {
	trimmed := strings.Trim(p, "/")
	if trimmed == "" {
		return "/", nil
	}
	if !utf8.ValidString(trimmed) {
		return "", errors.New("not valid UTF-8")
	}
	for _, segment := range strings.Split(trimmed, "/") {
		switch segment {
		case "":
			return "", errors.New("empty path segment")
		case ".", "..":
			return "", fmt.Errorf("relative path segment %q", segment)
		}
		for _, r := range segment {
			if forbidden(r) {
				return "", fmt.Errorf("character %U not allowed in a ZooKeeper path", r)
			}
		}
	}
	return "/" + trimmed, nil
}

// forbidden reports whether ZooKeeper rejects r in a path: control
// characters, and what Java holds as surrogates or private-use characters,
// which covers every rune above U+FFFF. go-zookeeper checks a subset of these
// itself; the server rejects the rest.
func forbidden(r rune) bool {
	return r <= 0x1f ||
		r >= 0x7f && r <= 0x9f ||
		r >= 0xd800 && r <= 0xf8ff ||
		r >= 0xfff0
}
