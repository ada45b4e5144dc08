package consistenthash

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// newRing builds a ring_hash balancer on a harness of its own over addrs
// with the config configJSON, and returns the harness.
func newRing(t *testing.T, configJSON string, addrs ...string) *lbtest.Harness {
	t.Helper()
	h := lbtest.New(t, lbtest.WithRegistry(lbtest.NewRegistry(RingHashBuilder{})))
	_, cfg := h.BuildPolicy(RingHashName, configJSON)
	as := make([]resolver.Address, len(addrs))
	for i, a := range addrs {
		as[i] = resolver.Address{Addr: a}
	}
	if err := h.UpdateAddresses(cfg, as...); err != nil {
		t.Fatal(err)
	}
	return h
}

// hashed returns pick info whose hash is h.
func hashed(h uint64) lb.PickInfo {
	return lb.PickInfo{Ctx: context.Background(), Hash: h, HasHash: true}
}

// withHeader returns pick info carrying header: value.
func withHeader(header, value string) lb.PickInfo {
	md := http.Header{}
	md.Set(header, value)
	return lb.PickInfo{Ctx: context.Background(), Metadata: md}
}

// current returns the published picker.
func current(t *testing.T, h *lbtest.Harness) *picker {
	t.Helper()
	p, ok := h.State().Picker.(*picker)
	if !ok {
		t.Fatalf("published picker %T, want the ring's", h.State().Picker)
	}
	return p
}

// ownerOf returns the address of the endpoint the ring maps hash to
// before any state is considered.
func ownerOf(t *testing.T, h *lbtest.Harness, hash uint64) string {
	t.Helper()
	p := current(t, h)
	sc := p.endpoints[p.table.slots[p.table.first(hash)]].result.SubConn
	return sc.(*lbtest.SubConn).Addresses()[0].Addr
}

// wantQueued checks that a pick waits for the next picker.
func wantQueued(t *testing.T, p lb.Picker, info lb.PickInfo) {
	t.Helper()
	if _, err := p.Pick(info); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("pick: %v, want it queued (ErrNoSubConnAvailable)", err)
	}
}

// wantPicked checks that a pick returns the SubConn of addr.
func wantPicked(t *testing.T, p lb.Picker, info lb.PickInfo, addr string) {
	t.Helper()
	r, err := p.Pick(info)
	if err != nil {
		t.Fatalf("pick: %v, want %s", err, addr)
	}
	if got := r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr; got != addr {
		t.Fatalf("pick went to %s, want %s", got, addr)
	}
}

// toAddrs returns resolver addresses of as.
func toAddrs(as []string) []resolver.Address {
	out := make([]resolver.Address, len(as))
	for i, a := range as {
		out[i] = resolver.Address{Addr: a}
	}
	return out
}

// addrs returns n addresses "10.0.0.i:80".
func addrs(n int) []string {
	as := make([]string, n)
	for i := range as {
		as[i] = fmt.Sprintf("10.0.0.%d:80", i+1)
	}
	return as
}
