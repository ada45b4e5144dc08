package readmecheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestReadmeCodeBlocksCompile writes each ```go block of README.md into a
// temporary package inside the module it imports (the core, or an adapter
// module such as adapters/grpcgo or adapters/xds) and vets it, which
// type-checks it; a block that is a test file (package *_test with func
// Test…) is also run. The blocks of one module are vetted by one go vet (and
// run by one go test), which share the work of loading the module; each
// block's directory is named after its number, so a failure names the block.
func TestReadmeCodeBlocksCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no go code block")
	}
	mods, _ := filepath.Glob(filepath.Join(root, "adapters", "*", "go.mod"))
	type work struct{ vet, test []string } // packages, relative to the module
	byModule := map[string]*work{}
	var modules []string
	for i, m := range blocks {
		src := m[1]
		// A block importing an adapter that is a module of its own
		// (grpcgo, xds, otel) is built in that module.
		modRoot := root
		for _, mod := range mods {
			dir := filepath.Dir(mod)
			if bytes.Contains(src, []byte(`"github.com/lbkit/lbkit/adapters/`+filepath.Base(dir))) {
				modRoot = dir
			}
		}
		// A name starting with "_" is not matched by ./..., so the go list
		// of lb's TestPackageOrder, running beside this test, skips it.
		dir, err := os.MkdirTemp(modRoot, fmt.Sprintf("_readmecheck-block%d-", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		isTest := bytes.Contains(src, []byte("func Test"))
		name := "main.go"
		if isTest {
			name = "block_test.go"
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o600); err != nil {
			t.Fatal(err)
		}
		w := byModule[modRoot]
		if w == nil {
			w = &work{}
			byModule[modRoot] = w
			modules = append(modules, modRoot)
		}
		pkg := "./" + filepath.Base(dir)
		if isTest {
			w.test = append(w.test, pkg)
		} else {
			w.vet = append(w.vet, pkg)
		}
	}
	for _, modRoot := range modules {
		w := byModule[modRoot]
		for _, args := range [][]string{append([]string{"vet"}, w.vet...), append([]string{"test", "-count=1"}, w.test...)} {
			if len(args) == 1 || (args[0] == "test" && len(w.test) == 0) {
				continue
			}
			cmd := exec.Command("go", args...)
			cmd.Dir = modRoot
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("README blocks do not build (_readmecheck-blockN is block N, counting ```go blocks from 0): go %s: %v\n%s",
					strings.Join(args, " "), err, out)
			}
		}
	}
}
