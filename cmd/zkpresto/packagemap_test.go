package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

	packages, err := modulePackages()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, p := range packages {
		rel := p.rel()
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

// listedPackage is what the tests read of a package in `go list -json`.
type listedPackage struct {
	ImportPath string
	Module     struct{ Path string }
	// Imports are the packages it imports and Deps all those it links,
	// neither counting its tests.
	Imports, Deps []string
}

// rel is the package's path within its module.
func (p listedPackage) rel() string {
	return strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, p.Module.Path), "/")
}

// modulePackages lists the module's packages (not its tests), once for
// all the tests that read them, so that they judge the same listing.
var modulePackages = sync.OnceValues(func() ([]listedPackage, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Module,Imports,Deps", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %w", err)
	}
	var packages []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list ./...: %w", err)
		}
		packages = append(packages, p)
	}
	return packages, nil
})

// The gateway and the driver are two clients of the same routing core:
// neither links the other (docs/architecture.md), so that what one needs
// is moved to the core, not borrowed across.
func TestGatewayAndDriverStandApart(t *testing.T) {
	packages, err := modulePackages()
	if err != nil {
		t.Fatal(err)
	}
	apart := map[string]string{"gateway": "driver", "driver": "gateway"}
	checked := 0
	for _, p := range packages {
		other, ok := apart[p.rel()]
		if !ok {
			continue
		}
		checked++
		for _, dep := range p.Deps {
			if dep == p.Module.Path+"/"+other || strings.HasPrefix(dep, p.Module.Path+"/"+other+"/") {
				t.Errorf("%s links %s", p.rel(), dep)
			}
		}
	}
	if checked != len(apart) {
		t.Fatalf("go list listed %d of the packages gateway and driver", checked)
	}
}

// testSide are the folders of what tests and demonstrations run: the test
// kit, its child-process helper, the rig, the lab, the foreign-client tests
// and the examples. Every other package is the product: what a program
// imports or an operator deploys, and the internal packages under them.
var testSide = []string{"zkprestotest", "internal/childproc", "internal/testrig", "cmd/zkpresto-lab", "interop", "examples"}

// notForTheProduct are the folders no product package may link: the test
// kit (a program that imports the driver must not get a ZooKeeper server
// launcher or a coordinator simulator with it), the rig and the lab.
var notForTheProduct = []string{"zkprestotest", "internal/testrig", "cmd/zkpresto-lab"}

// under reports whether the package rel is dir or in a folder under it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// No product package links the test kit, the rig or the lab, directly or
// through another package (go list's Deps, outside tests).
func TestProductLinksNoTestKit(t *testing.T) {
	packages, err := modulePackages()
	if err != nil {
		t.Fatal(err)
	}
	products := map[string]bool{}
	for _, p := range packages {
		rel := p.rel()
		if slices.ContainsFunc(testSide, func(dir string) bool { return under(rel, dir) }) {
			continue
		}
		products[rel] = true
		for _, dep := range p.Deps {
			d, ok := strings.CutPrefix(dep, p.Module.Path+"/")
			if ok && slices.ContainsFunc(notForTheProduct, func(dir string) bool { return under(d, dir) }) {
				t.Errorf("%s links %s", rel, d)
			}
		}
	}
	for _, p := range []string{"driver", "gateway", "registrar", "metrics", "dsn", "routing", "health/httpprobe", "cmd/zkpresto", "internal/pool"} {
		if !products[p] {
			t.Errorf("go list did not list the product package %s", p)
		}
	}
}
