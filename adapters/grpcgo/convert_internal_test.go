package grpcgo

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/weight"
)

func TestStatesMapOneToOne(t *testing.T) {
	pairs := []struct {
		grpc connectivity.State
		lb   lb.ConnectivityState
	}{
		{connectivity.Idle, lb.Idle},
		{connectivity.Connecting, lb.Connecting},
		{connectivity.Ready, lb.Ready},
		{connectivity.TransientFailure, lb.TransientFailure},
		{connectivity.Shutdown, lb.Shutdown},
	}
	for _, p := range pairs {
		if got := toLBState(p.grpc); got != p.lb {
			t.Errorf("toLBState(%v) = %v, want %v", p.grpc, got, p.lb)
		}
		if got := toGRPCState(p.lb); got != p.grpc {
			t.Errorf("toGRPCState(%v) = %v, want %v", p.lb, got, p.grpc)
		}
	}
}

func TestPickErrorMapping(t *testing.T) {
	cause := errors.New("connection refused")
	if got := toGRPCPickError(lb.ErrNoSubConnAvailable); got != balancer.ErrNoSubConnAvailable {
		t.Errorf("queue: got %v, want balancer.ErrNoSubConnAvailable itself", got)
	}
	drop := toGRPCPickError(lb.DropError(cause))
	if st, ok := status.FromError(drop); !ok || st.Code() != codes.Unavailable || st.Message() != cause.Error() {
		t.Errorf("drop: got %v, want status Unavailable %q", drop, cause)
	}
	for _, err := range []error{lb.TransientFailureError(cause), cause, lb.ErrTransientFailure} {
		got := toGRPCPickError(err)
		if _, ok := status.FromError(got); ok || got.Error() != err.Error() {
			t.Errorf("%v: got %#v, want a plain error with the same message", err, got)
		}
	}
	// A status error hidden in a transient failure loses its status.
	hidden := lb.TransientFailureError(status.Error(codes.PermissionDenied, "no"))
	got := toGRPCPickError(hidden)
	if _, ok := status.FromError(got); ok || got.Error() != hidden.Error() {
		t.Errorf("status cause: got %#v, want a plain error %q", got, hidden.Error())
	}
}

func TestConvertState(t *testing.T) {
	a := grpcresolver.Address{Addr: "10.0.0.1:1", Attributes: attributes.New("creds", "x")}
	b := grpcresolver.Address{Addr: "10.0.0.2:1", ServerName: "b.example"}
	c := grpcresolver.Address{Addr: "[::1]:1"}

	// From Addresses alone (no Endpoints): one endpoint each, attributes
	// from the address.
	s, m := convertState(grpcresolver.State{Addresses: []grpcresolver.Address{
		SetHierarchyPath(SetWeight(a, 5), []string{"p0", "x"}),
		b,
	}})
	if len(s.Addresses) != 2 || len(m) != 2 {
		t.Fatalf("got %v and %d endpoints, want 2", s.Addresses, len(m))
	}
	if w, _ := weight.Get(s.Addresses[0]); w != 5 {
		t.Errorf("weight: got %d, want 5", w)
	}
	if p, _ := hierarchy.Get(s.Addresses[0]); !slices.Equal(p, []string{"p0", "x"}) {
		t.Errorf("path: got %v, want [p0 x]", p)
	}
	if _, ok := weight.Get(s.Addresses[1]); ok || s.Addresses[1].ServerName != "b.example" {
		t.Errorf("second address: got %v", s.Addresses[1])
	}

	// Endpoints: a multi-address endpoint is one address, told apart
	// from a single-address endpoint with the same first address.
	// Endpoint attributes win over the first address's.
	multi := SetEndpointWeight(grpcresolver.Endpoint{Addresses: []grpcresolver.Address{SetWeight(a, 9), b, c}}, 3)
	single := grpcresolver.Endpoint{Addresses: []grpcresolver.Address{a}}
	s, m = convertState(grpcresolver.State{Endpoints: []grpcresolver.Endpoint{multi, single, {}}})
	if len(s.Addresses) != 2 || s.Addresses[0] == s.Addresses[1] {
		t.Fatalf("got %v, want two distinct addresses", s.Addresses)
	}
	if w, _ := weight.Get(s.Addresses[0]); w != 3 {
		t.Errorf("endpoint weight: got %d, want 3", w)
	}
	// What a policy does to weight and path does not change the key.
	moved := hierarchy.Set(weight.Set(s.Addresses[0], 1), []string{"q"})
	if got := m[keyOf(moved)]; len(got) != 3 || !got[0].Equal(multi.Addresses[0]) {
		t.Errorf("grpc-go addresses of the endpoint: got %v, want its three", got)
	}
	// An endpoint no longer in the update is rebuilt from the key.
	rebuilt := keyOf(s.Addresses[0]).rebuild()
	want := []grpcresolver.Address{{Addr: a.Addr}, b, c}
	if !slices.EqualFunc(rebuilt, want, grpcresolver.Address.Equal) {
		t.Errorf("rebuilt: got %v, want %v", rebuilt, want)
	}
}

// The key of an endpoint, encoded into an lbkit attribute and read back,
// rebuilds the endpoint's addresses and server names, whatever bytes they
// hold.
func FuzzEndpointKey(f *testing.F) {
	f.Add("10.0.0.1:1", "", "10.0.0.2:2", "b.example", "[::1]:3")
	f.Add("", "\x80\x80", "\xff", "", "")
	f.Fuzz(func(t *testing.T, a0, n0, a1, n1, a2 string) {
		ep := grpcresolver.Endpoint{Addresses: []grpcresolver.Address{
			{Addr: a0, ServerName: n0}, {Addr: a1, ServerName: n1}, {Addr: a2},
		}}
		s, _ := convertState(grpcresolver.State{Endpoints: []grpcresolver.Endpoint{ep}})
		if len(s.Addresses) != 1 {
			t.Fatalf("got %d addresses, want 1", len(s.Addresses))
		}
		got := keyOf(s.Addresses[0]).rebuild()
		if !slices.EqualFunc(got, ep.Addresses, grpcresolver.Address.Equal) {
			t.Fatalf("rebuilt %v, want %v", got, ep.Addresses)
		}
	})
}
