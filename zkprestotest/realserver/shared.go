package realserver

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Shared is one server a test binary shares between its tests: started by
// the first test that asks for it, stopped by Close (in TestMain, after
// m.Run). A binary whose tests do not ask starts nothing.
type Shared struct {
	// Options start the server; Name defaults to the flavour's.
	Options Options

	once   sync.Once
	server *Server
	err    error
}

// Server returns the shared server, starting it on the first call. When
// the server is not fetched here, tb is skipped with the reason, but under
// CI (the CI environment variable set) it fails, as when the server does
// not start.
func (s *Shared) Server(tb testing.TB) *Server {
	tb.Helper()
	if err := Available(s.Options.Flavour); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("a real %s server is required in CI: %v", s.Options.Flavour, err)
		}
		tb.Skipf("no real %s server: %v", s.Options.Flavour, err)
	}
	s.once.Do(func() {
		opts := s.Options
		if opts.Name == "" {
			opts.Name = string(opts.Flavour)
		}
		s.server, s.err = Start(opts)
	})
	if s.err != nil {
		tb.Fatalf("the shared %s server did not start: %v", s.Options.Flavour, s.err)
	}
	return s.server
}

// Close stops the server, if it was started.
func (s *Shared) Close() error {
	var err error
	s.once.Do(func() {
		s.err = fmt.Errorf("realserver: the shared %s server was closed before its first use", s.Options.Flavour)
	})
	if s.server != nil {
		err = s.server.Close()
	}
	return err
}
