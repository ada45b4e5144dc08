package conn

import (
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weightedtarget"
)

// namedBuilder registers a builder under another name.
type namedBuilder struct {
	lb.Builder
	name string
}

func (b namedBuilder) Name() string { return b.name }

// A channel given a registry finds its policies there, and only there.
func TestChannelUsesItsRegistry(t *testing.T) {
	sc := `{"loadBalancingConfig":[{"only_in_my_registry":{}}]}`
	_, err := New("test:///svc", WithResolver(&testResolver{}), WithDefaultServiceConfig(sc))
	if err == nil || !strings.Contains(err.Error(), `"only_in_my_registry"`) {
		t.Fatalf("default registry: New = %v, want an error naming the unregistered policy", err)
	}

	u := &updateCounter{}
	reg := lb.NewRegistry(namedBuilder{Builder: u, name: "only_in_my_registry"})
	c, r, _ := newTestChannel(t, WithRegistry(reg), WithDefaultServiceConfig(sc))
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80")})
	c.Connect()
	settle(t, c)
	if got := u.taken(); len(got) != 1 {
		t.Fatalf("the registry's policy got %d updates, want 1", len(got))
	}

	// The default policy is looked up in the channel's registry too.
	bare, r2, _ := newTestChannel(t, WithRegistry(lb.NewRegistry()))
	r2.update(t, resolver.State{Addresses: addrs("10.0.0.1:80")})
	bare.Connect()
	waitState(t, bare, lb.TransientFailure)
	if _, err := bare.Pick(guard(t), PickOptions{}); err == nil || !strings.Contains(err.Error(), "no policy registered as pick_first") {
		t.Fatalf("registry without pick_first: pick error %v, want one saying pick_first is not registered", err)
	}
}

// A channel's registry reaches the policy lists nested in its config: a
// parent registered there parses its children against it
// (lb.ParentBuilder), at every depth.
func TestChannelRegistryReachesNestedPolicyLists(t *testing.T) {
	sc := `{"loadBalancingConfig":[{"outlier_detection_experimental":{"childPolicy":[
		{"weighted_target_experimental":{"targets":{"t":{"weight":1,"childPolicy":[
			{"priority_experimental":{"priorities":["p"],"children":{"p":{"config":[{"only_in_my_registry":{}}]}}}}]}}}}]}}]}`
	u := &updateCounter{}
	reg := lb.NewRegistry(outlierdetection.Builder{}, weightedtarget.Builder{}, priority.NewBuilder(),
		namedBuilder{Builder: u, name: "only_in_my_registry"})
	c, r, _ := newTestChannel(t, WithRegistry(reg), WithDefaultServiceConfig(sc))
	r.update(t, resolver.State{Addresses: []resolver.Address{
		hierarchy.Set(resolver.Address{Addr: "10.0.0.1:80"}, []string{"t", "p"})}})
	c.Connect()
	settle(t, c)
	if got := u.taken(); len(got) != 1 {
		t.Fatalf("the nested policy got %d updates, want 1", len(got))
	}
}
