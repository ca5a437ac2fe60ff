//go:build !unix

package zkserver

import (
	"errors"
	"os"
)

var errUnsupported = errors.New("zkserver: starting ZooKeeper needs a Unix-like system")

// platformSupported reports whether this system can run the harness.
func platformSupported() error { return errUnsupported }

// pauseProcess freezes the JVM without ending it.
func pauseProcess(*os.Process) error { return errUnsupported }

// resumeProcess continues a frozen JVM.
func resumeProcess(*os.Process) error { return errUnsupported }
