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
// module such as adapters/grpcgo or adapters/xds) and vets it, which type-checks it; a block that is a test
// file (package *_test with func Test…) is also run.
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
	for i, m := range blocks {
		src := m[1]
		t.Run(fmt.Sprintf("block%d", i), func(t *testing.T) {
			// A block importing an adapter that is a module of its own
			// (grpcgo, xds, otel) is built in that module.
			modRoot := root
			mods, _ := filepath.Glob(filepath.Join(root, "adapters", "*", "go.mod"))
			for _, mod := range mods {
				dir := filepath.Dir(mod)
				if bytes.Contains(src, []byte(`"github.com/lbkit/lbkit/adapters/`+filepath.Base(dir))) {
					modRoot = dir
				}
			}
			dir, err := os.MkdirTemp(modRoot, "readmecheck-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			isTest := bytes.Contains(src, []byte("func Test"))
			name := "main.go"
			if isTest {
				name = "block_test.go"
			}
			if err := os.WriteFile(filepath.Join(dir, name), src, 0o600); err != nil {
				t.Fatal(err)
			}
			pkg := "./" + filepath.Base(dir)
			args := []string{"vet", pkg}
			if isTest {
				args = []string{"test", "-count=1", pkg}
			}
			cmd := exec.Command("go", args...)
			cmd.Dir = modRoot
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("README block %d does not build: go %s: %v\n%s\n--- block ---\n%s",
					i, strings.Join(args, " "), err, out, src)
			}
		})
	}
}
