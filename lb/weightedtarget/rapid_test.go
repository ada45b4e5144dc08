package weightedtarget

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
)

// modelTarget is the model's view of one target.
type modelTarget struct {
	weight   uint32
	reported lb.ConnectivityState
	agg      lb.ConnectivityState // sticky TRANSIENT_FAILURE
	failSeq  int
}

// weightsMachine drives the policy with random child reports, republished
// pickers, config changes and picks, and checks after every step that the
// published state is the model's aggregate and that the picks since the
// READY set (or a READY weight) last changed follow the weights exactly:
// every run of one period of consecutive picks holds each READY target its
// reduced weight times.
type weightsMachine struct {
	t       *rapid.T
	e       *env
	targets map[string]*modelTarget
	failSeq int
	// picks since the READY set or weights last changed, and that set.
	picks []string
	ready map[string]uint32
	token int
}

var (
	poolNames  = []string{"t0", "t1", "t2", "t3", "t4"}
	stateNames = []string{"CONNECTING", "IDLE", "READY", "TRANSIENT_FAILURE"}
	stateByKey = map[string]lb.ConnectivityState{
		"CONNECTING": lb.Connecting, "IDLE": lb.Idle, "READY": lb.Ready, "TRANSIENT_FAILURE": lb.TransientFailure,
	}
)

func TestPicksFollowWeightsExactly(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		m := &weightsMachine{t: t, e: newEnv(t), targets: make(map[string]*modelTarget)}
		m.reconfig(t)
		t.Repeat(map[string]func(*rapid.T){
			"report":    m.report,
			"republish": m.republish,
			"reconfig":  m.reconfig,
			"pick":      m.pick,
			"":          m.check,
		})
	})
}

func (m *weightsMachine) names() []string { return slices.Sorted(maps.Keys(m.targets)) }

func (m *weightsMachine) reconfig(t *rapid.T) {
	chosen := rapid.SliceOfNDistinct(rapid.SampledFrom(poolNames), 1, len(poolNames), rapid.ID[string]).Draw(t, "targets")
	next := make(map[string]*modelTarget)
	var specs []targetSpec
	for _, name := range chosen {
		w := rapid.Uint32Range(1, 8).Draw(t, "weight_"+name)
		mt, ok := m.targets[name]
		if !ok {
			mt = &modelTarget{reported: lb.Connecting, agg: lb.Connecting}
		}
		mt.weight = w
		next[name] = mt
		specs = append(specs, scriptTarget(name, w))
	}
	m.targets = next
	m.e.update(nil, specs...)
}

func (m *weightsMachine) report(t *rapid.T) {
	name := rapid.SampledFrom(m.names()).Draw(t, "target")
	key := rapid.SampledFrom(stateNames).Draw(t, "state")
	s := stateByKey[key]
	m.token++
	m.e.h.Report(name, s, fmt.Sprint(m.token))
	mt := m.targets[name]
	mt.reported = s
	switch {
	case s == lb.Ready:
		mt.agg = lb.Ready
	case s == lb.TransientFailure:
		mt.agg = lb.TransientFailure
		m.failSeq++
		mt.failSeq = m.failSeq
	case mt.agg != lb.TransientFailure:
		mt.agg = s
	}
}

// republish makes a READY target publish a new READY picker: the policy
// builds a new picker, whose schedule must continue the old one's.
func (m *weightsMachine) republish(t *rapid.T) {
	var ready []string
	for _, name := range m.names() {
		if m.targets[name].reported == lb.Ready {
			ready = append(ready, name)
		}
	}
	if len(ready) == 0 {
		t.Skip("no READY target")
	}
	name := rapid.SampledFrom(ready).Draw(t, "target")
	m.token++
	m.e.h.Report(name, lb.Ready, fmt.Sprint(m.token))
}

func (m *weightsMachine) readySet() map[string]uint32 {
	out := make(map[string]uint32)
	for name, mt := range m.targets {
		if mt.agg == lb.Ready {
			out[name] = mt.weight
		}
	}
	return out
}

// period returns the READY targets' period and each one's count per
// period.
func period(ready map[string]uint32) (int, map[string]int) {
	var g uint32
	for _, w := range ready {
		for b := w; b != 0; {
			g, b = b, g%b
		}
	}
	total, want := 0, make(map[string]int)
	for name, w := range ready {
		want[name] = int(w / g)
		total += int(w / g)
	}
	return total, want
}

func (m *weightsMachine) pick(t *rapid.T) {
	ready := m.readySet()
	if len(ready) == 0 {
		t.Skip("no READY target")
	}
	p, _ := period(ready)
	n := rapid.IntRange(1, 3*p).Draw(t, "picks")
	m.picks = append(m.picks, pickSeq(t, m.e.h.State().Picker, m.e.names(slices.Collect(maps.Keys(ready))...), n)...)
}

// check runs after every step.
func (m *weightsMachine) check(t *rapid.T) {
	ready := m.readySet()
	if !maps.Equal(ready, m.ready) {
		m.ready, m.picks = ready, nil
	}
	var c lb.StateCounter
	latest, latestSeq := "", -1
	for _, name := range m.names() {
		mt := m.targets[name]
		c.Add(mt.agg)
		if mt.agg == lb.TransientFailure && mt.failSeq > latestSeq {
			latest, latestSeq = name, mt.failSeq
		}
	}
	s := m.e.h.State()
	if want := c.Aggregate(); s.ConnectivityState != want {
		t.Fatalf("published %v, want %v (targets %v)", s.ConnectivityState, want, m.describe())
	}
	if s.ConnectivityState == lb.TransientFailure {
		if err := pickErr(s.Picker); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("target %q", latest)) {
			t.Fatalf("TRANSIENT_FAILURE pick error %v, want one naming the latest failure, %s", err, latest)
		}
	}
	if len(ready) > 0 {
		p, want := period(ready)
		checkPeriods(t, m.picks, p, want)
	}
}

func (m *weightsMachine) describe() string {
	var parts []string
	for _, name := range m.names() {
		mt := m.targets[name]
		parts = append(parts, fmt.Sprintf("%s(w=%d %v counts-as %v)", name, mt.weight, mt.reported, mt.agg))
	}
	return strings.Join(parts, " ")
}
