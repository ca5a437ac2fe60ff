package zkserver

import (
	"fmt"
	"net"
	"sync"
)

// handedOut remembers ports this process already gave away, so two servers
// started concurrently in one test binary never get the same port even if
// the kernel offers it twice.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// FreePort returns a loopback TCP port that was free a moment ago and that
// this process has not handed out before. Another process may still take it
// before it is used; Start and StartEnsemble retry with fresh ports when that
// happens. It is exported for tests that need extra ports, such as a
// secureClientPort passed through Options.ExtraConfig.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct free loopback ports. All listeners stay open
// until every port is known so the kernel cannot hand out one twice.
func freePorts(n int) ([]int, error) {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()

	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	// Bounded so a kernel that keeps offering reused ports cannot loop us forever.
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 100*n {
			return nil, fmt.Errorf("zkserver: could not find %d unused loopback ports", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zkserver: find free port: %w", err)
		}
		listeners = append(listeners, l)
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut[port] {
			continue
		}
		handedOut[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}
