package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/cli"
	"github.com/zkpresto/zkpresto/metrics"
	"github.com/zkpresto/zkpresto/routing"
)

func init() { subcommands = append(subcommands, newGatewayCommand) }

// secretEnv holds the routing-token secret when --secret-file is not given.
const secretEnv = "ZKPRESTO_GATEWAY_SECRET"

type gatewayOptions struct {
	listen       string
	dsn          string
	config       string
	secretFile   string
	publicURL    string
	forwardedFor bool
	// forwardedProto is --forwarded-proto.
	forwardedProto bool
	tlsCert        string
	tlsKey         string
	// clientCA and the jwt* fields are --client-ca and --jwt-*: client
	// certificates turned into tokens (gateway.CertJWT).
	clientCA      string
	jwtSigningKey string
	jwtKeyID      string
	jwtIssuer     string
	jwtAudience   string
	jwtLifetime   time.Duration
	drainTimeout  time.Duration
	drainQuiet    time.Duration
	noNodesGrace  time.Duration
	// affinityCookie is --affinity-cookie: the affinity cookie's max age,
	// 0 for none.
	affinityCookie time.Duration
	logLevel       string
	// adminListen, when set, is where the operator pages are served
	// instead of --listen; adminPasswordFile holds a credential they then
	// require.
	adminListen       string
	adminPasswordFile string
	// explain, when set, is a sample statement whose routing by --config
	// is printed instead of serving; the rest describes its request.
	explain        string
	explainUser    string
	explainSource  string
	explainTags    string
	explainHeaders []string
	explainAt      string
}

func newGatewayCommand() *cobra.Command {
	var o gatewayOptions
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "One address for every Presto/Trino client, in front of the coordinators discovery lists",
		Long: `gateway serves the Presto/Trino client protocol on --listen and routes each
statement to a coordinator the DSN's discovery and strategy pick, with the
driver's failure rules: a statement that never reached a coordinator goes to
another; one that may have is never sent again.

Every URI it hands out carries a routing token (the coordinator, signed with
the secret): run any number of replicas with the same secret behind a load
balancer, and any replica routes any follow-up. The secret is one or two
keys (the first signs, both verify, for rotation), one per line, from
--secret-file or $ZKPRESTO_GATEWAY_SECRET.

--explain SQL prints where --config would route a statement (with the request
--explain-user, --explain-source, --explain-tags, --explain-header and
--explain-at describe) and why, and the coordinators its group lists now.

Instead of --dsn, --config reads Presto Router's router-config.json: groups
of coordinators (a member may be a ZooKeeper namespace,
zk://host:port[,host:port...]/namespace, or a whole DSN for ZooKeeper auth,
TLS and the rest of its keys), first-match selectors on user,
source and client tags, the scheduler, and an optional weight per group for
the statements no selector claims. It is reloaded on SIGHUP and when it
changes; a file that fails to load keeps the config in use.

GET /_zk/health answers 200 while discovery lists coordinators. The operator
pages, /_zk/status (GET / leads there), /_zk/status.json and /_zk/metrics
(Prometheus; requests by kind and status, their latency), show user names,
sources, query ids and coordinator addresses: serve them on an internal
address with --admin-listen, or behind a password with
--admin-password-file, or both. /_zk/health stays on --listen for load
balancers. A group with no coordinator answers 503 for
--no-coordinator-grace, then a NO_NODES_AVAILABLE query failure every client
shows. With --affinity-cookie, the answer to each accepted statement sets a
signed cookie naming its coordinator: a client that keeps cookies sends its
next statements there, through any replica, while that coordinator is
ready in the group the selectors choose. On SIGTERM the gateway drains: /_zk/health answers 503 and new
statements get 503 with Connection: close (retried elsewhere), while the
gateway keeps listening and serves the requests that come. It exits once
no request is in flight and either the queries it relayed have ended or
no request has come for --drain-quiet (their clients reach another
replica now), or at --drain-timeout, cutting what is then in flight.`,
		Example: `  zkpresto gateway --listen 0.0.0.0:8080 \
    --dsn 'presto://zk1:2181,zk2:2181/;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto;zooKeeperStrategy=p2c' \
    --secret-file /etc/zkpresto/gateway.key

  # Presto Router's groups and selectors, a group's member may be zk://hosts/namespace or a DSN:
  zkpresto gateway --listen 0.0.0.0:8080 --config /etc/presto-router/router-config.json \
    --secret-file /etc/zkpresto/gateway.key

  # Behind a load balancer that clients reach at https://presto.example.com:
  zkpresto gateway --listen :8443 --tls-cert gw.pem --tls-key gw-key.pem \
    --public-url https://presto.example.com --dsn "$ZKPRESTO_DSN" --secret-file gw.key`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			configOnly := f.Changed("config") && !f.Changed("dsn")
			if err := applyEnvHook(cmd, args); err != nil {
				return err
			}
			if configOnly {
				o.dsn = "" // $ZKPRESTO_DSN is for the other commands then
			}
			return nil
		},
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("explain") {
				return runExplain(ctx, cmd.OutOrStdout(), o)
			}
			return runGateway(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve the Presto/Trino protocol on")
	f.StringVar(&o.dsn, "dsn", "", "the driver's DSN: discovery (ZooKeeper or a host list), strategy, health and TLS keys (or --config)")
	f.StringVar(&o.config, "config", "", "Presto Router's router-config.json: groups, selectors, scheduler; reloaded on SIGHUP and when it changes (or --dsn)")
	f.StringVar(&o.secretFile, "secret-file", "", "file holding the routing-token keys (default: $"+secretEnv+")")
	f.StringVar(&o.publicURL, "public-url", "", "base URL clients reach the gateway at (default: the scheme and host of each request)")
	f.BoolVar(&o.forwardedFor, "forwarded-for", false, "send coordinators X-Forwarded-For naming each client (Trino refuses it with 406 unless http-server.process-forwarded=true)")
	f.BoolVar(&o.forwardedProto, "forwarded-proto", false, "send coordinators X-Forwarded-Proto: https for clients connected over TLS (--tls-cert), never the clients' own; needs http-server.process-forwarded=true on Trino")
	f.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate to serve https with (with --tls-key)")
	f.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&o.clientCA, "client-ca", "", "PEM CAs whose client certificates the TLS listener accepts (asked for, not required); with --jwt-signing-key")
	f.StringVar(&o.jwtSigningKey, "jwt-signing-key", "", "PEM private key (RSA or Ed25519, mode 600) to sign a short-lived JWT for each client with a certificate from --client-ca, sent to the coordinators in place of its Authorization")
	f.StringVar(&o.jwtKeyID, "jwt-key-id", "", "kid of the tokens --jwt-signing-key signs")
	f.StringVar(&o.jwtIssuer, "jwt-issuer", "", "iss of the tokens (the coordinators' http-server.authentication.jwt.required-issuer)")
	f.StringVar(&o.jwtAudience, "jwt-audience", "", "aud of the tokens (the coordinators' http-server.authentication.jwt.required-audience)")
	f.DurationVar(&o.jwtLifetime, "jwt-lifetime", gateway.DefaultJWTLifetime, "how long a token --jwt-signing-key signs is good for")
	f.DurationVar(&o.drainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long the drain may last at most; requests then in flight are cut")
	f.DurationVar(&o.drainQuiet, "drain-quiet", gateway.DefaultDrainQuiet, "on SIGTERM, exit once no request has come for this long, even with queries still running (their clients reach another replica)")
	f.StringVar(&o.adminListen, "admin-listen", "", "serve the operator pages (/_zk/status, /_zk/status.json, /_zk/metrics) on this address only, not on --listen")
	f.StringVar(&o.adminPasswordFile, "admin-password-file", "", "require this file's password for the operator pages (HTTP basic authentication, any user; or a bearer token)")
	f.DurationVar(&o.noNodesGrace, "no-coordinator-grace", gateway.DefaultNoCoordinatorGrace,
		"how long a group may have no coordinator before statements get a failed query (NO_NODES_AVAILABLE) instead of a 503 clients retry; 0 for at once")
	f.DurationVar(&o.affinityCookie, "affinity-cookie", 0, "set a signed cookie naming the coordinator of each accepted statement, for this long (at most 24h; 0: none), so a client that keeps cookies (python's requests, dbt) stays on it through any replica")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.explain, "explain", "", "print where --config routes this SQL (with the --explain-* request) and why, and the group's coordinators, instead of serving")
	f.StringVar(&o.explainUser, "explain-user", "", "--explain: the request's user")
	f.StringVar(&o.explainSource, "explain-source", "", "--explain: the request's source")
	f.StringVar(&o.explainTags, "explain-tags", "", "--explain: the request's client tags, comma-separated")
	f.StringArrayVar(&o.explainHeaders, "explain-header", nil, "--explain: a request header, 'Name: value' (repeatable)")
	f.StringVar(&o.explainAt, "explain-at", "", "--explain: the time of the request, RFC 3339 (default: now)")
	bindEnv(f, "dsn", "listen", "public-url", "log-level")
	return cmd
}

func (o gatewayOptions) secret() (string, error) {
	if o.secretFile != "" {
		b, err := os.ReadFile(o.secretFile)
		if err != nil {
			return "", fmt.Errorf("--secret-file: %w", err)
		}
		return string(b), nil
	}
	if v := os.Getenv(secretEnv); v != "" {
		return v, nil
	}
	return "", errors.New("--secret-file (or $" + secretEnv + ") is required: the routing-token keys replicas share")
}

// runGateway serves until ctx is done, then drains: it reads the flags,
// opens the groups, starts the gateway's background work, builds its
// handlers and serves them.
func runGateway(ctx context.Context, out, logOut io.Writer, o gatewayOptions) error {
	gwCfg, logger, err := o.gatewayConfig(logOut)
	if err != nil {
		return err
	}
	var stats metrics.StatsSource
	var routingTo string
	if gwCfg.Groups, stats, routingTo, err = o.openGroups(logger); err != nil {
		return err
	}
	gw, err := gateway.New(gwCfg)
	if err != nil {
		gwCfg.Groups.Close()
		return err
	}
	defer gw.Close()
	defer o.startBackground(ctx, gw, logger)()
	if o.config != "" {
		stats = metrics.StatsFunc(func() routing.Stats { return groupStats(gw.Groups()) })
	}
	mux, admin, err := o.handlers(gw, stats)
	if err != nil {
		return err
	}
	return o.serve(ctx, out, gw, mux, admin, routingTo, logger)
}

// gatewayConfig checks the flags that need no file but the secret's and
// returns the gateway's Config from them, without its Groups, and the
// logger at --log-level.
func (o gatewayOptions) gatewayConfig(logOut io.Writer) (gateway.Config, *slog.Logger, error) {
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return gateway.Config{}, nil, err
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	if o.dsn != "" && o.config != "" {
		return gateway.Config{}, nil, errors.New("--dsn and --config: give one of them")
	}
	if o.dsn == "" && o.config == "" {
		return gateway.Config{}, nil, errors.New("--dsn (or $ZKPRESTO_DSN) or --config is required")
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return gateway.Config{}, nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.forwardedProto && o.tlsCert == "" {
		// Without TLS of its own no client reaches the gateway over TLS, so
		// the flag would never send anything.
		return gateway.Config{}, nil, errors.New("--forwarded-proto needs --tls-cert and --tls-key: the gateway sends X-Forwarded-Proto: https only for clients on its own TLS")
	}
	if (o.clientCA == "") != (o.jwtSigningKey == "") {
		return gateway.Config{}, nil, errors.New("--client-ca and --jwt-signing-key go together: the certificates the gateway accepts, the key that signs their tokens")
	}
	if o.clientCA != "" && o.tlsCert == "" {
		return gateway.Config{}, nil, errors.New("--client-ca needs --tls-cert and --tls-key: client certificates come over the gateway's own TLS")
	}
	var certJWT *gateway.CertJWT
	if o.jwtSigningKey != "" {
		key, err := gateway.LoadSigningKey(o.jwtSigningKey)
		if err != nil {
			return gateway.Config{}, nil, fmt.Errorf("--jwt-signing-key: %w", err)
		}
		certJWT = &gateway.CertJWT{Key: key, KeyID: o.jwtKeyID, Issuer: o.jwtIssuer, Audience: o.jwtAudience, Lifetime: o.jwtLifetime}
	}
	if o.drainTimeout <= 0 || o.drainQuiet <= 0 {
		return gateway.Config{}, nil, errors.New("--drain-timeout and --drain-quiet must be positive")
	}
	grace := o.noNodesGrace
	switch {
	case grace < 0:
		return gateway.Config{}, nil, errors.New("--no-coordinator-grace must not be negative")
	case grace == 0:
		grace = -1 // the Config's "none"
	}
	if o.affinityCookie != 0 && (o.affinityCookie < time.Second || o.affinityCookie > gateway.MaxAffinityCookieAge) {
		return gateway.Config{}, nil, errors.New("--affinity-cookie: want 0 (no cookie) or 1s to 24h")
	}
	secret, err := o.secret()
	if err != nil {
		return gateway.Config{}, nil, err
	}
	return gateway.Config{Keys: secret, PublicURL: o.publicURL, Logger: logger, NoCoordinatorGrace: grace, ForwardedFor: o.forwardedFor, ForwardedProto: o.forwardedProto,
		AffinityCookie: o.affinityCookie, ClientCertJWT: certJWT}, logger, nil
}

// openGroups opens the groups statements are routed through: the one
// group of --dsn, whose Router is then also the metrics' source, or those
// of --config. routingTo says which, for the first line printed.
func (o gatewayOptions) openGroups(logger *slog.Logger) (groups *gateway.Groups, stats metrics.StatsSource, routingTo string, err error) {
	if o.dsn == "" {
		if groups, err = gateway.LoadConfig(o.config, gateway.BuildOptions{Logger: logger}); err != nil {
			return nil, nil, "", fmt.Errorf("--config: %w", err)
		}
		return groups, nil, "the groups of " + o.config, nil
	}
	cfg, err := zkdriver.ParseDSN(o.dsn)
	if err != nil {
		return nil, nil, "", err
	}
	group, err := gateway.DSNGroup(gateway.DefaultGroup, cfg, logger)
	if err != nil {
		return nil, nil, "", err
	}
	if groups, err = gateway.NewGroups([]*gateway.Group{group}, nil, true); err != nil {
		return nil, nil, "", err
	}
	return groups, group.Router, cfg.String(), nil
}

// startBackground starts what the gateway does besides serving: opening
// discovery now, and with --config, reloading it on SIGHUP and when it
// changes. The function it returns stops both and waits for them.
func (o gatewayOptions) startBackground(ctx context.Context, gw *gateway.Gateway, logger *slog.Logger) (stop func()) {
	// Discovery opens now, not at the first statement, so that an
	// unreachable ZooKeeper or an empty namespace is in the log (discovery
	// writes it, once per outage) before any client comes.
	openCtx, stopOpening := context.WithCancel(ctx)
	opening := make(chan struct{})
	go func() { defer close(opening); openUntilReady(openCtx, gw, gatewayOpenRetry) }()
	if o.config == "" {
		return func() { stopOpening(); <-opening }
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		gateway.WatchConfig(watchCtx, gw, o.config, gateway.BuildOptions{Logger: logger}, hup, gateway.ConfigPollInterval)
	}()
	return func() {
		stopWatch()
		<-watched
		signal.Stop(hup)
		stopOpening()
		<-opening
	}
}

// handlers returns what serves --listen, mux (the gateway, /_zk/health,
// and the operator pages unless --admin-listen is given), and what serves
// the operator pages, admin: mux itself without --admin-listen.
func (o gatewayOptions) handlers(gw *gateway.Gateway, stats metrics.StatsSource) (mux, admin *http.ServeMux, err error) {
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(
		metrics.NewDriverCollector(stats),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	promReg.MustRegister(metrics.NewGatewayCollector(gw), metrics.NewExternalRoutingCollector(gw))
	health := func(w http.ResponseWriter, r *http.Request) {
		if gw.Draining() {
			// Load balancers take the replica out; its queries go on.
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		if err := gw.Open(r.Context()); err != nil {
			http.Error(w, "no coordinators: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}
	mux = http.NewServeMux()
	mux.Handle("/", gw)
	mux.HandleFunc("GET /_zk/health", health) // for load balancers, always here
	admin = mux
	if o.adminListen != "" {
		admin = http.NewServeMux()
		admin.HandleFunc("GET /_zk/health", health)
		// Not here: plainly, rather than as a routing token that fails.
		for _, path := range []string{"/_zk/status", "/_zk/status.json", "/_zk/metrics", "/_zk/drain", "/_zk/undrain"} {
			mux.Handle(path, http.NotFoundHandler())
		}
	}
	guard, err := adminGuard(o.adminPasswordFile)
	if err != nil {
		return nil, nil, err
	}
	pages := http.NewServeMux()
	gw.HandleStatus(pages)
	pages.Handle("GET /_zk/metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	for _, pattern := range []string{"GET /_zk/status", "GET /_zk/status.json", "GET /_zk/metrics"} {
		admin.Handle(pattern, guard(pages))
	}
	admin.Handle("POST /_zk/drain", guard(coordinatorDrainHandler(gw, true)))
	admin.Handle("POST /_zk/undrain", guard(coordinatorDrainHandler(gw, false)))
	// GET / leads an operator's browser to the status page.
	admin.Handle("GET /{$}", http.RedirectHandler("/_zk/status", http.StatusFound))
	return mux, admin, nil
}

// serve listens on --listen (with TLS when --tls-cert is given) and on
// --admin-listen when given, says where on out, and serves mux and admin
// there until ctx is done, then drains.
func (o gatewayOptions) serve(ctx context.Context, out io.Writer, gw *gateway.Gateway, mux, admin *http.ServeMux, routingTo string, logger *slog.Logger) error {
	var adminSrv *gateway.Server
	var adminLn net.Listener
	if o.adminListen != "" {
		var err error
		if adminLn, err = net.Listen("tcp", o.adminListen); err != nil {
			return fmt.Errorf("--admin-listen: %w", err)
		}
		defer adminLn.Close()
		adminSrv = gateway.NewServer(admin, logger, gateway.ServerLimits{})
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	var tlsConfig *tls.Config
	scheme := "http"
	if o.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		scheme = "https"
		if o.clientCA != "" {
			data, err := os.ReadFile(o.clientCA)
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(data) {
				ln.Close()
				return fmt.Errorf("--client-ca %s: no PEM certificate could be read (%v)", o.clientCA, err)
			}
			// Asked for, not required: clients with credentials of their
			// own pass through as without --client-ca.
			tlsConfig.ClientAuth, tlsConfig.ClientCAs = tls.VerifyClientCertIfGiven, pool
		}
	}
	fmt.Fprintf(out, "zkpresto gateway on %s://%s, routing to %s\n", scheme, ln.Addr(), routingTo)
	if adminSrv != nil {
		fmt.Fprintf(out, "operator pages at http://%s/_zk/status\n", adminLn.Addr())
		adminServed := make(chan error, 1)
		go func() { adminServed <- adminSrv.Serve(adminLn) }()
		defer func() {
			adminSrv.Close()
			<-adminServed
		}()
	}
	return serveGateway(ctx, ln, tlsConfig, mux, gw, logger, o.drainTimeout, o.drainQuiet)
}

// gatewayOpenRetry is how often the gateway tries again to open discovery
// that failed to open at start.
const gatewayOpenRetry = 5 * time.Second

// openUntilReady opens gw's discovery, and again every retry while that
// fails (ZooKeeper unreachable, or no coordinator listed yet), until it
// succeeds or ctx ends. Statements open it too; this only makes it happen
// before the first of them.
func openUntilReady(ctx context.Context, gw *gateway.Gateway, retry time.Duration) {
	t := time.NewTicker(retry)
	defer t.Stop()
	for {
		attempt, cancel := context.WithTimeout(ctx, retry)
		err := gw.Open(attempt)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// adminGuard returns what wraps the operator pages: nothing without a
// password file; with one, a check of the password, the file's first line (HTTP basic
// authentication with any user, as a browser sends it, or a bearer token,
// as Prometheus can), compared in constant time.
func adminGuard(file string) (func(http.Handler) http.Handler, error) {
	if file == "" {
		return func(h http.Handler) http.Handler { return h }, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--admin-password-file: %w", err)
	}
	// The first line: what follows may note when and by whom it was set.
	first, _, _ := strings.Cut(string(b), "\n")
	password := strings.TrimSpace(first)
	if password == "" {
		return nil, fmt.Errorf("--admin-password-file %s: the first line, the password, is empty", file)
	}
	want := sha256.Sum256([]byte(password))
	matches := func(got string) bool {
		sum := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, basic, hasBasic := r.BasicAuth()
			bearer, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if (hasBasic && matches(basic)) || (hasBearer && matches(bearer)) {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="zkpresto gateway", charset="UTF-8"`)
			http.Error(w, "zkpresto gateway: the operator pages need the password (--admin-password-file)", http.StatusUnauthorized)
		})
	}, nil
}

// groupStats merges the groups' figures for the metrics: every coordinator
// once (one listed in two groups shows the first group's view), the
// strategy and sources of all.
func groupStats(groups []*gateway.Group) routing.Stats {
	var out routing.Stats
	seen := map[string]bool{}
	var sources []string
	for _, gr := range groups {
		s := gr.Router.Stats()
		out.Strategy = s.Strategy
		sources = append(sources, gr.Name+": "+s.Discovery.Source)
		d := &out.Discovery
		d.Open = d.Open || s.Discovery.Open
		d.Connected = d.Connected || s.Discovery.Connected
		d.Generation += s.Discovery.Generation
		d.Skipped += s.Discovery.Skipped
		if s.Discovery.LastChange.After(d.LastChange) {
			d.LastChange = s.Discovery.LastChange
		}
		if s.Discovery.Problem != "" {
			d.Problem = strings.TrimPrefix(d.Problem+"; ", "; ") + gr.Name + ": " + s.Discovery.Problem
		}
		for _, n := range s.Nodes {
			if !seen[n.Node.Addr] {
				seen[n.Node.Addr] = true
				out.Nodes = append(out.Nodes, n)
			}
		}
	}
	out.Discovery.Source = strings.Join(sources, ", ")
	out.Discovery.Nodes = len(out.Nodes)
	return out
}
