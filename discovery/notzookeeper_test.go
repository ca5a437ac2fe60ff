package discovery_test

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
)

// serve accepts connections on a loopback port and runs answer on each,
// until the test ends.
func serve(t *testing.T, answer func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				answer(c)
			})
		}
	})
	return ln.Addr().String()
}

// A coordinator's address given as the ensemble: Jetty answers the connect
// request with "HTTP/1.1 400". The open fails at once, saying so, and
// go-zookeeper never sizes a buffer by "HTTP" read as a length (1.2 GB).
func TestAWebServerGivenAsTheEnsembleIsNamed(t *testing.T) {
	web := serve(t, func(c net.Conn) {
		c.Read(make([]byte, 64))
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers:        []string{web},
		Path:           "/presto",
		ConnectTimeout: time.Minute, // the answer, not the timeout, ends it
	})
	runtime.ReadMemStats(&after)
	if err == nil {
		d.Close()
		t.Fatal("opened a web server as ZooKeeper")
	}
	for _, want := range []string{web, "answered as no ZooKeeper does", "HTTP: a web server or a coordinator", "2181"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Errorf("opening allocated %d MiB", grown>>20)
	}
}

// A server that takes the connection and never answers: the timeout's
// error says what to check.
func TestASilentServerGivenAsTheEnsembleIsExplained(t *testing.T) {
	done := make(chan struct{})
	silent := serve(t, func(c net.Conn) { <-done })
	defer close(done)
	d, err := discovery.OpenZooKeeper(context.Background(), discovery.ZooKeeperConfig{
		Servers:        []string{silent},
		Path:           "/presto",
		ConnectTimeout: 300 * time.Millisecond,
	})
	if err == nil {
		d.Close()
		t.Fatal("opened a silent server as ZooKeeper")
	}
	for _, want := range []string{silent, "never answered ZooKeeper's handshake", "2181"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
