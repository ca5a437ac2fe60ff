package zkserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ClasspathEnv names the environment variable that, when set, replaces the
// discovered ZooKeeper classpath. It uses the platform's list separator and
// may contain Java wildcard entries such as "/opt/zookeeper/lib/*".
const ClasspathEnv = "ZKPRESTO_ZOOKEEPER_CLASSPATH"

// installHint tells a developer how to get a working ZooKeeper.
const installHint = "install Debian's package \"zookeeper\" (apt-get install zookeeper), or set " + ClasspathEnv + " to the jars of another ZooKeeper"

// debianJarDir is where Debian's zookeeper package puts its jars.
const debianJarDir = "/usr/share/java"

// requiredJars must all exist for the Debian layout to be usable.
var requiredJars = []string{"zookeeper.jar", "zookeeper-jute.jar"}

// optionalJars are added when present. zookeeper.jar's manifest already
// lists most dependencies, but not all netty modules the Netty connection
// factory (TLS) needs, nor an SLF4J binding; without a binding the server
// logs nothing, which makes failures hard to diagnose.
var optionalJars = []string{
	"netty-buffer.jar",
	"netty-codec.jar",
	"netty-common.jar",
	"netty-handler.jar",
	"netty-resolver.jar",
	"netty-transport.jar",
	"netty-transport-native-epoll.jar",
	"netty-transport-native-unix-common.jar",
	"slf4j-api.jar",
	"slf4j-log4j12.jar",
	"log4j-1.2.jar",
}

// Available reports whether a ZooKeeper server can be started here: it
// returns nil when java and the ZooKeeper jars are present, and otherwise
// an error that says what is missing and how to install it.
func Available() error {
	if err := platformSupported(); err != nil {
		return err
	}
	if _, err := javaPath(); err != nil {
		return fmt.Errorf("zkserver: ZooKeeper is not available: %w; %s", err, installHint)
	}
	if _, err := classpath(); err != nil {
		return fmt.Errorf("zkserver: ZooKeeper is not available: %w; %s", err, installHint)
	}
	return nil
}

// javaPath finds the java launcher on PATH, falling back to JAVA_HOME.
func javaPath() (string, error) {
	if p, err := exec.LookPath("java"); err == nil {
		return p, nil
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("java not found on PATH or in JAVA_HOME")
}

// classpath returns the classpath for QuorumPeerMain: the override from
// ClasspathEnv when set, else the jars of the Debian package.
func classpath() (string, error) {
	if override := strings.TrimSpace(os.Getenv(ClasspathEnv)); override != "" {
		return override, checkClasspath(override)
	}
	entries := make([]string, 0, len(requiredJars)+len(optionalJars))
	for _, name := range requiredJars {
		p := filepath.Join(debianJarDir, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ZooKeeper jar %s not found", p)
		}
		entries = append(entries, p)
	}
	for _, name := range optionalJars {
		p := filepath.Join(debianJarDir, name)
		if _, err := os.Stat(p); err == nil {
			entries = append(entries, p)
		}
	}
	return strings.Join(entries, string(os.PathListSeparator)), nil
}

// checkClasspath verifies that every entry of an explicit classpath exists,
// so a typo shows up in Available instead of as a JVM start failure. A
// wildcard entry ("dir/*") needs its directory.
func checkClasspath(cp string) error {
	for _, entry := range filepath.SplitList(cp) {
		if entry == "" {
			continue
		}
		path := entry
		if dir, ok := strings.CutSuffix(entry, "*"); ok {
			path = filepath.Clean(dir)
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s entry %s not found", ClasspathEnv, entry)
		}
	}
	return nil
}
