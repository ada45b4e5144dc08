package consistenthash

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// modelEndpoint is the model's view of one endpoint, from the text of gRFC
// A42 (aggregation), A61 (picker, proactive connection) and A62 (sticky
// TRANSIENT_FAILURE).
type modelEndpoint struct {
	// sc is what the SubConn itself last reported; pending is set when
	// the policy asked it to connect and it has not started yet.
	sc      lb.ConnectivityState
	pending bool
	// counted is the state the policy must count for the endpoint.
	counted lb.ConnectivityState
	// connects is how many times the policy must have called Connect.
	connects int
}

type ringMachine struct {
	h   *lbtest.Harness
	eps []*modelEndpoint
}

// connect is the policy asking endpoint i to connect.
func (m *ringMachine) connect(i int) {
	ep := m.eps[i]
	ep.connects++
	ep.pending = true
	if ep.counted == lb.Idle {
		ep.counted = lb.Connecting
	}
}

// aggregate is A42's six rules.
func (m *ringMachine) aggregate() lb.ConnectivityState {
	n := map[lb.ConnectivityState]int{}
	for _, ep := range m.eps {
		n[ep.counted]++
	}
	switch {
	case n[lb.Ready] > 0:
		return lb.Ready
	case n[lb.TransientFailure] >= 2:
		return lb.TransientFailure
	case n[lb.Connecting] > 0:
		return lb.Connecting
	case n[lb.TransientFailure] == 1 && len(m.eps) > 1:
		return lb.Connecting
	case n[lb.Idle] > 0:
		return lb.Idle
	}
	return lb.TransientFailure
}

// proactive is A61: when CONNECTING or TRANSIENT_FAILURE and no endpoint is
// CONNECTING, one IDLE endpoint (lbkit: the first listed) connects.
func (m *ringMachine) proactive() {
	if agg := m.aggregate(); agg != lb.Connecting && agg != lb.TransientFailure {
		return
	}
	for _, ep := range m.eps {
		if ep.counted == lb.Connecting {
			return
		}
	}
	for i, ep := range m.eps {
		if ep.counted == lb.Idle {
			m.connect(i)
			return
		}
	}
}

// report delivers a SubConn state to endpoint i and applies the rules.
func (m *ringMachine) report(i int, s lb.ConnectivityState) {
	ep := m.eps[i]
	ep.sc = s
	switch s {
	case lb.Ready:
		ep.counted = lb.Ready
	case lb.Connecting:
		ep.pending = false
		if ep.counted != lb.TransientFailure {
			ep.counted = lb.Connecting
		}
	case lb.TransientFailure:
		ep.counted = lb.TransientFailure
	case lb.Idle:
		if ep.counted == lb.TransientFailure {
			m.connect(i) // sticky: the failed endpoint retries by itself
		} else {
			ep.counted = lb.Idle
		}
	}
	m.proactive()
	var err error
	if s == lb.TransientFailure {
		err = errors.New("refused")
	}
	m.h.SubConn(i).UpdateState(lb.SubConnState{ConnectivityState: s, ConnectionError: err})
}

// check compares the policy with the model.
func (m *ringMachine) check(t *rapid.T) {
	if got, want := m.h.State().ConnectivityState, m.aggregate(); got != want {
		t.Fatalf("state %v, model %v (%s)", got, want, m)
	}
	for i, ep := range m.eps {
		if got := m.h.SubConn(i).ConnectCount(); got != ep.connects {
			t.Fatalf("endpoint %d connected %d times, model %d (%s)", i, got, ep.connects, m)
		}
	}
}

func (m *ringMachine) String() string {
	s := ""
	for i, ep := range m.eps {
		s += fmt.Sprintf("[%d sc=%v counted=%v connects=%d] ", i, ep.sc, ep.counted, ep.connects)
	}
	return s
}

// TestModel drives each policy with random SubConn reports and picks and
// checks, after every step, the aggregate state, the Connect calls and
// every pick against the model. ring_hash and maglev share everything but
// their table, so one model covers both.
func TestModel(t *testing.T) {
	for _, c := range []struct{ test, policy, config string }{
		{RingHashName, RingHashName, `{"minRingSize": 16, "maxRingSize": 64}`},
		{RingHashName + "/entriesPerWeight", RingHashName, `{"entriesPerWeight": 8, "minRingSize": 16, "maxRingSize": 64}`},
		{MaglevName, MaglevName, `{"tableSize": 31}`},
	} {
		t.Run(c.test, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { runModel(t, c.policy, c.config) })
		})
	}
}

// runModel is one run of TestModel.
func runModel(t *rapid.T, name, config string) {
	n := rapid.IntRange(1, 6).Draw(t, "endpoints")
	m := &ringMachine{h: lbtest.New(t, lbtest.WithRegistry(lbtest.NewRegistry(RingHashBuilder{}, MaglevBuilder{})))}
	_, cfg := m.h.BuildPolicy(name, config)
	var as []resolver.Address
	for i := range n {
		as = append(as, resolver.Address{Addr: fmt.Sprintf("10.0.0.%d:80", i)})
		m.eps = append(m.eps, &modelEndpoint{sc: lb.Idle, counted: lb.Idle})
	}
	if err := m.h.UpdateAddresses(cfg, as...); err != nil {
		t.Fatal(err)
	}
	m.check(t)
	for range 60 {
		i := rapid.IntRange(0, n-1).Draw(t, "endpoint")
		ep := m.eps[i]
		var choices []string
		switch {
		case ep.sc == lb.Idle && ep.pending:
			choices = []string{"connecting"}
		case ep.sc == lb.Connecting:
			choices = []string{"ready", "fail"}
		case ep.sc == lb.Ready, ep.sc == lb.TransientFailure:
			choices = []string{"idle"}
		}
		choices = append(choices, "pick")
		switch rapid.SampledFrom(choices).Draw(t, "event") {
		case "connecting":
			m.report(i, lb.Connecting)
		case "ready":
			m.report(i, lb.Ready)
		case "fail":
			m.report(i, lb.TransientFailure)
		case "idle":
			m.report(i, lb.Idle)
		case "pick":
			m.pick(t, rapid.Uint64().Draw(t, "hash"))
		}
		m.check(t)
	}
}

// pick checks one pick against A61's picker pseudo-code, then lets the
// connection it asked for happen.
func (m *ringMachine) pick(t *rapid.T, hash uint64) {
	p := m.h.State().Picker.(*picker)
	r, err := p.Pick(hashed(hash))
	first := p.table.first(hash)
	for k := range p.table.slots {
		idx := int(p.table.slots[(first+k)%len(p.table.slots)])
		switch m.eps[idx].counted {
		case lb.Ready:
			if err != nil || r.SubConn != lb.SubConn(m.h.SubConn(idx)) {
				t.Fatalf("hash %x: pick %v, %v; model: endpoint %d, READY (%s)", hash, r.SubConn, err, idx, m)
			}
			return
		case lb.Idle:
			if !errors.Is(err, lb.ErrNoSubConnAvailable) {
				t.Fatalf("hash %x: pick %v, %v; model: queue and connect endpoint %d (%s)", hash, r.SubConn, err, idx, m)
			}
			m.h.Settle()
			m.connect(idx)
			m.proactive()
			return
		case lb.Connecting:
			if !errors.Is(err, lb.ErrNoSubConnAvailable) {
				t.Fatalf("hash %x: pick %v, %v; model: queue for endpoint %d (%s)", hash, r.SubConn, err, idx, m)
			}
			return
		}
	}
	if err == nil || errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("hash %x: pick %v, %v; model: every endpoint failed, the pick fails (%s)", hash, r.SubConn, err, m)
	}
}
