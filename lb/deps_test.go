package lb_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The core (lb/... and conn/...) must never import grpc-go, directly or
// through a dependency.
func TestCoreDoesNotDependOnGRPC(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "github.com/lbkit/lbkit/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "google.golang.org/grpc") {
			t.Errorf("core module depends on %s", pkg)
		}
	}
	mod, err := exec.Command("go", "list", "-m", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, mod)
	}
	if strings.Contains(string(mod), "google.golang.org/grpc ") {
		t.Errorf("core go.mod requires google.golang.org/grpc:\n%s", mod)
	}
}
