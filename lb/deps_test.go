package lb_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
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

// layers ranks the packages of the core module and of the adapter modules
// (TestAdapterModulesPackageOrder): a package may import only
// packages of a lower rank (tests aside). An entry ending in "/" matches
// every package below it, any other entry one package; the first match
// wins, so the list runs from the most specific entry to the least.
var layers = []struct {
	pkg  string
	rank int
}{
	{"lb/attributes", 0},
	{"lb/lbtest/httpbackend", 0},              // a test HTTP server, imports nothing of lbkit
	{"internal/dnstest", 0},                   // a DNS server for tests, imports nothing of lbkit
	{"lb/lbtest/testpki", 0},                  // throwaway certificates for tests, imports nothing of lbkit
	{"lb/resolver/regularfile", 0},            // bounded reads of regular files, imports nothing of lbkit
	{"internal/option", 0},                    // functional options checked for nil, imports nothing of lbkit
	{"internal/threadcpu", 0},                 // the CPU benchmarks' thread clock, imports nothing of lbkit
	{"lb/edf/edfbench", 0},                    // the EDF benchmarks' weights and heap baseline, imports nothing of lbkit
	{"adapters/xds/internal/controlplane", 0}, // a go-control-plane server for tests, imports nothing of lbkit
	{"adapters/xds/internal/cputime", 0},      // the xDS benchmarks' process CPU clock, imports nothing of lbkit
	{"lb/edf", 0},
	{"lb/backoff", 0},
	{"lb/resolver/internal/", 0}, // helpers of the resolvers
	{"lb/internal/jsonx", 0},     // the JSON toolkit of configs and EDS
	{"sim/hist", 0},              // the simulator's latency histogram, imports nothing of lbkit
	{"lb/resolver", 1},
	{"lb/hierarchy", 2},
	{"lb/weight", 2},
	{"lb/hashkey", 2},
	{"lb/draining", 2},
	{"lb", 3},
	{"lb/resolver/", 3}, // the resolvers: never lb or a policy
	{"lb/childmanager", 4},
	{"lb/lbtest", 4},
	{"lb/connstate", 4}, // one connection's states and backoff, shared by conn and sim
	{"lb/slowstart", 4}, // slow start's ramp and tracker, run by lb/endpointlist
	{"lb/route", 4},     // xDS route configurations and their matching, for the routing policy and the xDS adapter
	{"lb/endpointlist", 5},
	{"lb/policies", 7}, // imports every built-in policy, for conn and sim
	{"lb/", 6},         // the policies
	{"conn", 8},
	{"sim", 8},                              // the fleet simulator: runs the policies and lb/connstate, never conn
	{"conn/", 9},                            // conn/debugpage
	{"adapters/xds/cmd/", 12},               // the xDS demo, a program like cmd/
	{"adapters/xds/internal/grpcbench", 11}, // lbkit's xDS client against grpc-go's, its own module
	{"adapters/", 10},
	{"demo", 11}, // the demos' runner, under cmd/lbdemo and adapters/xds/cmd/xdsdemo
	{"cmd/", 12},
	{"internal/", 11},
}

func rankOf(pkg string) (int, bool) {
	for _, l := range layers {
		if pkg == l.pkg || (strings.HasSuffix(l.pkg, "/") && strings.HasPrefix(pkg, l.pkg)) {
			return l.rank, true
		}
	}
	return 0, false
}

// Dependencies point one way: a package imports only packages of a lower
// layer (see layers, which docs/architecture.md draws).
func TestPackageOrder(t *testing.T) {
	const module = "github.com/lbkit/lbkit/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		rank, ok := rankOf(pkg)
		if !ok {
			t.Errorf("package %s has no layer in lb/deps_test.go", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if r, _ := rankOf(imp); r >= rank {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point to a lower layer", pkg, rank, imp, r)
			}
		}
	}
}

// docs/architecture.md draws the layers as lines "N  entry, entry, ...
// (comment)" in the code block of "Packages and their order": each line
// names exactly the entries of layers at rank N.
func TestArchitectureDocDrawsTheLayers(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Packages and their order")
	if !ok {
		t.Fatal(`docs/architecture.md has no section "Packages and their order"`)
	}
	_, block, _ := strings.Cut(section, "```\n")
	block, _, _ = strings.Cut(block, "```")
	line := regexp.MustCompile(`^\s*(\d+)\s+(.*?)(\s{2,}\(.*\))?$`)
	drawn := map[int][]string{}
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("docs/architecture.md: layer line %q is not \"N  entry, entry  (comment)\"", l)
		}
		rank, _ := strconv.Atoi(m[1])
		drawn[rank] = strings.Split(m[2], ", ")
	}
	want := map[int][]string{}
	for _, l := range layers {
		want[l.rank] = append(want[l.rank], l.pkg)
	}
	for rank := range max(len(want), len(drawn)) {
		got, exp := slices.Sorted(slices.Values(drawn[rank])), slices.Sorted(slices.Values(want[rank]))
		if !slices.Equal(got, exp) {
			t.Errorf("docs/architecture.md draws layer %d as %q; lb/deps_test.go has %q", rank, got, exp)
		}
	}
}
