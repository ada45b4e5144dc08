package lb_test

import (
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// boundParent is a ParentBuilder that remembers the registry it is bound to.
type boundParent struct{ reg *lb.Registry }

func (boundParent) Name() string { return "bound_parent" }

func (boundParent) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }

func (boundParent) InRegistry(r *lb.Registry) lb.Builder { return boundParent{reg: r} }

// A ParentBuilder is registered bound to the registry it is registered in;
// registering one builder in two registries binds two copies and leaves the
// original alone.
func TestRegisterBindsParentBuilders(t *testing.T) {
	t.Parallel()
	orig := boundParent{}
	r1, r2 := lb.NewRegistry(orig), lb.NewRegistry()
	r2.Register(orig)
	for _, r := range []*lb.Registry{r1, r2} {
		if got := r.Get("bound_parent").(boundParent).reg; got != r {
			t.Errorf("registered builder bound to %p, want its registry %p", got, r)
		}
	}
	if orig.reg != nil {
		t.Error("registering mutated the original builder")
	}
}
