// Command zkpresto is the tool operators deploy beside coordinators and
// clients: register, nodes, query (and version). It links no test rig: the
// demo and the other lab commands are in cmd/zkpresto-lab.
package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/zkpresto/zkpresto/internal/cli"
)

func main() { cli.Main(newRootCommand()) }

// version is the release this binary is, stamped by make dist with
// -ldflags "-X main.version=v1.2.3"; empty otherwise, when the module's
// version (go install ...@v1.2.3) or the commit built stands for it.
var version string

// versionText is what --version and the version command print first:
// "zkpresto v1.2.3 (go1.26.8)", or for a build of a checkout the commit
// it was built from.
func versionText() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if version != "" {
			return "zkpresto " + version
		}
		return "zkpresto (unknown version)"
	}
	v := version
	if v == "" {
		v = info.Main.Version
	}
	if v == "" || v == "(devel)" {
		v = "(devel)"
		var revision, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(revision) > 12 {
			revision = revision[:12]
		}
		if revision != "" {
			v += " " + revision
			if modified == "true" {
				v += "-dirty"
			}
		}
	}
	return fmt.Sprintf("zkpresto %s (%s)", v, info.GoVersion)
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Version: versionText(),
		Use:     "zkpresto",
		Short:   "Presto/Trino discovery through ZooKeeper, with client-side load balancing",
		Long: `zkpresto finds Presto (and Trino) coordinators registered in ZooKeeper and
balances statements across them. This is the tool operators deploy: register
keeps a coordinator listed, nodes shows what clients see, query runs SQL
through the driver. The demo, dev, simulate and chaos commands are in
zkpresto-lab.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	for _, newCommand := range subcommands {
		root.AddCommand(newCommand())
	}
	return root
}

// subcommands are the constructors of the zkpresto subcommands; each
// subcommand's file adds its own in an init function.
var subcommands = []func() *cobra.Command{newVersionCommand}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of zkpresto and of the libraries it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, versionText())
			info, ok := debug.ReadBuildInfo()
			if !ok {
				return nil
			}
			for _, dep := range info.Deps {
				switch dep.Path {
				case "github.com/go-zookeeper/zk", "github.com/prestodb/presto-go-client/v2":
					fmt.Fprintf(w, "  %s %s\n", dep.Path, dep.Version)
				}
			}
			return nil
		},
	}
}
