package lb_test

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listed is what TestAdapterModulesPackageOrder reads of `go list -json`.
type listed struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
	Module                             *struct{ Path string }
}

// The adapter modules (each directory under adapters/ with its own go.mod,
// adapters/xds/internal/grpcbench included)
// follow the core's layers (see layers) and import none of the core
// module's internal/ packages, in their code or in their tests.
func TestAdapterModulesPackageOrder(t *testing.T) {
	const root = "github.com/lbkit/lbkit/"
	var mods []string
	err := filepath.WalkDir("../adapters", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "go.mod" {
			mods = append(mods, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 3 {
		t.Fatalf("found the adapter modules %q; want grpcgo, otel and xds at least", mods)
	}
	for _, mod := range mods {
		dir := filepath.Dir(mod)
		cmd := exec.Command("go", "list", "-json", "./...")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go list in %s: %v\n%s", dir, err, stderr)
		}
		modPath := root + strings.TrimPrefix(filepath.ToSlash(dir), "../")
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for {
			var p listed
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("go list in %s: %v", dir, err)
			}
			if p.Module == nil || p.Module.Path != modPath {
				t.Errorf("%s is in module %v; want its own module %s", p.ImportPath, p.Module, modPath)
				continue
			}
			pkg := strings.TrimPrefix(p.ImportPath, root)
			rank, ok := rankOf(pkg)
			if !ok {
				t.Errorf("package %s has no layer in lb/deps_test.go", pkg)
				continue
			}
			for _, imp := range p.Imports {
				if !strings.HasPrefix(imp, root) {
					continue
				}
				imp = strings.TrimPrefix(imp, root)
				if r, _ := rankOf(imp); r >= rank {
					t.Errorf("%s (layer %d) imports %s (layer %d): imports must point to a lower layer", pkg, rank, imp, r)
				}
			}
			all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
			slices.Sort(all)
			for _, imp := range slices.Compact(all) {
				if rel, ok := strings.CutPrefix(imp, root); ok && coreInternal(rel) {
					t.Errorf("%s (module %s) imports the core module's %s: adapter modules use the core's public packages only", pkg, modPath, rel)
				}
			}
		}
	}
}

// coreInternal reports whether pkg, a path below the repository's root,
// is an internal package of the core module (internal/..., lb/internal/...,
// lb/resolver/internal/...): Go lets every module under the root import
// them, but they make no compatibility promise across the modules'
// releases. The adapter modules' own internal packages are theirs.
func coreInternal(pkg string) bool {
	if strings.HasPrefix(pkg, "adapters/") {
		return false
	}
	return strings.HasPrefix(pkg, "internal/") || strings.Contains(pkg, "/internal/")
}
