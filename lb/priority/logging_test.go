package priority

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/resolver"
)

// No log line repeats a key (policy=, child=); a child's lines name the
// child.
func TestLogLinesNamePolicyOnceAndTheChild(t *testing.T) {
	t.Parallel()
	logs := &lbtest.Logs{}
	e := newEnvWith(t, []lbtest.Option{lbtest.WithLogger(slog.New(logs))})
	e.h.Registry().Register(pickfirst.Builder{})
	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0")}, childSpec{name: "p0", policy: `[{"pick_first": {}}]`})
	e.h.SubConnFor("10.0.0.1:80").Ready()

	var pickFirstLines int
	for _, l := range logs.Lines() {
		if strings.Count(l, " policy=") > 1 || strings.Count(l, " child=") > 1 || strings.Contains(l, "lb_policy=") {
			t.Errorf("log line %q: a key repeats", l)
		}
		if strings.Contains(l, " policy=pick_first") {
			pickFirstLines++
			if !strings.Contains(l, " child=p0") {
				t.Errorf("child's log line %q does not name the child", l)
			}
		}
	}
	if pickFirstLines == 0 {
		t.Fatalf("pick_first logged nothing:\n%s", logs.String())
	}
}
