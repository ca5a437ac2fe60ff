package realserver

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// The Java clients scripts/fetch-real-servers.sh fetches beside the
// servers, as ClientJar names them.
const (
	TrinoJDBC  = "trino-jdbc-" + TrinoVersion + ".jar"
	PrestoJDBC = "presto-jdbc-" + PrestoVersion + ".jar"
	TrinoCLI   = "trino-cli-" + TrinoVersion + "-executable.jar"
	PrestoCLI  = "presto-cli-" + PrestoVersion + "-executable.jar"
)

// ClientJar returns the path of one of the fetched client jars (TrinoJDBC,
// PrestoJDBC, TrinoCLI, PrestoCLI) in Cache, or an error that says how to
// fetch it.
func ClientJar(name string) (string, error) {
	switch name {
	case TrinoJDBC, PrestoJDBC, TrinoCLI, PrestoCLI:
	default:
		return "", fmt.Errorf("realserver: unknown client jar %q (want %q, %q, %q or %q)", name, TrinoJDBC, PrestoJDBC, TrinoCLI, PrestoCLI)
	}
	path := filepath.Join(Cache(), "clients", name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("realserver: %s is not in %s: run scripts/fetch-real-servers.sh (make test-deps does)", name, filepath.Dir(path))
	}
	return path, nil
}

// Java returns the java program the flavour's server was fetched to run
// on; the clients run on Trino's, which is the newer (trino-cli needs a
// recent Java too).
func Java(flavour coordinator.Flavour) (string, error) {
	in, err := findInstall(Cache(), flavour)
	if err != nil {
		return "", err
	}
	return filepath.Join(in.javaHome, "bin", "java"), nil
}
