package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/zkpresto/zkpresto/strategy"
)

// repoRoot is the module's root, relative to this package.
const repoRoot = "../.."

// docPages returns the README and every page under docs/, relative to
// repoRoot.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, _ := filepath.Rel(repoRoot, p)
		files = append(files, rel)
	}
	return files
}

// docFiles returns docPages and the two reports beside the README.
func docFiles(t *testing.T) []string {
	return append(docPages(t), "RELIABILITY.md", "BENCHMARKS.md")
}

// numberWords reads the counts the docs spell out.
var numberWords = map[string]int{
	"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
}

// Every "N strategies" in the README and docs/, in words or figures, is the
// number of built-in strategies (nothing in this package registers its
// own).
func TestREADMEStrategyCount(t *testing.T) {
	want := len(strategy.Names())
	found := 0
	for _, file := range docPages(t) { // BENCHMARKS.md compares "four strategies" of them

		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?i)\b([a-z]+|[0-9]+)\s+(?:built-in\s+)?strategies\b`).FindAllStringSubmatch(string(b), -1) {
			n, ok := numberWords[strings.ToLower(m[1])]
			if !ok {
				if n, err = strconv.Atoi(m[1]); err != nil {
					continue // "several strategies", "the strategies"
				}
			}
			found++
			if n != want {
				t.Errorf("%s says %q; strategy.Names() has %d: %v", file, m[0], want, strategy.Names())
			}
		}
	}
	if found == 0 {
		t.Error("no document states how many strategies there are; drop this test or say it again")
	}
}

// The README stays a page a newcomer reads in minutes; the rest belongs
// under docs/.
func TestREADMELength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 260 {
		t.Errorf("README.md has %d lines; keep it at about 250 and move the details to docs/", n)
	}
}

// markdownLinks returns the targets of the inline links and images of a
// Markdown text, outside fenced code blocks and code spans.
func markdownLinks(text string) []string {
	var links []string
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code := regexp.MustCompile("`[^`]*`")
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(line, ""), -1) {
			links = append(links, m[1])
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown
// text: lower case, punctuation dropped, spaces as hyphens, "-1", "-2" for
// repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		anchors[anchor] = true
	}
	return anchors
}

// Every relative link in the README and docs/ names a file of the
// repository and, with a #fragment into a Markdown page, one of its
// headings.
func TestDocLinksResolve(t *testing.T) {
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) (map[string]bool, error) {
		if a, ok := anchorsOf[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchorsOf[path] = headingAnchors(string(b))
		return anchorsOf[path], nil
	}
	links := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range markdownLinks(string(b)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, fragment, _ := strings.Cut(target, "#")
			resolved := filepath.Join(repoRoot, file)
			if path != "" {
				resolved = filepath.Join(repoRoot, filepath.Dir(file), path)
			}
			if _, err := os.Stat(resolved); err != nil {
				t.Errorf("%s links to %s, which does not exist", file, target)
				continue
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(resolved, ".md") {
				t.Errorf("%s links to %s: a fragment into a file that is not Markdown", file, target)
				continue
			}
			a, err := anchors(resolved)
			if err != nil {
				t.Fatal(err)
			}
			if !a[fragment] {
				t.Errorf("%s links to %s, but %s has no heading with that anchor", file, target, path)
			}
		}
	}
	if links < 20 {
		t.Errorf("found only %d relative links in the docs; the link scanner is broken", links)
	}
}

// The link checker's anchors are GitHub's.
func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# The gateway: one address for every Presto/Trino client\n" +
		"## `zkpresto register`: the registrar sidecar\n" +
		"```sh\n# not a heading\n```\n" +
		"### 3. The registrar: take a coordinator out\n## Metrics\n## Metrics\n")
	want := []string{
		"the-gateway-one-address-for-every-prestotrino-client",
		"zkpresto-register-the-registrar-sidecar",
		"3-the-registrar-take-a-coordinator-out",
		"metrics", "metrics-1",
	}
	for _, a := range want {
		if !got[a] {
			t.Errorf("no anchor %q in %v", a, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("anchors %v, want %v", got, want)
	}
	if l := markdownLinks("[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n![d](e.svg#f)"); !slices.Equal(l, []string{"x.md", "e.svg#f"}) {
		t.Errorf("markdownLinks found %v", l)
	}
}

// docs/architecture.md names every package of the module, and what it says
// about cmd/zkpresto's dependencies is what go list reports: it links no
// "testing", no test kit (zkprestotest), no private rig and no lab, and no
// product package links the test kit outside its tests.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := modulePackages()
	if err != nil {
		t.Fatal(err)
	}
	packages := 0
	for _, p := range listed {
		rel := p.rel()
		packages++
		if !strings.Contains(string(doc), "`"+rel+"`") && !strings.Contains(string(doc), "`"+rel+"/`") {
			t.Errorf("docs/architecture.md does not name the package %s", rel)
		}
		if isTestTooling(rel) {
			continue
		}
		for _, dep := range p.Deps {
			if depRel, ok := strings.CutPrefix(dep, p.Module.Path+"/"); ok && isTestTooling(depRel) {
				t.Errorf("%s links %s outside its tests; only tests may use the test kit, the rig and the lab", rel, depRel)
			}
			if rel == "cmd/zkpresto" && dep == "testing" {
				t.Errorf("cmd/zkpresto links %s; docs/architecture.md says it links no part of the test kit", dep)
			}
		}
	}
	if packages < 20 {
		t.Fatalf("go list found only %d packages", packages)
	}
}

// isTestTooling reports whether the package at rel (a path within the
// module) is test tooling: the public test kit, the private rig, or the
// lab that zkpresto-lab runs, which alone may link the first two.
func isTestTooling(rel string) bool {
	for _, root := range []string{"zkprestotest", "internal/testrig", "cmd/zkpresto-lab"} {
		if rel == root || strings.HasPrefix(rel, root+"/") {
			return true
		}
	}
	return false
}

// citedPath is a file or folder of this repository named in backquotes,
// such as `gateway/relay.go` or `scripts/fetch-real-servers.sh`; a glob or
// a placeholder (`*`, `{`, `<`) is not one.
var citedPath = regexp.MustCompile("`((?:[a-z0-9_.-]+/)+[A-Za-z0-9_.-]*)(?::[0-9-]+)?`")

// goIdentifier is a package's last path element with an exported name
// after it: wire.CancelQuery.
var goIdentifier = regexp.MustCompile(`^[a-z0-9_]+\.[A-Z]`)

// madeByAScript says whether git ignores path: a folder an install script
// fills (`interop/node/testdata/node_modules/`), cited for where it lands.
func madeByAScript(path string) bool {
	cmd := exec.Command("git", "check-ignore", "-q", path)
	cmd.Dir = repoRoot
	return cmd.Run() == nil
}

// Every path of this repository that the docs cite in backquotes exists:
// code moves, and a document that still names the old file sends a reader
// nowhere. A path counts as this repository's when its first part is a
// top-level folder here; the servers' and clients' sources the docs cite
// (`server/protocol/Query.java`) start elsewhere.
func TestDocCitedPathsExist(t *testing.T) {
	top, err := os.ReadDir(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, e := range top {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			ours[e.Name()] = true
		}
	}
	cited := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range citedPath.FindAllStringSubmatch(string(b), -1) {
			path := m[1]
			first, _, _ := strings.Cut(path, "/")
			if !ours[first] {
				continue
			}
			// `internal/wire.CancelQuery` names a Go identifier: its
			// package must exist.
			if dir, last := filepath.Split(path); goIdentifier.MatchString(last) {
				path = filepath.Join(dir, last[:strings.IndexByte(last, '.')])
			}
			cited++
			if _, err := os.Stat(filepath.Join(repoRoot, path)); err != nil && !madeByAScript(path) {
				t.Errorf("%s cites `%s`, which does not exist", file, m[1])
			}
		}
	}
	if cited < 30 {
		t.Errorf("found only %d cited paths in the docs; the scanner is broken", cited)
	}
}
