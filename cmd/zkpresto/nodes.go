package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/discovery"
	zkdriver "github.com/zkpresto/zkpresto/driver"
	"github.com/zkpresto/zkpresto/internal/cli"
	"github.com/zkpresto/zkpresto/internal/wire"
)

func init() { subcommands = append(subcommands, newNodesCommand) }

type nodesOptions struct {
	dsn        string
	zookeeper  string
	namespace  string
	json       bool
	watch      bool
	interval   time.Duration
	probe      bool
	metricsURL string
	timeout    time.Duration
	logLevel   string
	waitFor    int
}

// waitPoll is how often --wait-for looks again: often enough that a
// script waiting for a registrar goes on within a blink of it.
const waitPoll = 100 * time.Millisecond

func newNodesCommand() *cobra.Command {
	var o nodesOptions
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "List the coordinators the driver would see for a DSN",
		Long: `nodes opens discovery exactly as the driver does for the DSN and lists the
coordinators it finds: address, the node format the registration was read
from (zkpresto, hive, curator, hostport; static for a DSN without discovery),
weight, zone, version and ID (the znode or Curator instance).

READY is "yes", or "no:" and the reason the coordinator's registrar marked
it not ready with (notready=: starting, SHUTTING_DOWN, workers:0/1, drained;
see register and drain): the driver and the gateway send such a coordinator
no new statement while another is ready.

--probe asks each coordinator's GET /v1/info and fills HEALTH: up, starting
(the coordinator says it is not ready) or down (no answer, an error status, a
redirect, or not a Presto answer), the verdict the driver's health checks and
register reach for the same answer. Without --probe HEALTH is "-".

--metrics reads an application's Prometheus endpoint (one that exports
zkpresto's driver collector) and adds that process's PICKS, FAILURES and
INFLIGHT per coordinator, so you see what a running service is doing.

--watch keeps the view live: it prints the list again whenever it changes,
until interrupted. With --json each print is one JSON array on one line.
Meanwhile stderr says what changed, once per change (--log-level info is
its default): coordinators found, joining, leaving and ejected, an empty
namespace, ZooKeeper unreachable, a session lost, expired or restored.

--wait-for N waits until N usable coordinators are listed (with --probe,
N that are up), at most --timeout, then prints the list once: what a
script that has just started registrars runs before its first query. It
exits non-zero when they do not show up in time.

Without --watch, nodes exits non-zero when there is no usable coordinator:
none listed, or with --probe none up. An empty list is explained on stderr:
discovery's problem (a missing namespace, no children, no permission) and
each registration that was skipped, with why it could not be read.`,
		Example: `  zkpresto nodes --dsn 'presto://zk1:2181/hive;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=presto'
  ZKPRESTO_DSN='presto://127.0.0.1:2181;serviceDiscoveryMode=zooKeeper' zkpresto nodes --probe
  zkpresto nodes --json | jq -r '.[].address'
  zkpresto nodes --probe --wait-for 2 --timeout 30s   # after starting two registrars
  zkpresto nodes --watch --probe --metrics http://app:9090/metrics`,
		Args:    cobra.NoArgs,
		PreRunE: applyLocationEnv,
		RunE: cli.RunUntilSignal(func(ctx context.Context, cmd *cobra.Command, _ []string) error {
			if o.watch && !cmd.Flags().Changed("log-level") {
				// A watch is also told, on stderr, what changed and why:
				// coordinators joining, leaving, ejected, ZooKeeper lost.
				o.logLevel = "info"
			}
			return runNodes(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.dsn, "dsn", "", "the zkpresto DSN (or --zookeeper)")
	f.StringVar(&o.zookeeper, "zookeeper", "", "the ZooKeeper ensemble, host[:port],... (instead of --dsn)")
	f.StringVar(&o.namespace, "namespace", "", "the namespace znode over the DSN's (default presto)")
	f.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	f.BoolVar(&o.watch, "watch", false, "print again whenever the list changes, until interrupted")
	f.DurationVar(&o.interval, "interval", time.Second, "with --watch: how often to look for changes (and probe)")
	f.BoolVar(&o.probe, "probe", false, "ask each coordinator's /v1/info for its health")
	f.StringVar(&o.metricsURL, "metrics", "", "Prometheus endpoint of a process using the driver, for its per-node counts")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound for connecting to ZooKeeper, each probe and the metrics request")
	f.StringVar(&o.logLevel, "log-level", "error", "driver and discovery logs on stderr: debug, info, warn or error (info with --watch)")
	f.IntVar(&o.waitFor, "wait-for", 0, "wait (at most --timeout) until this many usable coordinators are listed (up, with --probe), then print")
	bindLocationEnv(f)
	return cmd
}

// nodeRow is one line of the nodes output and one object of its JSON.
type nodeRow struct {
	Address  string            `json:"address"`
	Scheme   string            `json:"scheme"`
	Format   string            `json:"format"`
	Weight   int               `json:"weight"`
	Zone     string            `json:"zone,omitempty"`
	Version  string            `json:"version,omitempty"`
	ID       string            `json:"id"`
	Ready    bool              `json:"ready"`
	NotReady string            `json:"notReady,omitempty"`
	Health   string            `json:"health,omitempty"`
	Usage    *nodeUsage        `json:"usage,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// nodeUsage is what a process that uses the driver reports for a node.
type nodeUsage struct {
	Picks    uint64 `json:"picks"`
	Failures uint64 `json:"failures"`
	InFlight int64  `json:"inFlight"`
}

func runNodes(ctx context.Context, out, errOut io.Writer, o nodesOptions) error {
	cfg, err := discoveryConfig(o.dsn, o.zookeeper, o.namespace)
	if err != nil {
		return err
	}
	if o.interval <= 0 || o.timeout <= 0 {
		return errors.New("--interval and --timeout must be positive")
	}
	if o.waitFor < 0 {
		return fmt.Errorf("--wait-for %d: must not be negative", o.waitFor)
	}
	if o.waitFor > 0 && o.watch {
		return errors.New("--wait-for and --watch do not go together: --watch waits by itself")
	}
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return err
	}
	logOut := &detachableWriter{w: errOut}
	skips := &skipRecorder{Handler: slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}), state: &skipState{}}
	connector, err := zkdriver.NewConnector(cfg, zkdriver.WithLogger(slog.New(skips)))
	if err != nil {
		return err
	}
	defer connector.Close()
	defer logOut.detach() // closing discovery logs its disconnection

	if note := strategyFallbackNote(cfg.Strategy); note != "" {
		fmt.Fprintln(errOut, note)
	}
	start := time.Now()
	openCtx, cancel := context.WithTimeout(ctx, o.timeout)
	snap, err := connector.Nodes(openCtx)
	cancel()
	if err != nil {
		return err
	}
	var last []byte
	for {
		rows, note, err := collectNodes(ctx, connector, snap, o, skips.skipped())
		for o.waitFor > 0 && (err != nil || countUsable(rows, o.probe) < o.waitFor) && time.Since(start) < o.timeout {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(waitPoll):
			}
			if snap, err = connector.Nodes(ctx); err != nil {
				return err
			}
			rows, note, err = collectNodes(ctx, connector, snap, o, skips.skipped())
		}
		if err != nil && !o.watch {
			return err
		}
		if err != nil {
			note = err.Error()
		}
		var buf bytes.Buffer
		if err := writeNodes(&buf, rows, o.json, o.watch); err != nil {
			return err
		}
		if !bytes.Equal(buf.Bytes(), last) {
			if o.watch && !o.json {
				fmt.Fprintf(out, "%s  %s  %s\n", time.Now().Format(time.DateTime), snap.Source, countOf(len(rows), "coordinator"))
			}
			if _, err := out.Write(buf.Bytes()); err != nil {
				return err
			}
			if note != "" {
				fmt.Fprintln(errOut, note)
			}
			if o.watch && !o.json {
				fmt.Fprintln(out)
			}
			last = buf.Bytes()
		}
		if !o.watch {
			if err := usable(rows, o.probe); err != nil {
				return fmt.Errorf("%s: %w", snap.Source, err)
			}
			if n := countUsable(rows, o.probe); n < o.waitFor {
				return fmt.Errorf("%s: %d usable coordinators after waiting %s for %d", snap.Source, n, o.timeout, o.waitFor)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: the normal end of --watch
		case <-time.After(o.interval):
		}
		if snap, err = connector.Nodes(ctx); err != nil {
			return err
		}
	}
}

// collectNodes turns a snapshot into rows, probing and joining usage as
// asked. note explains an empty list.
func collectNodes(ctx context.Context, connector *zkdriver.Connector, snap *discovery.Snapshot, o nodesOptions, skipped []string) (rows []nodeRow, note string, err error) {
	rows = make([]nodeRow, len(snap.Nodes))
	for i, n := range snap.Nodes {
		rows[i] = nodeRow{Address: n.Addr, Scheme: n.Scheme, Format: n.Format.String(), Weight: n.Weight,
			Zone: n.Zone, Version: n.Version, ID: n.ID, Ready: n.Ready(), NotReady: n.NotReady, Metadata: n.Metadata}
	}
	view := driverView(connector)
	if len(rows) == 0 {
		note = "no coordinators in " + snap.Source
		if view.problem != "" {
			note += ": " + view.problem
		}
	}
	if n := max(view.skipped, len(skipped)); n > 0 {
		if note != "" {
			note += "\n"
		}
		note += plural(n, "registration") + " skipped in " + snap.Source
		if len(skipped) > 0 {
			note += ":\n  " + strings.Join(skipped, "\n  ")
		}
	}
	if o.probe {
		var wg sync.WaitGroup
		for i := range rows {
			wg.Go(func() { rows[i].Health = probeHealth(ctx, &snap.Nodes[i], o.timeout) })
		}
		wg.Wait()
	}
	usage := view.usage
	if o.metricsURL != "" {
		if usage, err = scrapeUsage(ctx, o.metricsURL, o.timeout); err != nil {
			return rows, note, err
		}
	}
	for i := range rows {
		if u, ok := usage[rows[i].Address]; ok {
			rows[i].Usage = &u
		}
	}
	return rows, note, nil
}

// driverState is what the nodes command would like from the connector
// beyond its snapshot.
type driverState struct {
	problem string               // why discovery lists nothing
	skipped int                  // registrations that could not be parsed
	usage   map[string]nodeUsage // by address; nil when unknown
}

// driverView is the one place that reads the connector's own figures.
// Usage is left out while this process has run no statement (a plain
// `zkpresto nodes`), where all-zero columns would only mislead; --metrics
// reads another process's instead.
func driverView(c *zkdriver.Connector) driverState {
	st := c.Stats()
	view := driverState{problem: st.Discovery.Problem, skipped: st.Discovery.Skipped}
	for _, n := range st.Nodes {
		if n.Picks == 0 {
			continue
		}
		if view.usage == nil {
			view.usage = make(map[string]nodeUsage, len(st.Nodes))
		}
		view.usage[n.Node.Addr] = nodeUsage{Picks: n.Picks, Failures: n.Failures, InFlight: n.InFlight}
	}
	return view
}

// usable returns an error unless rows hold a coordinator a statement could
// go to: any, or with probe one that is up.
func usable(rows []nodeRow, probe bool) error {
	if len(rows) == 0 {
		return errors.New("no usable coordinator: none listed")
	}
	if !probe {
		return nil
	}
	for _, r := range rows {
		if r.Health == "up" {
			return nil
		}
	}
	return fmt.Errorf("no usable coordinator: none of the %d listed is up", len(rows))
}

// countUsable counts the rows a statement could go to: all of them, or
// with probe those that are up.
func countUsable(rows []nodeRow, probe bool) int {
	if !probe {
		return len(rows)
	}
	n := 0
	for _, r := range rows {
		if r.Health == "up" {
			n++
		}
	}
	return n
}

// skipState is what a skipRecorder and its derived handlers share.
type skipState struct {
	mu      sync.Mutex
	skipped []string
}

// skipRecorder passes records on to Handler at its level and keeps, at any
// level, discovery's reports of registrations it skipped ("child: why"),
// which explain an empty list.
type skipRecorder struct {
	slog.Handler
	state *skipState
}

// Enabled lets warnings through for the recorder even below the level.
func (h *skipRecorder) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.Handler.Enabled(ctx, l)
}

// Handle records a skipped registration and passes the record on.
func (h *skipRecorder) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "skipping a child") {
		var child, why string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "child":
				child = a.Value.String()
			case "err":
				why = a.Value.String()
			}
			return true
		})
		h.state.mu.Lock()
		h.state.skipped = append(h.state.skipped, child+": "+why)
		h.state.mu.Unlock()
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

// WithAttrs keeps recording in the derived handler.
func (h *skipRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &skipRecorder{Handler: h.Handler.WithAttrs(attrs), state: h.state}
}

// WithGroup keeps recording in the derived handler.
func (h *skipRecorder) WithGroup(name string) slog.Handler {
	return &skipRecorder{Handler: h.Handler.WithGroup(name), state: h.state}
}

func (h *skipRecorder) skipped() []string {
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	return slices.Clone(h.state.skipped)
}

// probeHealth asks a coordinator whether it is ready: up, starting or down,
// by the rules the driver's health checker and the registrar use, so the
// column never disagrees with what they do with the same coordinator.
func probeHealth(ctx context.Context, n *discovery.Node, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return wire.ProbeInfo(ctx, http.DefaultClient, n.URL()).Verdict.String()
}

// scrapeUsage reads zkpresto's driver metrics from a Prometheus endpoint.
func scrapeUsage(ctx context.Context, url string, timeout time.Duration) (map[string]nodeUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", url, err)
	}
	// Ask for the text format; the parser reads no other.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--metrics %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", url, err)
	}
	usage := map[string]nodeUsage{}
	each := func(name string, set func(u *nodeUsage, v float64)) {
		fam := families[name]
		if fam == nil {
			return
		}
		for _, m := range fam.GetMetric() {
			var node string
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" {
					node = l.GetValue()
				}
			}
			if node == "" {
				continue
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
			u := usage[node]
			set(&u, v) // several processes' series for one node add up
			usage[node] = u
		}
	}
	each("zkpresto_driver_picks_total", func(u *nodeUsage, v float64) { u.Picks += uint64(v) })
	each("zkpresto_driver_failures_total", func(u *nodeUsage, v float64) { u.Failures += uint64(v) })
	each("zkpresto_driver_in_flight", func(u *nodeUsage, v float64) { u.InFlight += int64(v) })
	if len(usage) == 0 {
		return nil, fmt.Errorf("--metrics %s: no zkpresto_driver_* series with a node label there", url)
	}
	return usage, nil
}

// writeNodes prints rows as an aligned table or as JSON (one line per print
// under --watch, indented otherwise).
func writeNodes(w io.Writer, rows []nodeRow, asJSON, oneLine bool) error {
	if asJSON {
		var b []byte
		var err error
		if oneLine {
			b, err = json.Marshal(rows)
		} else {
			b, err = json.MarshalIndent(rows, "", "  ")
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	withUsage := false
	for _, r := range rows {
		withUsage = withUsage || r.Usage != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"ADDRESS", "FORMAT", "WEIGHT", "ZONE", "VERSION", "ID", "READY", "HEALTH"}
	if withUsage {
		header = append(header, "PICKS", "FAILURES", "INFLIGHT")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, r := range rows {
		ready := "yes"
		if !r.Ready {
			ready = "no:" + r.NotReady
		}
		cells := []string{r.Scheme + "://" + r.Address, r.Format, strconv.Itoa(r.Weight), dash(r.Zone), dash(r.Version), r.ID, ready, dash(r.Health)}
		if withUsage {
			if r.Usage != nil {
				cells = append(cells, strconv.FormatUint(r.Usage.Picks, 10), strconv.FormatUint(r.Usage.Failures, 10), strconv.FormatInt(r.Usage.InFlight, 10))
			} else {
				cells = append(cells, "-", "-", "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// countOf is n and noun, plural unless n is one: "1 coordinator", "2 coordinators".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
