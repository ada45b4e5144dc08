package outlierdetection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// The model below is written from gRFC A50's text ("Outlier Detection
// Behavior", "Ejection and Un-ejection", "Call Counter", the two
// algorithms), with lbkit's documented readings where the text is silent
// (docs/choices.md): ejection ends at, not only after, its deadline; an
// address with no call has no rate; an ejected address is not ejected
// again; one address may always be ejected.

type modelCounts struct{ successes, failures int64 }

type modelEntry struct {
	active, inactive modelCounts
	ejected          bool
	ejectedAt        time.Time
	multiplier       int64
}

type odModel struct {
	cfg     *Config
	entries map[string]*modelEntry
	order   []string
	// timerStart is nil while no timer runs; next is the pending sweep.
	timerStart *time.Time
	next       time.Time
	now        time.Time
	rand       *rand.Rand
}

var modelPool = []string{"a", "b", "c", "d", "e"}

func TestModelOfA50(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64Range(1, 1<<20).Draw(t, "seed")
		e := newEnv(t, lbtest.WithSeed(seed))
		m := &odModel{entries: make(map[string]*modelEntry), now: time.Unix(0, 0), rand: seededRand(t, seed)}
		m.reconfig(t, e)
		t.Repeat(map[string]func(*rapid.T){
			"call":     func(t *rapid.T) { m.call(t, e) },
			"reconfig": func(t *rapid.T) { m.reconfig(t, e) },
			"advance":  func(t *rapid.T) { m.advance(t, e) },
			"":         func(t *rapid.T) { m.check(t, e) },
		})
	})
}

func (m *odModel) call(t *rapid.T, e *env) {
	addr := rapid.SampledFrom(modelPool).Draw(t, "addr")
	fail := rapid.Bool().Draw(t, "fail")
	n := rapid.IntRange(1, 30).Draw(t, "n")
	me := m.entries[addr]
	for range n {
		picked := e.call(addr, fail)
		if want := me != nil && !me.ejected; picked != want {
			t.Fatalf("call to %s: picked %v, want %v (listed %v)", addr, picked, want, me != nil)
		}
		if picked && m.cfg.enabled() {
			if fail {
				me.active.failures++
			} else {
				me.active.successes++
			}
		}
	}
}

func (m *odModel) reconfig(t *rapid.T, e *env) {
	list := rapid.SliceOfNDistinct(rapid.SampledFrom(modelPool), 1, len(modelPool), rapid.ID[string]).Draw(t, "addrs")
	js := drawConfig(t)
	e.update(js, list...)
	m.cfg = mustParse(t, js)
	// Address update: an entry per listed address, others removed.
	next := make(map[string]*modelEntry)
	for _, a := range list {
		if me := m.entries[a]; me != nil {
			next[a] = me
		} else {
			next[a] = &modelEntry{}
		}
	}
	m.entries, m.order = next, list
	// Config: the timer start timestamp rule.
	if !m.cfg.enabled() {
		m.timerStart = nil
		for _, me := range m.entries {
			me.ejected, me.multiplier = false, 0
		}
		return
	}
	if m.timerStart == nil {
		now := m.now
		m.timerStart = &now
		m.next = m.now.Add(m.cfg.Interval)
		for _, me := range m.entries {
			me.active, me.inactive = modelCounts{}, modelCounts{}
		}
		return
	}
	m.next = m.now.Add(max(m.cfg.Interval-m.now.Sub(*m.timerStart), 0))
	if !m.next.After(m.now) {
		m.sweep()
	}
}

func drawConfig(t *rapid.T) string {
	fields := []string{
		fmt.Sprintf(`"interval": "%ds"`, rapid.SampledFrom([]int{1, 2, 5, 10}).Draw(t, "interval")),
		fmt.Sprintf(`"baseEjectionTime": "%ds"`, rapid.SampledFrom([]int{0, 1, 3, 10}).Draw(t, "base")),
		fmt.Sprintf(`"maxEjectionTime": "%ds"`, rapid.SampledFrom([]int{0, 2, 5, 30}).Draw(t, "maxTime")),
		fmt.Sprintf(`"maxEjectionPercent": %d`, rapid.SampledFrom([]int{0, 10, 20, 40, 60, 100}).Draw(t, "maxPercent")),
		`"childPolicy": [{"test_addr_picker": {}}]`,
	}
	enforcement := rapid.SampledFrom([]int{0, 50, 100})
	if rapid.Bool().Draw(t, "successRate") {
		fields = append(fields, fmt.Sprintf(`"successRateEjection": {"stdevFactor": %d, "enforcementPercentage": %d, "minimumHosts": %d, "requestVolume": %d}`,
			rapid.SampledFrom([]int{0, 500, 1000, 1900}).Draw(t, "stdevFactor"), enforcement.Draw(t, "srEnforcement"),
			rapid.IntRange(0, 5).Draw(t, "srMinimumHosts"), rapid.IntRange(0, 20).Draw(t, "srRequestVolume")))
	}
	if rapid.Bool().Draw(t, "failurePercentage") {
		fields = append(fields, fmt.Sprintf(`"failurePercentageEjection": {"threshold": %d, "enforcementPercentage": %d, "minimumHosts": %d, "requestVolume": %d}`,
			rapid.SampledFrom([]int{0, 25, 50, 85, 100}).Draw(t, "threshold"), enforcement.Draw(t, "fpEnforcement"),
			rapid.IntRange(0, 5).Draw(t, "fpMinimumHosts"), rapid.IntRange(0, 20).Draw(t, "fpRequestVolume")))
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// advance moves the clock to the next sweep, to just before it, or by a
// random step that fires at most that one sweep.
func (m *odModel) advance(t *rapid.T, e *env) {
	var d time.Duration
	if m.timerStart == nil {
		d = time.Duration(rapid.Int64Range(1, 20_000).Draw(t, "ms")) * time.Millisecond
	} else {
		left := m.next.Sub(m.now)
		switch rapid.IntRange(0, 2).Draw(t, "how") {
		case 0:
			d = left
		case 1:
			d = left - 1
		default:
			d = time.Duration(rapid.Int64Range(1, int64(left)).Draw(t, "ns"))
		}
	}
	e.h.Advance(d)
	m.now = m.now.Add(d)
	if m.timerStart != nil && !m.now.Before(m.next) {
		m.sweep()
	}
}

func (m *odModel) sweep() {
	now := m.now
	m.timerStart = &now
	m.next = now.Add(m.cfg.Interval)
	for _, a := range m.order {
		me := m.entries[a]
		me.inactive, me.active = me.active, modelCounts{}
	}
	if sr := m.cfg.SuccessRateEjection; sr != nil {
		m.successRate(sr)
	}
	if fp := m.cfg.FailurePercentageEjection; fp != nil {
		m.failurePercentage(fp)
	}
	for _, a := range m.order {
		me := m.entries[a]
		if !me.ejected && me.multiplier > 0 {
			me.multiplier--
		} else if me.ejected {
			limit := max(m.cfg.BaseEjectionTime, m.cfg.MaxEjectionTime)
			d := min(m.cfg.BaseEjectionTime*time.Duration(me.multiplier), limit)
			if !now.Before(me.ejectedAt.Add(d)) {
				me.ejected = false
			}
		}
	}
}

func (m *odModel) volumeOf(a string) int64 {
	me := m.entries[a]
	return me.inactive.successes + me.inactive.failures
}

func (m *odModel) qualifying(requestVolume uint32) []string {
	var out []string
	for _, a := range m.order {
		if v := m.volumeOf(a); v > 0 && v >= int64(requestVolume) {
			out = append(out, a)
		}
	}
	return out
}

func (m *odModel) capReached() bool {
	n := 0
	for _, me := range m.entries {
		if me.ejected {
			n++
		}
	}
	return n > 0 && float64(n)/float64(len(m.entries))*100 >= float64(m.cfg.MaxEjectionPercent)
}

func (m *odModel) eject(a string, enforcement uint32) {
	me := m.entries[a]
	if me.ejected {
		return
	}
	if uint32(m.rand.IntN(100)) < enforcement {
		me.ejected, me.ejectedAt = true, m.now
		me.multiplier++
	}
}

func (m *odModel) successRate(sr *SuccessRateEjection) {
	q := m.qualifying(sr.RequestVolume)
	if len(q) < int(sr.MinimumHosts) {
		return
	}
	rate := func(a string) float64 {
		me := m.entries[a]
		return float64(me.inactive.successes) / float64(m.volumeOf(a))
	}
	var sum float64
	for _, a := range q {
		sum += rate(a)
	}
	mean := sum / float64(len(q))
	var sq float64
	for _, a := range q {
		sq += (rate(a) - mean) * (rate(a) - mean)
	}
	stdev := math.Sqrt(sq / float64(len(q)))
	for _, a := range m.order {
		if m.capReached() {
			return
		}
		if !slices.Contains(q, a) {
			continue
		}
		if rate(a) < mean-stdev*(float64(sr.StdevFactor)/1000) {
			m.eject(a, sr.EnforcementPercentage)
		}
	}
}

func (m *odModel) failurePercentage(fp *FailurePercentageEjection) {
	q := m.qualifying(fp.RequestVolume)
	if len(q) < int(fp.MinimumHosts) {
		return
	}
	for _, a := range m.order {
		if m.capReached() {
			return
		}
		if !slices.Contains(q, a) {
			continue
		}
		me := m.entries[a]
		if float64(me.inactive.failures)/float64(m.volumeOf(a))*100 > float64(fp.Threshold) {
			m.eject(a, fp.EnforcementPercentage)
		}
	}
}

func (m *odModel) check(t *rapid.T, e *env) {
	type view struct {
		addr             string
		ejected          bool
		multiplier       int64
		active, inactive modelCounts
	}
	var got, want []view
	var timerStart time.Time
	e.h.Do(func() {
		b := e.b()
		timerStart = b.timerStart
		for _, en := range b.order {
			s, f := en.counter.last()
			a := en.counter.active.Load()
			got = append(got, view{en.addr, en.ejected, en.multiplier,
				modelCounts{a.successes.Load(), a.failures.Load()}, modelCounts{s, f}})
		}
	})
	for _, a := range m.order {
		me := m.entries[a]
		want = append(want, view{a, me.ejected, me.multiplier, me.active, me.inactive})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("at +%v:\n got  %+v\n want %+v", m.now.Sub(time.Unix(0, 0)), got, want)
	}
	if (m.timerStart == nil) != timerStart.IsZero() || (m.timerStart != nil && !m.timerStart.Equal(timerStart)) {
		t.Fatalf("timer start %v, want %v", timerStart, m.timerStart)
	}
	next, pending := e.h.Serializer.NextDeadline()
	if pending != (m.timerStart != nil) || (pending && !next.Equal(m.next)) {
		t.Fatalf("next sweep %v (pending %v), want %v (pending %v)", next, pending, m.next, m.timerStart != nil)
	}
	for _, a := range m.order {
		wantState := lb.Ready
		if m.entries[a].ejected {
			wantState = lb.TransientFailure
		}
		if got := e.childSees(a); got != wantState {
			t.Fatalf("child sees %v for %s, want %v", got, a, wantState)
		}
	}
}
