package lbtest

import (
	"errors"
	"fmt"
	"slices"

	"pgregory.net/rapid"

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

// Pool returns n addresses, "e0" to "e<n-1>", a pool for
// [NewEndpointModel].
func Pool(n int) []resolver.Address {
	pool := make([]resolver.Address, n)
	for i := range pool {
		pool[i] = resolver.Address{Addr: fmt.Sprintf("e%d", i)}
	}
	return pool
}

// Addrs returns n addresses named "a", "b", ... (n at most 26), whose
// picks read as a string of letters.
func Addrs(n int) []resolver.Address {
	out := make([]resolver.Address, n)
	for i := range out {
		out[i] = resolver.Address{Addr: string(rune('a' + i))}
	}
	return out
}

// Addresses returns one address per name, in order.
func Addresses(names ...string) []resolver.Address {
	out := make([]resolver.Address, len(names))
	for i, n := range names {
		out[i] = resolver.Address{Addr: n}
	}
	return out
}

// DrawUpdate draws an update of one to seven endpoints of the pool,
// duplicates included, sends it with cfg ([EndpointModel.Update]) and
// fails t if the balancer returns an error.
func (m *EndpointModel) DrawUpdate(t *rapid.T, cfg lb.Config) {
	endpoints := rapid.SliceOfN(rapid.IntRange(0, len(m.pool)-1), 1, 7).Draw(t, "endpoints")
	if err := m.Update(cfg, endpoints...); err != nil {
		t.Fatalf("update: %v", err)
	}
}

// drawnReports are the SubConn reports DrawReport draws from.
var drawnReports = []lb.SubConnState{
	{ConnectivityState: lb.Ready},
	{ConnectivityState: lb.Idle},
	{ConnectivityState: lb.TransientFailure, ConnectionError: errors.New("refused")},
}

// DrawReport draws one of the endpoints of the last update and a report,
// READY, IDLE or TRANSIENT_FAILURE, and sends it ([EndpointModel.Report]).
func (m *EndpointModel) DrawReport(t *rapid.T) {
	i := rapid.SampledFrom(m.listed).Draw(t, "endpoint")
	m.Report(i, rapid.SampledFrom(drawnReports).Draw(t, "state"))
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
