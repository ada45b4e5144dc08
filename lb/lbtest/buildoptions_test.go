package lbtest_test

import (
	"testing"

	"github.com/lbkit/lbkit/lb/lbtest"
)

// The harness builds with complete BuildOptions (WithDefaults applied), as
// every parent does, so builders need not.
func TestHarnessBuildsWithCompleteOptions(t *testing.T) {
	opts := lbtest.New(t).BuildOptions()
	if opts.Clock == nil || opts.Logger == nil || opts.Rand == nil || opts.Scheduler == nil || opts.Metrics == nil || opts.OnEvent == nil {
		t.Fatalf("BuildOptions %+v has a nil field", opts)
	}
}
