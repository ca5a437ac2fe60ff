package pool

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program that imports the driver keeps the Go runtime's ordinary socket
// behaviour: no package of this module that the driver or the routing core
// pulls in makes a raw system call (the runtime's scheduler is told of
// every one, as of any other Go code's).
func TestNoRawSyscallsUnderTheDriver(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if eq .Module.Path "github.com/zkpresto/zkpresto"}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}{{end}}`,
		"./driver", "./routing")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./driver ./routing: %v", err)
	}
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		for _, f := range fields[1:] {
			b, err := os.ReadFile(filepath.Join(fields[0], f))
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, raw := range []string{"RawSyscall", "syscall.Syscall(", "syscall.Syscall6("} {
				if bytes.Contains(b, []byte(raw)) {
					t.Errorf("%s/%s calls %s", fields[0], f, raw)
				}
			}
		}
	}
	if files == 0 {
		t.Fatal("go list named no file of this module")
	}
}
