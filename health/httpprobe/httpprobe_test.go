package httpprobe_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/health"
	"github.com/zkpresto/zkpresto/health/httpprobe"
	"github.com/zkpresto/zkpresto/internal/wire"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The probe passes exactly the nodes wire.ProbeInfo finds up, fails the
// others with ProbeInfo's own reason, and a starting node's reason
// matches health.ErrStarting as well as wire.ErrStarting.
func TestProbeJudgesAsProbeInfo(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	probe := httpprobe.New(client)
	node := discovery.Node{Addr: c.Addr(), Scheme: "http"}
	ctx := context.Background()

	if err := probe(ctx, node); err != nil {
		t.Fatalf("a running coordinator: %v", err)
	}

	c.SetStarting(true)
	err = probe(ctx, node)
	info := wire.ProbeInfo(ctx, client, node.URL())
	if err == nil || !errors.Is(err, health.ErrStarting) || !errors.Is(err, wire.ErrStarting) || err.Error() != info.Err.Error() {
		t.Fatalf("a starting coordinator: %v, want ProbeInfo's %v matching both ErrStarting", err, info.Err)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	err = probe(ctx, node)
	if err == nil || errors.Is(err, health.ErrStarting) || !strings.Contains(err.Error(), c.Addr()+"/v1/info") {
		t.Fatalf("a stopped coordinator: %v, want a failure naming its /v1/info", err)
	}
}

// Without a client the probe uses a plain one.
func TestProbeWithoutClient(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Starting: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if err := httpprobe.New(nil)(context.Background(), discovery.Node{Addr: c.Addr(), Scheme: "http"}); !errors.Is(err, health.ErrStarting) {
		t.Fatalf("got %v, want the starting verdict", err)
	}
}
