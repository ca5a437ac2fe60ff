package discovery_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/fleet"
)

// malformedChild returns the i-th of a varied set of children that are not
// coordinator registrations.
func malformedChild(i int) (name string, data []byte) {
	switch i % 6 {
	case 0:
		return fmt.Sprintf("garbage-%03d", i), nil // no address anywhere
	case 1:
		return fmt.Sprintf("instance-%03d", i), []byte(`{"name":"presto","address":`) // broken JSON
	case 2:
		return fmt.Sprintf("serverUri=host-%03d:notaport;version=1;sequence=1", i), nil
	case 3:
		return fmt.Sprintf("c-%03d", i), []byte("uri=127.0.0.1:8080;weight=-4;")
	case 4:
		return fmt.Sprintf("h-%03d:99999", i), nil // port out of range
	}
	// Larger than a registration may be; a few near ZooKeeper's 1 MB limit.
	size := 64<<10 + 1
	if i%30 == 5 {
		size = 1000 << 10
	}
	return fmt.Sprintf("huge-%03d", i), bytes.Repeat([]byte("x"), size)
}

func TestZooKeeperManyMalformedChildren(t *testing.T) {
	const malformed = 300
	f := fleet.StartT(t, fleet.Options{Coordinators: 3})
	ns := "/" + f.Namespace

	// Written concurrently: go-zookeeper pipelines the requests.
	var wg sync.WaitGroup
	errs := make(chan error, malformed)
	names := make([]string, malformed)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < malformed; i += 8 {
				name, data := malformedChild(i)
				names[i] = name
				if _, err := f.Conn().Create(ns+"/"+name, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
					errs <- fmt.Errorf("creating %s: %w", name, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var good []string
	for i, c := range f.Coordinators {
		if _, err := f.Register(c, []discovery.Format{discovery.FormatHive, discovery.FormatCurator, discovery.FormatZkpresto}[i], 1); err != nil {
			t.Fatal(err)
		}
		good = append(good, c.Addr())
	}
	slices.Sort(good)

	logs := &testutil.Buffer{}
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers: strings.Split(f.Ensemble(), ","),
		Path:    ns,
		Logger:  logs.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := d.Snapshot().Addrs(); !slices.Equal(got, good) {
		t.Fatalf("snapshot %v, want exactly the good nodes %v", got, good)
	}
	if st := d.Status(); st.Skipped != malformed || st.Problem != "" {
		t.Fatalf("status %+v, want %d skipped and no problem", st, malformed)
	}

	// A membership change later re-reads nothing that did not change.
	if err := f.Deregister(f.Coordinators[0]); err != nil {
		t.Fatal(err)
	}
	waitSnapshot(t, d, "one good node fewer", func(s *discovery.Snapshot) bool { return len(s.Nodes) == 2 })

	out := logs.String()
	for _, name := range names {
		// slog's text handler quotes values that need it.
		if n := strings.Count(out, "child="+name+" ") + strings.Count(out, "child="+strconv.Quote(name)+" "); n != 1 {
			t.Fatalf("child %s logged %d times, want once", name, n)
		}
	}
	if n := strings.Count(out, "skipping a child"); n != malformed {
		t.Fatalf("%d skip warnings, want %d", n, malformed)
	}
	// Huge children must not flood the log with their data.
	if len(out) > malformed*1024 {
		t.Fatalf("log is %d bytes for %d skipped children", len(out), malformed)
	}
}
