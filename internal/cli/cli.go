// Package cli holds what the zkpresto and zkpresto-lab commands share: how
// a command stops on a signal, how errors are printed, and how a command
// opens the driver's connector.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// Main runs root and exits non-zero with the error on stderr when it fails.
func Main(root *cobra.Command) { os.Exit(Execute(root)) }

// Execute runs root and returns the exit status: 0, or 1 when it fails,
// after printing the error on root's stderr. The program's name is
// printed once, here: no package's error starts with it (the commands open
// the driver through OpenConnector, never through sql.Open, whose edge adds
// it).
func Execute(root *cobra.Command) int {
	if err := root.Execute(); err != nil {
		fmt.Fprintln(root.ErrOrStderr(), root.Name()+": "+err.Error())
		return 1
	}
	return 0
}

// RunUntilSignal makes run a command's RunE, with a context that SIGINT and
// SIGTERM cancel: every command stops the same way when interrupted, after
// cleaning up what it started.
func RunUntilSignal(run func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return run(ctx, cmd, args)
	}
}

// OpenConnector opens the driver's connector for dsn, as sql.Open would,
// for the commands that also ask it what it sees.
func OpenConnector(dsn string, opts ...zkdriver.Option) (*zkdriver.Connector, error) {
	cfg, err := zkdriver.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return zkdriver.NewConnector(cfg, opts...)
}
