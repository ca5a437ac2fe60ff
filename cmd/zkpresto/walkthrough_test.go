package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// readEnvFile parses the export lines dev writes.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if ok {
			env[k] = strings.Trim(v, "'")
		}
	}
	return env
}

// walkthroughLines returns the commands of the README's quick starts, in
// order, without comments and blank lines.
func walkthroughLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Quick starts\n")
	if !ok {
		t.Fatal("README has no quick starts section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var lines []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		for _, l := range strings.Split(block[1], "\n") {
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// shellWords splits a command line as sh would for the README's lines:
// single and double quotes, and $NAME inside double quotes or bare.
func shellWords(line string, env map[string]string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := strings.IndexByte(line[i+1:], '"')
			cur.WriteString(expand(line[i+1:i+1+j], env))
			i += j + 1
			inWord = true
		default:
			j := strings.IndexAny(line[i:], " '\"")
			if j < 0 {
				j = len(line) - i
			}
			cur.WriteString(expand(line[i:i+j], env))
			i += j - 1
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func expand(s string, env map[string]string) string {
	return os.Expand(s, func(k string) string { return env[k] })
}

// readmeGatewayAddr is the address the README's gateway listens on. The
// test gives the gateway a free port instead (a fixed one could be taken on
// a shared machine) and sends the README's later lines there.
const readmeGatewayAddr = "127.0.0.1:8080"

// flagValue returns the value of --name in args, or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// The README's quick starts, line by line as they are written there: every
// ./zkpresto line runs in-process with the README's arguments, & lines in
// the background as shell jobs (%1, %2, ...), kill and wait stop jobs,
// `go run` and the line that makes the key run as commands, and the shell's own
// lines (mktemp, until, .) are done by the test. zkpresto-lab is built as
// the README builds it and dev runs as that process: the lab is internal to
// its command, and this command's tests link none of it.
func TestDevWalkthroughQuickStarts(t *testing.T) {
	zkserver.Require(t)
	vars := map[string]string{} // the shell's variables
	var jobs []*running         // %1 is jobs[0]; dev is a job of its own
	stopped := map[int]bool{}
	devOut := &testutil.Buffer{}
	devDone := make(chan error, 1)
	var stopDev func()
	labBinary := ""
	t.Cleanup(func() {
		if stopDev != nil {
			stopDev()
			<-devDone
		}
	})
	job := func(spec string) int {
		n, err := strconv.Atoi(strings.TrimPrefix(spec, "%"))
		if err != nil || n < 1 || n > len(jobs)+1 {
			t.Fatalf("no job %s", spec)
		}
		return n
	}
	stopJob := func(n int) {
		if stopped[n] {
			return
		}
		stopped[n] = true
		if n == 1 {
			stopDev()
			if err := <-devDone; err != nil {
				t.Fatalf("dev ended with %v when interrupted:\n%s", err, devOut.String())
			}
			stopDev = nil
			return
		}
		if err := jobs[n-2].stop(t); err != nil {
			t.Fatalf("job %%%d: %v", n, err)
		}
	}

	var watch *running
	c1Registrar := 0 // the job number of $C1's registrar
	gatewayAddr := ""
	checked := map[string]bool{}
	for _, line := range walkthroughLines(t) {
		background := strings.HasSuffix(line, " &")
		cmdLine := strings.TrimSuffix(line, " &")
		if gatewayAddr != "" {
			cmdLine = strings.ReplaceAll(cmdLine, readmeGatewayAddr, gatewayAddr)
		}
		switch {
		case line == "go build -o zkpresto-lab ./cmd/zkpresto-lab":
			labBinary = filepath.Join(t.TempDir(), "zkpresto-lab")
			cmd := exec.Command("go", "build", "-o", labBinary, "./cmd/zkpresto-lab")
			cmd.Dir = filepath.Join("..", "..")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			checked[line] = true
		case strings.HasPrefix(line, "go build "):
			// The test runs zkpresto's commands in-process.
		case line == "dir=$(mktemp -d)":
			vars["dir"] = t.TempDir()
		case strings.HasPrefix(line, "./zkpresto-lab dev ") && background:
			args := shellWords(cmdLine, vars)[1:]
			envFile := flagValue(args, "--env-file")
			if args[0] != "dev" || envFile == "" || len(jobs) != 0 || stopDev != nil || labBinary == "" {
				t.Fatalf("the test runs dev as the first job, with --env-file, after building zkpresto-lab: %s", line)
			}
			dev := exec.Command(labBinary, args...)
			dev.Stdout, dev.Stderr = devOut, devOut
			if err := dev.Start(); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			stopDev = func() { _ = dev.Process.Signal(os.Interrupt) }
			go func() { devDone <- dev.Wait() }()
		case strings.HasPrefix(line, "until [ -s "):
			path := shellWords(strings.TrimSuffix(strings.TrimPrefix(line, "until [ -s "), " ]; do sleep 0.2; done"), vars)[0]
			eventually(t, "dev to write its env file", func() bool { return readEnvFile(t, path)["C2"] != "" })
			// dev writes the file, then prints the same lines: wait for
			// the print too, which may come a moment after the file.
			eventually(t, "dev to print the DSN's export:\n"+devOut.String(), func() bool {
				return strings.Contains(devOut.String(), "export ZKPRESTO_DSN=")
			})
		case strings.HasPrefix(line, ". "):
			env := readEnvFile(t, shellWords(line, vars)[1])
			for k, v := range env {
				vars[k] = v
				t.Setenv(k, v)
			}
		case line == "go run ./examples/quickstart":
			cmd := exec.Command("go", "run", "./examples/quickstart")
			cmd.Dir = filepath.Join("..", "..")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			checkQuickstartProgram(t, string(out))
			checked[line] = true
		case strings.HasSuffix(line, `> "$dir/gateway.key"`):
			// The key, made as written by the shell, with the session's variables.
			cmd := exec.Command("bash", "-c", line)
			cmd.Env = append(os.Environ(), "dir="+vars["dir"])
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			key, err := os.ReadFile(filepath.Join(vars["dir"], "gateway.key"))
			if err != nil || !regexp.MustCompile(`^k1:[0-9a-f]{64}\n$`).Match(key) {
				t.Fatalf("%s wrote %q (%v)", line, key, err)
			}
			checked[line] = true
		case strings.HasPrefix(line, "kill "):
			for _, part := range strings.Split(line, ";") {
				words := strings.Fields(part)
				for _, spec := range words[1:] {
					n := job(spec)
					stopJob(n) // wait %N after kill %N: the job has ended
					if n == c1Registrar && watch != nil {
						eventually(t, "the watch to print one coordinator", func() bool {
							return strings.Contains(watch.out.String(), " 1 coordinator\n")
						})
					}
				}
			}
		case strings.HasPrefix(line, "./zkpresto "):
			args := shellWords(cmdLine, vars)[1:]
			if background {
				if args[0] == "gateway" {
					if flagValue(args, "--listen") != readmeGatewayAddr {
						t.Fatalf("the README's gateway listens on %s; the test expects %s", flagValue(args, "--listen"), readmeGatewayAddr)
					}
					for i, a := range args {
						if a == readmeGatewayAddr {
							args[i] = "127.0.0.1:0"
						}
					}
				}
				r := start(t, args...)
				jobs = append(jobs, r)
				switch {
				case args[0] == "nodes":
					watch = r
				case args[0] == "register" && flagValue(args, "--advertise") == vars["C1"]:
					c1Registrar = len(jobs) + 1
				case args[0] == "gateway":
					eventually(t, "the gateway to listen", func() bool {
						m := regexp.MustCompile(`zkpresto gateway on http://(\S+),`).FindStringSubmatch(r.out.String())
						if m != nil {
							gatewayAddr = m[1]
						}
						return m != nil
					})
				}
				continue
			}
			out, errOut, err := run(args, "")
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, errOut)
			}
			checkWalkthroughStep(t, line, args, out, errOut, vars)
			checked[line] = true
		default:
			t.Fatalf("the test does not know how to run this README line: %s", line)
		}
	}
	if len(stopped) != len(jobs)+1 || c1Registrar == 0 || watch == nil || gatewayAddr == "" {
		t.Fatalf("the README's quick starts stopped %d of %d jobs (c1's registrar job %d, watch %v, gateway %q)",
			len(stopped), len(jobs)+1, c1Registrar, watch != nil, gatewayAddr)
	}
	if len(checked) < 7 {
		t.Errorf("only %d of the README's quick-start lines were checked: %v", len(checked), checked)
	}
}

// checkQuickstartProgram checks what examples/quickstart printed: four
// statements, in turns over both coordinators (the poll strategy).
func checkQuickstartProgram(t *testing.T, out string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^statement ([1-4]): served by (c[12]) as dev in hive\.default$`).FindAllStringSubmatch(out, -1)
	if len(m) != 4 {
		t.Fatalf("go run ./examples/quickstart printed:\n%s", out)
	}
	for i := 1; i < 4; i++ {
		if m[i][2] == m[i-1][2] {
			t.Errorf("statements %d and %d both went to %s; poll takes turns:\n%s", i, i+1, m[i][2], out)
		}
	}
}

// checkWalkthroughStep checks what a foreground command of the quick starts
// printed against what the README says it prints.
func checkWalkthroughStep(t *testing.T, line string, args []string, out, errOut string, env map[string]string) {
	t.Helper()
	coordinator := strings.TrimSpace(strings.TrimPrefix(errOut, "coordinator:"))
	switch {
	case args[0] == "nodes" && flagValue(args, "--wait-for") == "2":
		if strings.Count(out, " up\n") != 2 {
			t.Errorf("%s printed:\n%s", line, out)
		}
		for _, row := range strings.Split(out, "\n") {
			if strings.HasPrefix(row, env["C1"]+" ") && !regexp.MustCompile(`\s2\s+a\s`).MatchString(row) {
				t.Errorf("C1 is not listed with weight 2 in zone a: %s", row)
			}
		}
	case args[0] == "nodes" && flagValue(args, "--dsn") != "":
		// The gateway, probed as a coordinator: up once it lists one.
		if strings.Count(out, " up\n") != 1 || !strings.Contains(out, " static ") {
			t.Errorf("%s printed:\n%s", line, out)
		}
	case strings.Contains(line, "'through the gateway'"):
		if !regexp.MustCompile(`(?m)^c[12]\s.*SELECT 'through the gateway'$`).MatchString(out) {
			t.Errorf("%s printed:\n%s", line, out)
		}
	case strings.Contains(line, "rows(3)"):
		if !strings.Contains(out, "\"n\"\n\"1\"\n\"2\"\n\"3\"\n") {
			t.Errorf("%s printed:\n%s", line, out)
		}
	case strings.Contains(line, "'again'"):
		// The README killed the first registrar, C1's.
		if coordinator != env["C2"] {
			t.Errorf("after C1's registrar left, %s went to %q", line, coordinator)
		}
	default:
		t.Errorf("no check for %s", line)
	}
}

// The quick starts are shell a user pastes: bash parses them as they are
// written (the walkthrough test above runs them line by line).
func TestWalkthroughQuickStartsParse(t *testing.T) {
	lines := walkthroughLines(t)
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash -n on the README's quick starts: %v\n%s", err, out)
	}
	if len(lines) < 15 {
		t.Fatalf("the README's quick starts have %d lines: %q", len(lines), lines)
	}
}
