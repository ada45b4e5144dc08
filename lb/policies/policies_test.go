package policies_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	_ "github.com/lbkit/lbkit/lb/policies"
)

// Importing the package registers every built-in policy under its name.
func TestRegistersEveryBuiltInPolicy(t *testing.T) {
	want := []string{
		"least_request_experimental", "maglev_experimental", "outlier_detection_experimental",
		"peak_ewma_experimental", "pick_first", "priority_experimental",
		"ring_hash_experimental", "round_robin", "weighted_round_robin",
		"weighted_target_experimental", "xds_cluster_impl_experimental",
		"xds_routing_experimental",
	}
	got := lb.DefaultRegistry().Names()
	for _, name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("%s is not registered; registered: %q", name, got)
		}
	}
}

// The package imports every package under lb/ that registers a policy (a
// non-test file calling lb.Register), so that a new policy cannot be left
// out of the list.
func TestImportsEveryRegisteringPackage(t *testing.T) {
	const module = "github.com/lbkit/lbkit/"
	out, err := exec.Command("go", "list", "-deps", module+"lb/policies").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	registering := map[string]bool{}
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		if rel, ok := strings.CutPrefix(filepath.ToSlash(filepath.Dir(p)), "../"); ok && err == nil && strings.Contains(string(src), "lb.Register(") {
			registering[path.Join("lb", rel)] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range registering {
		if !slices.Contains(deps, module+pkg) {
			t.Errorf("%s registers a policy but lb/policies does not import it", pkg)
		}
	}
	if len(registering) < 11 {
		t.Errorf("found %d packages registering a policy, want the 11 of the built-in policies at least", len(registering))
	}
}
