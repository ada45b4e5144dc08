package clusterimpl

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
)

// scriptedChild is a child picker whose next outcome the test sets.
type scriptedChild struct {
	calls    int
	fail     bool
	withDone bool
	// childDones counts the calls of the Dones it handed out, by pick.
	childDones []int
}

var errChild = errors.New("child fails")

func (c *scriptedChild) Pick(lb.PickInfo) (lb.PickResult, error) {
	c.calls++
	if c.fail {
		return lb.PickResult{}, errChild
	}
	if !c.withDone {
		return lb.PickResult{}, nil
	}
	i := len(c.childDones)
	c.childDones = append(c.childDones, 0)
	return lb.PickResult{Done: func(lb.DoneInfo) { c.childDones[i]++ }}, nil
}

func limitedPicker(child lb.Picker, c *Counter, limit uint32) *picker {
	return &picker{child: child, ready: true, limited: true, limit: limit, counter: c,
		overLimit: &overLimit{err: lb.DropError(ErrOverLimit), count: lb.NopMetrics().Counter(MetricCircuitBreakerDrops)}}
}

// counterModel is gRFC A32's counter written from its text: "The counter
// will be incremented when a request is started on a subchannel and
// decremented when the request is complete"; a pick is refused when "the
// current number of in-flight requests" is not "lower than the configured
// limit". lbkit adds: a pick whose child fails is not in flight.
type counterModel struct {
	child    *scriptedChild
	c        *Counter
	p        *picker
	limit    uint32
	inFlight int64
	// dones are the Dones of the picks in flight, with the index of the
	// child's Done they chain (-1 for none).
	dones []outstanding
	calls int
}

type outstanding struct {
	done  func(lb.DoneInfo)
	child int
}

func (m *counterModel) Pick(t *rapid.T) {
	m.child.fail = rapid.IntRange(0, 4).Draw(t, "child fails") == 0
	m.child.withDone = rapid.Bool().Draw(t, "child has a Done")
	before := len(m.child.childDones)
	r, err := m.p.Pick(lb.PickInfo{})
	switch {
	case m.inFlight >= int64(m.limit):
		if !errors.Is(err, ErrOverLimit) || m.child.calls != m.calls {
			t.Fatalf("%d in flight, limit %d: pick = %v with %d child calls, want over the limit without calling the child", m.inFlight, m.limit, err, m.child.calls-m.calls)
		}
	case m.child.fail:
		m.calls++
		if !errors.Is(err, errChild) {
			t.Fatalf("child failing: pick = %v, want the child's error", err)
		}
	default:
		m.calls++
		if err != nil || r.Done == nil {
			t.Fatalf("under the limit: pick = %v (Done %v)", err, r.Done != nil)
		}
		o := outstanding{done: r.Done, child: -1}
		if m.child.withDone {
			o.child = before
		}
		m.dones = append(m.dones, o)
		m.inFlight++
	}
}

func (m *counterModel) Done(t *rapid.T) {
	if len(m.dones) == 0 {
		t.Skip("nothing in flight")
	}
	i := rapid.IntRange(0, len(m.dones)-1).Draw(t, "which")
	o := m.dones[i]
	m.dones = append(m.dones[:i], m.dones[i+1:]...)
	o.done(lb.DoneInfo{})
	m.inFlight--
	if o.child >= 0 && m.child.childDones[o.child] != 1 {
		t.Fatalf("the child's Done of pick %d ran %d times, want once", o.child, m.child.childDones[o.child])
	}
}

// SetLimit is a new config: a new picker over the same counter.
func (m *counterModel) SetLimit(t *rapid.T) {
	m.limit = rapid.Uint32Range(0, 4).Draw(t, "limit")
	m.p = limitedPicker(m.child, m.c, m.limit)
}

func (m *counterModel) Check(t *rapid.T) {
	if got := m.c.InFlight(); got != m.inFlight {
		t.Fatalf("counter says %d in flight, the model %d", got, m.inFlight)
	}
	for i, n := range m.child.childDones {
		if n > 1 {
			t.Fatalf("the child's Done of pick %d ran %d times", i, n)
		}
	}
}

func TestPropertyCounterFollowsA32(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &counterModel{child: &scriptedChild{}, c: NewCounter()}
		m.limit = rapid.Uint32Range(0, 4).Draw(t, "first limit")
		m.p = limitedPicker(m.child, m.c, m.limit)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// Under concurrent picks and Dones the requests in flight never pass the
// limit, every refused pick is over it, and all end at zero.
func TestConcurrentPicksNeverPassTheLimit(t *testing.T) {
	const limit, goroutines, picks = 5, 8, 2000
	c := NewCounter()
	var held, most atomic.Int64
	child := pickerFunc(func(lb.PickInfo) (lb.PickResult, error) {
		n := held.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return lb.PickResult{Done: func(lb.DoneInfo) {}}, nil
	})
	p := limitedPicker(child, c, limit)
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range picks {
				r, err := p.Pick(lb.PickInfo{})
				if err != nil {
					if !errors.Is(err, ErrOverLimit) {
						t.Errorf("pick: %v", err)
						return
					}
					refused.Add(1)
					continue
				}
				held.Add(-1)
				r.Done(lb.DoneInfo{})
			}
		}()
	}
	wg.Wait()
	if most.Load() > limit || c.InFlight() != 0 {
		t.Errorf("most in flight %d (limit %d); %d in flight at the end", most.Load(), limit, c.InFlight())
	}
	t.Logf("%d of %d picks refused", refused.Load(), goroutines*picks)
}

type pickerFunc func(lb.PickInfo) (lb.PickResult, error)

func (f pickerFunc) Pick(i lb.PickInfo) (lb.PickResult, error) { return f(i) }

// A counted pick whose child has a Done chains it without allocating,
// once the free list holds a chain.
func TestChainedDoneDoesNotAllocate(t *testing.T) {
	c := NewCounter()
	childDone := func(lb.DoneInfo) {}
	if n := testing.AllocsPerRun(1000, func() {
		if !c.acquire(1) {
			t.Fatal("acquire failed with nothing in flight")
		}
		c.done(childDone)(lb.DoneInfo{})
	}); n != 0 {
		t.Fatalf("a chained Done allocates %v times, want 0", n)
	}
}

// A chained Done called twice counts its request out once and calls the
// child's Done once (it used to put the chain back twice and then call a
// nil child).
func TestChainedDoneTwiceCountsOnce(t *testing.T) {
	c := NewCounter()
	calls := 0
	for range 2 {
		if !c.acquire(2) {
			t.Fatal("acquire failed under the limit")
		}
	}
	done := c.done(func(lb.DoneInfo) { calls++ })
	done(lb.DoneInfo{})
	done(lb.DoneInfo{})
	if got := c.InFlight(); got != 1 {
		t.Errorf("in flight after a Done called twice: %d, want 1", got)
	}
	if calls != 1 {
		t.Errorf("the child's Done ran %d times, want 1", calls)
	}
}
