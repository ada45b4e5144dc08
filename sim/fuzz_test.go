package sim

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// scenarioFiles returns every shipped scenario and every scenario of the
// test corpus, by path.
func scenarioFiles(tb testing.TB) map[string][]byte {
	files := map[string][]byte{}
	for _, glob := range []string{"scenarios/*.json", "testdata/scenarios/*.json"} {
		names, _ := filepath.Glob(glob)
		for _, name := range names {
			data, err := os.ReadFile(name)
			if err != nil {
				tb.Fatal(err)
			}
			files[name] = data
		}
	}
	if len(files) == 0 {
		tb.Fatal("no scenario in sim/scenarios or sim/testdata/scenarios")
	}
	return files
}

func TestShippedScenariosParse(t *testing.T) {
	for name, data := range scenarioFiles(t) {
		if _, err := ParseScenario(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzParseScenario checks that no input makes the parser panic and that
// every refusal is a *lb.ConfigError. The seed corpus is the shipped
// scenarios and testdata/scenarios/*.json.
func FuzzParseScenario(f *testing.F) {
	for _, data := range scenarioFiles(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario(data)
		if err != nil {
			var ce *lb.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *lb.ConfigError", err, err)
			}
			return
		}
		if s.Name() == "" {
			t.Fatal("a parsed scenario has no name")
		}
	})
}
