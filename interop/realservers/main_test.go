package realservers

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// flavourFleet is one flavour's servers, registered under its namespace.
type flavourFleet struct {
	flavour coordinator.Flavour
	cluster *realserver.Cluster
	servers []*realserver.Server
}

// queueSource is the source of the statements the tight resource group
// takes: one running, one queued, the next refused.
const queueSource = "zkpresto-queue-test"

// resourceGroupFiles give every server two resource groups (the file
// manager, as Trino's and PrestoDB's docs configure it): a tight one for
// queueSource, and an ample one for every other statement.
var resourceGroupFiles = map[string]string{
	"resource-groups.properties": "resource-groups.configuration-manager=file\n" +
		"resource-groups.config-file=etc/resource-groups.json\n",
	"resource-groups.json": `{
  "rootGroups": [
    {"name": "tight", "softMemoryLimit": "100%", "hardConcurrencyLimit": 1, "maxQueued": 1},
    {"name": "ample", "softMemoryLimit": "100%", "hardConcurrencyLimit": 100, "maxQueued": 1000}
  ],
  "selectors": [
    {"source": "` + queueSource + `", "group": "tight"},
    {"group": "ample"}
  ]
}
`,
}

// jvmZones are the zones of each flavour's two servers.
var jvmZones = []string{"America/New_York", "Asia/Kolkata"}

var (
	zkServer *zkserver.Server
	fleets   = map[coordinator.Flavour]*flavourFleet{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if zkServer, err = zkserver.Start(zkserver.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "realservers:", err)
		return 1
	}
	defer zkServer.Close()

	// The two clusters start side by side, and each starts its two servers
	// side by side: on two cores that takes about a minute, against two
	// minutes one after the other.
	flavours, err := flavoursToStart()
	if err != nil {
		fmt.Fprintln(os.Stderr, "realservers:", err)
		return 1
	}
	clusters := make([]*realserver.Cluster, len(flavours))
	errs := make([]error, len(flavours))
	var wg sync.WaitGroup
	for i, flavour := range flavours {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clusters[i], errs[i] = realserver.StartCluster(realserver.ClusterOptions{
				Flavour: flavour, Servers: 2, ZooKeeper: zkServer,
				// Every change of the load written (within the write
				// budget): with the default threshold of 3, a figure of 1
				// left by the last statement stays up to 5 s, and
				// shared_p2c rightly sends everything to the other server
				// meanwhile.
				Load: &registrar.LoadPublishing{Threshold: 1},
				// Coordinators that disagree on the zone: a statement's
				// zone must be the client's, whichever runs it.
				TimeZones: jvmZones,
				Server:    realserver.Options{Files: resourceGroupFiles},
			})
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range clusters {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "realservers: the real servers did not start:\n"+err.Error())
		return 1
	}
	for i, flavour := range flavours {
		fleets[flavour] = &flavourFleet{flavour: flavour, cluster: clusters[i], servers: clusters[i].Servers()}
	}
	// What tests share and start for the first that asks
	// (startSecureFleet), before the servers and ZooKeeper above.
	defer closers.closeAll()
	return m.Run()
}

// onlyFlavourEnv names the one flavour a developer wants started while
// working on its tests ("trino" or "presto"): half the memory and start-up.
// Tests of the other flavour then skip, so CI, which must run them all,
// refuses it.
const onlyFlavourEnv = "ZKPRESTO_REALSERVERS_ONLY"

// flavoursToStart is both flavours, or the one onlyFlavourEnv names.
func flavoursToStart() ([]coordinator.Flavour, error) {
	all := []coordinator.Flavour{coordinator.Trino, coordinator.Presto}
	only := os.Getenv(onlyFlavourEnv)
	if only == "" {
		return all, nil
	}
	if os.Getenv("CI") != "" {
		return nil, fmt.Errorf("%s=%q under CI: CI runs both flavours", onlyFlavourEnv, only)
	}
	for _, f := range all {
		if string(f) == only {
			return []coordinator.Flavour{f}, nil
		}
	}
	return nil, fmt.Errorf("%s=%q: want %q or %q", onlyFlavourEnv, only, coordinator.Trino, coordinator.Presto)
}

// fleet is the flavour's servers; a test of a flavour not started (see
// onlyFlavourEnv) skips.
func fleet(t *testing.T, flavour coordinator.Flavour) *flavourFleet {
	t.Helper()
	f := fleets[flavour]
	if f == nil {
		t.Skipf("%s servers not started (%s)", flavour, onlyFlavourEnv)
	}
	return f
}

// eachFlavour runs fn as a subtest per flavour.
func eachFlavour(t *testing.T, fn func(t *testing.T, f *flavourFleet)) {
	for _, flavour := range []coordinator.Flavour{coordinator.Trino, coordinator.Presto} {
		t.Run(string(flavour), func(t *testing.T) { fn(t, fleet(t, flavour)) })
	}
}
