package lbtest

import (
	"slices"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// EndpointModel is the model side of a state-machine test (rapid) of a leaf
// policy that keeps one SubConn per endpoint, such as round_robin: it sends
// updates and SubConn reports through a [Harness] and remembers what the
// policy was told, so that the test can say what the policy should do.
// Endpoints are named by their index in a fixed pool of addresses.
//
// Like the harness, it must be used from the test's goroutine.
type EndpointModel struct {
	h    *Harness
	pool []resolver.Address
	// listed is the last update's endpoints, in order, without duplicates.
	listed []int
	// reports is the last state sent to each SubConn.
	reports map[lb.SubConn]lb.ConnectivityState
}

// NewEndpointModel returns a model over the endpoints of pool for the
// balancer under test in h.
func NewEndpointModel(h *Harness, pool ...resolver.Address) *EndpointModel {
	return &EndpointModel{h: h, pool: pool, reports: make(map[lb.SubConn]lb.ConnectivityState)}
}

// Update sends the pool's addresses at endpoints, in that order and
// duplicates included, with cfg, and returns the balancer's error.
func (m *EndpointModel) Update(cfg lb.Config, endpoints ...int) error {
	m.h.tb.Helper()
	addrs := make([]resolver.Address, len(endpoints))
	m.listed = m.listed[:0]
	for j, i := range endpoints {
		addrs[j] = m.pool[i]
		if !slices.Contains(m.listed, i) {
			m.listed = append(m.listed, i)
		}
	}
	return m.h.UpdateAddresses(cfg, addrs...)
}

// Listed returns the endpoints of the last update, in order, without
// duplicates. The slice belongs to the model.
func (m *EndpointModel) Listed() []int { return m.listed }

// SubConn returns the live (not shut down) SubConn of endpoint i, failing
// the test if there is none.
func (m *EndpointModel) SubConn(i int) *SubConn {
	m.h.tb.Helper()
	for _, sc := range m.h.CC.SubConns() {
		if !sc.IsShutdown() && sc.Addresses()[0] == m.pool[i] {
			return sc
		}
	}
	m.h.tb.Fatalf("lbtest: no live SubConn for %v", m.pool[i])
	return nil
}

// Report sends s to the SubConn of endpoint i and remembers it.
func (m *EndpointModel) Report(i int, s lb.SubConnState) {
	m.h.tb.Helper()
	sc := m.SubConn(i)
	sc.UpdateState(s)
	m.reports[sc] = sc.State()
}

// Ready returns the SubConns a READY picker should hold: those of the
// listed endpoints, in order, whose last report was READY.
func (m *EndpointModel) Ready() []lb.SubConn {
	m.h.tb.Helper()
	var out []lb.SubConn
	for _, i := range m.listed {
		if sc := m.SubConn(i); m.reports[sc] == lb.Ready {
			out = append(out, sc)
		}
	}
	return out
}
