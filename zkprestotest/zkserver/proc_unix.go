//go:build unix

package zkserver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// platformSupported reports whether this system can run the harness.
func platformSupported() error { return nil }

// pauseProcess freezes the JVM without ending it.
// It returns once every thread is stopped, where /proc tells: kill(2)
// returns before a busy thread has stopped, and a test that pauses the
// server and then sends it a request must not get an answer.
func pauseProcess(p *os.Process) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	tasks := fmt.Sprintf("/proc/%d/task", p.Pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if allStopped(tasks) {
			return nil
		}
	}
	return nil // no /proc, or a thread never reported: the signal is sent
}

// allStopped reports whether every thread under tasks (a /proc task
// directory) is in state T (stopped) or t (traced).
func allStopped(tasks string) bool {
	entries, err := os.ReadDir(tasks)
	if err != nil || len(entries) == 0 {
		return true
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(tasks, e.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		if state := b[i+2]; state != 'T' && state != 't' {
			return false
		}
	}
	return true
}

// resumeProcess continues a frozen JVM.
func resumeProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
