package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/internal/lab/devenv"
	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
	"github.com/zkpresto/zkpresto/internal/testrig/zkserver"
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

// walkthroughLines returns the commands of the README's "Try it" section,
// in order, without comments and blank lines.
func walkthroughLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Try it: register, nodes, query")
	if !ok {
		t.Fatal("README has no walkthrough section")
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

// The README's walkthrough, line by line as it is written there: every
// ./zkpresto line runs in-process with the README's arguments, & lines in
// the background as shell jobs (%1, %2, ...), and kill/wait stop jobs.
func TestDevWalkthroughRegisterNodesQuery(t *testing.T) {
	zkserver.Require(t)
	envFile := filepath.Join(t.TempDir(), "dev.env")
	var env map[string]string
	var jobs []*running // %1 is jobs[0]; dev is a job of its own
	stopped := map[int]bool{}
	devOut := &testutil.Buffer{}
	devDone := make(chan error, 1)
	var stopDev context.CancelFunc
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
				t.Fatalf("dev returned %v when interrupted", err)
			}
			stopDev = nil
			return
		}
		if err := jobs[n-2].stop(t); err != nil {
			t.Fatalf("job %%%d: %v", n, err)
		}
	}

	var served string // the coordinator that served the first query
	var watch *running
	for _, line := range walkthroughLines(t) {
		background := strings.HasSuffix(line, " &")
		cmdLine := strings.TrimSuffix(line, " &")
		switch {
		case strings.HasPrefix(line, "go build "), strings.HasPrefix(line, "rm -f "):
			// The test runs the commands in-process, in a fresh temp dir.
		case strings.HasPrefix(line, "./zkpresto-lab dev --env-file ") && background:
			ctx, cancel := context.WithCancel(context.Background())
			stopDev = cancel
			go func() { devDone <- devenv.Run(ctx, devOut, devenv.Options{Coordinators: 2, EnvFile: envFile}) }()
		case strings.HasPrefix(line, "until [ -s "):
			eventually(t, "dev to write its env file", func() bool { env = readEnvFile(t, envFile); return env["C2"] != "" })
			if !strings.Contains(devOut.String(), "export ZKPRESTO_DSN=") {
				t.Errorf("dev printed:\n%s", devOut.String())
			}
		case strings.HasPrefix(line, ". "):
			for k, v := range env {
				t.Setenv(k, v)
			}
		case strings.HasPrefix(line, "kill "):
			for _, part := range strings.Split(line, ";") {
				words := strings.Fields(part)
				for _, spec := range words[1:] {
					stopJob(job(spec)) // wait %N after kill %N: the job has ended
				}
			}
			if len(stopped) == 2 { // after kill %2: C1's registrar is gone
				eventually(t, "the watch to print one coordinator", func() bool {
					return strings.Contains(watch.out.String(), " 1 coordinators\n")
				})
			}
		case strings.HasPrefix(line, "./zkpresto "):
			args := shellWords(cmdLine, env)[1:]
			if background {
				jobs = append(jobs, start(t, args...))
				if args[0] == "nodes" {
					watch = jobs[len(jobs)-1]
				}
				continue
			}
			out, errOut, err := run(args, "")
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, errOut)
			}
			checkWalkthroughStep(t, line, args, out, errOut, env, &served)
		default:
			t.Fatalf("the test does not know how to run this README line: %s", line)
		}
	}
	if len(stopped) != 4 || served == "" {
		t.Fatalf("the README's walkthrough stopped %d jobs and ran %q", len(stopped), served)
	}
}

// checkWalkthroughStep checks what a foreground command of the walkthrough
// printed against what the README says it prints.
func checkWalkthroughStep(t *testing.T, line string, args []string, out, errOut string, env map[string]string, served *string) {
	t.Helper()
	coordinator := strings.TrimSpace(strings.TrimPrefix(errOut, "coordinator:"))
	switch {
	case args[0] == "nodes":
		if strings.Count(out, " up\n") != 2 {
			t.Errorf("%s printed:\n%s", line, out)
		}
		for _, row := range strings.Split(out, "\n") {
			if strings.HasPrefix(row, env["C1"]+" ") && !regexp.MustCompile(`\s2\s+a\s`).MatchString(row) {
				t.Errorf("C1 is not listed with weight 2 in zone a: %s", row)
			}
		}
	case strings.Contains(line, "'hello'"):
		if coordinator != env["C1"] && coordinator != env["C2"] {
			t.Fatalf("%s was served by %q", line, errOut)
		}
		*served = coordinator
	case strings.Contains(line, "rows(3)"):
		if !strings.Contains(out, "1\n2\n3\n") {
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
