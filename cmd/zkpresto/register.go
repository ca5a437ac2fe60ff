package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/cli"
	"github.com/zkpresto/zkpresto/metrics"
	"github.com/zkpresto/zkpresto/registrar"
)

func init() { subcommands = append(subcommands, newRegisterCommand) }

type registerOptions struct {
	zookeeper        string
	namespace        string
	advertise        string
	coordinator      string
	weight           int
	zone             string
	webUI            string
	version          string
	interval         time.Duration
	failureThreshold int
	sessionTimeout   time.Duration
	auth             string
	authFile         string
	tls              bool
	tlsCA            string
	tlsCert          string
	tlsKey           string
	tlsServerName    string
	metricsAddr      string
	logLevel         string
	loadSource       string
	loadInterval     time.Duration
	loadThreshold    int
	loadMinGap       time.Duration
	loadBurst        int
	loadRefresh      time.Duration
	loadSlots        int
	loadUser         string
	loadPassword     string
	loadPasswordFile string
	minWorkers       int
	workersSource    string
	unlistNotReady   bool
}

func newRegisterCommand() *cobra.Command {
	var o registerOptions
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Keep a coordinator registered in ZooKeeper while it is healthy (a sidecar)",
		Long: `register runs beside a Presto (or Trino) coordinator and registers it in
ZooKeeper, because Presto coordinators do not register themselves.

Every --interval it polls the coordinator's GET /v1/info. While the coordinator
answers and is not "starting", register holds an ephemeral-sequential znode
under /<namespace> that zkpresto clients (and Hive/Kyuubi-style readers) find:

  name  serverUri=host:port;version=V;sequence=N
  data  uri=http://host:port;weight=W;zone=Z;version=V;

A coordinator that answers but takes no work is marked not ready at once, in
its registration's data (notready=REASON;), which zkpresto's driver and
gateway skip while another coordinator is ready: "starting": true in
/v1/info (starting), GET /v1/info/state SHUTTING_DOWN, DRAINING or DRAINED,
fewer active workers than --min-workers (workers:N/M; read from Trino's node
manager mbean or PrestoDB's /v1/cluster, as --workers-source says), or an
operator's drain (drained; see zkpresto drain). The mark goes when the
coordinator is ready again. --unlist-not-ready removes the registration
instead, for a namespace also read by clients that know no mark (Hive or
Kyuubi readers, older zkpresto releases). A coordinator that fails
--failure-threshold checks in a row (errors, timeouts, non-200) is
deregistered, and registered again as soon as a check passes. If the
ZooKeeper session expires, or someone deletes the znode, register creates it
again. On SIGTERM or SIGINT it deletes the znode first, then closes its
session and exits 0, so clients stop picking the coordinator before it goes.

With --load-source presto (GET /v1/cluster) or trino (GET
/v1/jmx/mbean/trino.execution:name=QueryManager), register also reads the
coordinator's running and queued queries every --load-interval and writes
them into its own znode's data (load=running,queued,slots,ms;) when they
moved by --load-threshold, at most once per --load-min-gap on average (in
bursts of up to --load-burst) and at least once per --load-refresh, for
clients using the shared_p2c strategy. A read that fails takes the figure
out, so that clients balance on their own counts.
--load-user (and the password, best from $ZKPRESTO_LOAD_PASSWORD or
--load-password-file) are sent with the reads.

Every flag can also be set through the environment variable named after it
(ZKPRESTO_ plus the flag name in upper case, '-' as '_'); a flag given on the
command line wins. Credentials are never logged; prefer
ZKPRESTO_ZOOKEEPER_AUTH or --zookeeper-auth-file over --zookeeper-auth, which
other users can see in the process list.`,
		Example: `  # Beside a coordinator on this host, advertised under its network address:
  zkpresto register --zookeeper zk1:2181,zk2:2181,zk3:2181 \
      --advertise http://10.0.0.5:8080 --coordinator http://127.0.0.1:8080 \
      --weight 2 --zone eu-west-1a --metrics-addr :9465

  # The same settings from the environment (systemd EnvironmentFile=):
  ZKPRESTO_ZOOKEEPER=zk1:2181 ZKPRESTO_ADVERTISE=http://10.0.0.5:8080 zkpresto register

  # ZooKeeper with digest authentication and TLS:
  ZKPRESTO_ZOOKEEPER_AUTH=presto:secret zkpresto register --zookeeper zk1:2281 \
      --zookeeper-tls-ca /etc/zookeeper/ca.pem --advertise https://10.0.0.5:8443`,
		Args:    cobra.NoArgs,
		PreRunE: applyEnvHook,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			return runRegister(ctx, cmd.ErrOrStderr(), o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.zookeeper, "zookeeper", "", "ZooKeeper ensemble, host:port,... (required)")
	f.StringVar(&o.namespace, "namespace", registrar.DefaultNamespace, "znode under which coordinators register (the DSN's zooKeeperNamespace)")
	f.StringVar(&o.advertise, "advertise", "", "the coordinator's address for clients: http(s)://host:port (required)")
	f.StringVar(&o.coordinator, "coordinator", "", "where to poll /v1/info, http(s)://host:port (default: --advertise)")
	f.IntVar(&o.weight, "weight", 1, "weight for the weighted strategies, 1..1000000")
	f.StringVar(&o.zone, "zone", "", "zone label clients may prefer")
	f.StringVar(&o.webUI, "web-ui", "", "where users reach the coordinator's web UI, http[s]://host[:port][/prefix], when not at --advertise (the gateway sends infoUri there)")
	f.StringVar(&o.version, "version", "", "registered Presto version (default: the coordinator's, from /v1/info)")
	f.DurationVar(&o.interval, "interval", registrar.DefaultInterval, "time between health checks (also each check's timeout)")
	f.IntVar(&o.failureThreshold, "failure-threshold", registrar.DefaultFailureThreshold, "consecutive failed checks that deregister the coordinator")
	f.DurationVar(&o.sessionTimeout, "session-timeout", registrar.DefaultSessionTimeout, "ZooKeeper session timeout")
	o.zooKeeperSecurityFlags(f)
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on this address, e.g. :9465 (default: off)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.loadSource, "load-source", "", "publish the coordinator's load for shared_p2c, read from: presto (/v1/cluster) or trino (the QueryManager mbean); default off")
	f.DurationVar(&o.loadInterval, "load-interval", registrar.DefaultLoadInterval, "how often to read the coordinator's load")
	f.IntVar(&o.loadThreshold, "load-threshold", registrar.DefaultLoadThreshold, "how far running+queued must move for a write")
	f.DurationVar(&o.loadMinGap, "load-min-gap", registrar.DefaultLoadMinGap, "least time between two load writes (the write budget)")
	f.IntVar(&o.loadBurst, "load-burst", registrar.DefaultLoadBurst, "how many load writes may come closer than --load-min-gap after quieter spells")
	f.DurationVar(&o.loadRefresh, "load-refresh", registrar.DefaultLoadRefresh, "longest an unchanged load figure goes unwritten")
	f.IntVar(&o.loadSlots, "load-slots", 0, "publish this as the coordinator's concurrency (its hard concurrency limit): clients then prefer a free slot, and the registrar writes when the last one fills or the first one frees")
	f.StringVar(&o.loadUser, "load-user", "", "user the load is read as (X-Presto-User or X-Trino-User, and basic authentication with the password; default "+registrar.DefaultLoadUser+": Trino refuses its JMX resource to a request that names none)")
	f.StringVar(&o.loadPassword, "load-password", "", "password for --load-user (visible in ps; prefer the environment variable or --load-password-file)")
	f.StringVar(&o.loadPasswordFile, "load-password-file", "", "file holding the password for --load-user")
	f.IntVar(&o.minWorkers, "min-workers", 1, "active workers the coordinator needs to be ready; 0 reads none (a coordinator that schedules on itself, node-scheduler.include-coordinator=true)")
	f.StringVar(&o.workersSource, "workers-source", "", "where --min-workers reads the active workers: trino (the node manager mbean) or presto (/v1/cluster); default --load-source's, else whichever answers")
	f.BoolVar(&o.unlistNotReady, "unlist-not-ready", false, "remove the registration of a coordinator that is not ready instead of marking it notready=")
	bindEnv(f)
	return cmd
}

// envName is the environment variable that sets a flag.
func envName(flag string) string {
	return "ZKPRESTO_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envBound marks the flags that read an environment variable.
const envBound = "zkpresto_env"

// bindEnv lets the named flags (all of them when none are named) be set
// from their environment variables, and says so in their usage.
func bindEnv(f *pflag.FlagSet, names ...string) {
	f.VisitAll(func(fl *pflag.Flag) {
		if len(names) > 0 && !slices.Contains(names, fl.Name) {
			return
		}
		fl.Usage += " [$" + envName(fl.Name) + "]"
		f.SetAnnotation(fl.Name, envBound, []string{envName(fl.Name)})
	})
}

// applyEnv sets every env-bound flag not given on the command line from its
// environment variable, if that is set, except the flags named in skip.
func applyEnv(f *pflag.FlagSet, skip ...string) error {
	var errs []error
	f.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed || fl.Annotations[envBound] == nil || slices.Contains(skip, fl.Name) {
			return
		}
		v, ok := os.LookupEnv(envName(fl.Name))
		if !ok {
			return
		}
		// Only string flags can hold a secret, and setting one never
		// fails, so the value may be quoted here.
		if err := f.Set(fl.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("$%s=%s: %w", envName(fl.Name), v, err))
		}
	})
	return errors.Join(errs...)
}

// applyEnvHook is applyEnv as a command's PreRunE, for the commands whose
// flags bindEnv bound.
func applyEnvHook(cmd *cobra.Command, _ []string) error {
	return applyEnv(cmd.Flags())
}

// registrarConfig turns the options into a registrar.Config.
func (o registerOptions) registrarConfig(logger *slog.Logger) (registrar.Config, error) {
	if o.zookeeper == "" {
		return registrar.Config{}, errors.New("--zookeeper (or $ZKPRESTO_ZOOKEEPER) is required")
	}
	if o.advertise == "" {
		return registrar.Config{}, errors.New("--advertise (or $ZKPRESTO_ADVERTISE) is required: the coordinator's address for clients, http(s)://host:port")
	}
	if o.weight < 1 {
		return registrar.Config{}, fmt.Errorf("--weight %d: must be at least 1", o.weight)
	}
	cfg := registrar.Config{
		Namespace:        o.namespace,
		AdvertiseURI:     o.advertise,
		CoordinatorURL:   o.coordinator,
		Weight:           o.weight,
		Zone:             o.zone,
		WebUI:            o.webUI,
		Version:          o.version,
		Interval:         o.interval,
		FailureThreshold: o.failureThreshold,
		SessionTimeout:   o.sessionTimeout,
		MinWorkers:       o.minWorkers,
		WorkersSource:    registrar.LoadSource(strings.ToLower(o.workersSource)),
		UnlistNotReady:   o.unlistNotReady,
		Logger:           logger,
	}
	for _, s := range strings.Split(o.zookeeper, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(s, "2181") // ZooKeeper's default port, as in the DSN
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	auth := o.auth
	if o.authFile != "" {
		if auth != "" {
			return cfg, errors.New("--zookeeper-auth and --zookeeper-auth-file both given; use one")
		}
		b, err := os.ReadFile(o.authFile)
		if err != nil {
			return cfg, fmt.Errorf("--zookeeper-auth-file: %w", err)
		}
		auth = strings.TrimSpace(string(b))
	}
	if auth != "" {
		if user, _, ok := strings.Cut(auth, ":"); !ok || user == "" {
			return cfg, errors.New("ZooKeeper credentials: want user:password")
		}
		cfg.Auth = &registrar.Auth{Scheme: "digest", Credentials: []byte(auth)}
	}
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return cfg, err
	}
	cfg.TLS = tlsCfg
	if cfg.Load, err = o.loadPublishing(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// loadPublishing returns the load publishing the --load-* flags describe,
// nil without --load-source.
func (o registerOptions) loadPublishing() (*registrar.LoadPublishing, error) {
	if o.loadSource == "" {
		if o.loadUser != "" || o.loadPassword != "" || o.loadPasswordFile != "" || o.loadSlots != 0 {
			return nil, errors.New("--load-user, --load-password(-file) and --load-slots need --load-source")
		}
		return nil, nil
	}
	password := o.loadPassword
	if o.loadPasswordFile != "" {
		if password != "" {
			return nil, errors.New("--load-password and --load-password-file both given; use one")
		}
		b, err := os.ReadFile(o.loadPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("--load-password-file: %w", err)
		}
		password = strings.TrimSpace(string(b))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--load-interval", o.loadInterval}, {"--load-min-gap", o.loadMinGap}, {"--load-refresh", o.loadRefresh}} {
		if d.v <= 0 {
			return nil, fmt.Errorf("%s %s: must be positive", d.flag, d.v)
		}
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--load-threshold", o.loadThreshold}, {"--load-burst", o.loadBurst}} {
		if n.v < 1 {
			return nil, fmt.Errorf("%s %d: must be at least 1", n.flag, n.v)
		}
	}
	return &registrar.LoadPublishing{
		Source: registrar.LoadSource(strings.ToLower(o.loadSource)), Interval: o.loadInterval, Threshold: o.loadThreshold,
		MinGap: o.loadMinGap, Burst: o.loadBurst, Refresh: o.loadRefresh, Slots: o.loadSlots, User: o.loadUser, Password: password,
	}, nil
}

// tlsConfig builds the TLS configuration for ZooKeeper from the PEM files,
// or returns nil when TLS is off.
func (o registerOptions) tlsConfig() (*tls.Config, error) {
	if !o.tls && o.tlsCA == "" && o.tlsCert == "" && o.tlsKey == "" && o.tlsServerName == "" {
		return nil, nil
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, errors.New("--zookeeper-tls-cert and --zookeeper-tls-key go together")
	}
	files := discovery.ZooKeeperTLS{CAFile: o.tlsCA, CertFile: o.tlsCert, KeyFile: o.tlsKey, ServerName: o.tlsServerName}
	cfg, err := files.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("--zookeeper-tls-ca, --zookeeper-tls-cert, --zookeeper-tls-key: %w", err)
	}
	return cfg, nil
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func runRegister(ctx context.Context, logOut io.Writer, o registerOptions) error {
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	cfg, err := o.registrarConfig(logger)
	if err != nil {
		return err
	}
	reg, err := registrar.New(cfg)
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		stopMetrics, err := serveRegistrarMetrics(o.metricsAddr, reg, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	return reg.Run(ctx)
}

// serveRegistrarMetrics serves /metrics and /healthz on addr until the
// returned function is called. /healthz answers 200 while the registrar
// runs: the sidecar is alive even while its coordinator is not.
func serveRegistrarMetrics(addr string, reg *registrar.Registrar, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(
		metrics.NewRegistrarCollector(reg.Status),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		s := reg.Status()
		fmt.Fprintf(w, "ok registered=%t coordinator_healthy=%t zookeeper_connected=%t\n", s.Registered, s.Healthy, s.Connected)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "err", err)
		}
	}()
	logger.Info("serving /metrics and /healthz", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

// zooKeeperSecurityFlags defines the flags of register's ZooKeeper
// credentials and TLS, which drain and undrain take too.
func (o *registerOptions) zooKeeperSecurityFlags(f *pflag.FlagSet) {
	f.StringVar(&o.auth, "zookeeper-auth", "", "ZooKeeper digest credentials user:password (visible in ps; prefer the environment variable or --zookeeper-auth-file)")
	f.StringVar(&o.authFile, "zookeeper-auth-file", "", "file holding the ZooKeeper digest credentials user:password")
	f.BoolVar(&o.tls, "zookeeper-tls", false, "talk TLS to ZooKeeper (implied by the other --zookeeper-tls-* flags)")
	f.StringVar(&o.tlsCA, "zookeeper-tls-ca", "", "PEM file of the CA that signed the ZooKeeper servers' certificates (default: the system's)")
	f.StringVar(&o.tlsCert, "zookeeper-tls-cert", "", "PEM client certificate for ZooKeeper (with --zookeeper-tls-key)")
	f.StringVar(&o.tlsKey, "zookeeper-tls-key", "", "PEM private key of --zookeeper-tls-cert")
	f.StringVar(&o.tlsServerName, "zookeeper-tls-server-name", "", "name to verify in the servers' certificates (default: each server's host)")
}
