package grpcgo_test

import (
	"testing"

	"google.golang.org/grpc/balancer"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// optionsBuilder records the BuildOptions it is built with.
type optionsBuilder struct{ got *lb.BuildOptions }

func (optionsBuilder) Name() string { return "options" }
func (b optionsBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	*b.got = opts
	return lbtest.NewLeafBuilder("options").Build(cc, opts)
}

// The adapter builds lbkit policies with complete BuildOptions
// (WithDefaults applied), as every parent does, so builders need not.
func TestBuildsWithCompleteOptions(t *testing.T) {
	var opts lb.BuildOptions
	bal := grpcgo.NewBuilder("options_via_grpc", optionsBuilder{got: &opts}).Build(newFakeCC(), balancer.BuildOptions{})
	defer bal.Close()
	if opts.Clock == nil || opts.Logger == nil || opts.Rand == nil || opts.Scheduler == nil || opts.Metrics == nil || opts.OnEvent == nil {
		t.Fatalf("BuildOptions %+v has a nil field", opts)
	}
}
