package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mapsElsewhere are the folders whose packages README.md's map leaves to
// docs/architecture.md: the test kit's parts, the lab, this repository's
// own test helpers, the foreign-client tests and the examples.
var mapsElsewhere = []string{"zkprestotest/", "cmd/zkpresto-lab/internal/", "internal/testrig/", "interop/", "examples/"}

// TestREADMEPackageMapIsTheImportGraph holds README.md's package map to
// `go list`: a row for every package outside mapsElsewhere, and in each row
// exactly the packages of this module it imports (outside its tests).
func TestREADMEPackageMapIsTheImportGraph(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The packages\n")
	if !ok {
		t.Fatal(`README.md has no "## The packages" section`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	rows := map[string][]string{} // package → the imports its row names
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`/")
		var imports []string
		for _, f := range strings.Split(cells[2], "`") {
			if f = strings.Trim(strings.TrimSpace(f), "/"); f != "" && f != "," && f != "—" {
				imports = append(imports, f)
			}
		}
		slices.Sort(imports)
		rows[pkg] = imports
	}

	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Module", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	listed := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Module     struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, p.Module.Path), "/")
		if slices.ContainsFunc(mapsElsewhere, func(dir string) bool { return strings.HasPrefix(rel, dir) }) {
			continue
		}
		listed[rel] = true
		var want []string
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, p.Module.Path+"/"); ok {
				want = append(want, dep)
			}
		}
		slices.Sort(want)
		got, ok := rows[rel]
		switch {
		case !ok:
			t.Errorf("README.md's package map has no row for %s", rel)
		case !slices.Equal(got, want):
			t.Errorf("README.md's package map says %s imports %v; go list says %v", rel, got, want)
		}
	}
	for pkg := range rows {
		if !listed[pkg] {
			t.Errorf("README.md's package map names %s, which go list does not list (or maps elsewhere)", pkg)
		}
	}
}
