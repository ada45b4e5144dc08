package childmanager_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Tests build their children with lbtest's script policy: a Scripts'
// Builder records every balancer it builds, and tests make ParsedPolicy
// values by hand, so nothing is registered.

// last returns the newest script balancer built.
func last(s *lbtest.Scripts) *lbtest.Script {
	all := s.All()
	return all[len(all)-1]
}

// owner is the test's stand-in for a policy using the manager.
type owner struct {
	m       *childmanager.Manager[int]
	changes []string // "name:STATE" per StateChanged
	removed []string
}

func newOwner(t *testing.T, h *lbtest.Harness, options ...childmanager.Option) *owner {
	t.Helper()
	o := &owner{}
	h.Do(func() {
		o.m = childmanager.New(h.CC, h.BuildOptions(), childmanager.Hooks[int]{
			StateChanged: func(c *childmanager.Child[int]) {
				o.changes = append(o.changes, c.Name()+":"+c.State().ConnectivityState.String())
			},
			Removed: func(c *childmanager.Child[int]) { o.removed = append(o.removed, c.Name()) },
		}, options...)
	})
	t.Cleanup(func() { h.Do(o.m.Close) })
	return o
}

// policy returns b with the script config configJSON, such as
// `{"subConns": true}` (a SubConn per address of the first update).
func policy(t *testing.T, b lb.Builder, configJSON string) *lb.ParsedPolicy {
	t.Helper()
	cfg, _, err := lb.ParseConfig(b, json.RawMessage(configJSON))
	if err != nil {
		t.Fatal(err)
	}
	return &lb.ParsedPolicy{Name: b.Name(), Builder: b, Config: cfg}
}

// The script configs tests use: SubConns for the addresses, and the same
// publishing READY from inside every update.
const (
	plain  = `{"subConns": true}`
	inline = `{"subConns": true, "inline": "READY"}`
)

func addrs(as ...string) resolver.State {
	var s resolver.State
	for _, a := range as {
		s.Addresses = append(s.Addresses, resolver.Address{Addr: a})
	}
	return s
}

func TestChildIsBuiltLazilyByFirstUpdate(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")

	var c *childmanager.Child[int]
	h.Do(func() { c = o.m.Add("c0"); c.Data = 7 })
	if len(scripts.All()) != 0 {
		t.Fatalf("Add built %d balancers, want 0", len(scripts.All()))
	}
	if got := c.State().ConnectivityState; got != lb.Connecting {
		t.Errorf("initial state = %v, want CONNECTING", got)
	}
	if _, err := c.State().Picker.Pick(lb.PickInfo{}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Errorf("initial picker: Pick error = %v, want ErrNoSubConnAvailable", err)
	}
	if c.Policy() != "" {
		t.Errorf("Policy() before Update = %q, want empty", c.Policy())
	}

	var err error
	h.Do(func() { err = c.Update(policy(t, b, plain), addrs("a:1")) })
	if err != nil || len(scripts.All()) != 1 || c.Policy() != "fake_a" {
		t.Fatalf("first Update: err %v, %d built, policy %q; want nil, 1, fake_a", err, len(scripts.All()), c.Policy())
	}
	h.Do(func() { err = c.Update(policy(t, b, plain), addrs("a:1", "a:2")) })
	if err != nil || len(scripts.All()) != 1 {
		t.Fatalf("second Update: err %v, %d built; want nil, 1", err, len(scripts.All()))
	}
	if n := len(last(scripts).Updates()); n != 2 {
		t.Errorf("balancer got %d updates, want 2", n)
	}
	if c.Data != 7 {
		t.Errorf("Data = %d, want 7 (the manager must not touch it)", c.Data)
	}
	if got := o.m.Get("c0"); got != c || o.m.Len() != 1 {
		t.Errorf("Get/Len = %v/%d, want the child/1", got, o.m.Len())
	}
	var again *childmanager.Child[int]
	h.Do(func() { again = o.m.Add("c0") })
	if again != c {
		t.Errorf("Add of an existing name returned a new child")
	}
}

func TestInlineStateReachesHookBeforeUpdateReturns(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	b := lbtest.NewScripts().Builder("fake_a")
	h.Do(func() {
		c := o.m.Add("c0")
		if err := c.Update(policy(t, b, inline), addrs("a:1")); err != nil {
			t.Errorf("Update: %v", err)
		}
		if !slices.Equal(o.changes, []string{"c0:READY"}) {
			t.Errorf("changes during Update = %v, want [c0:READY]", o.changes)
		}
		if c.State().ConnectivityState != lb.Ready {
			t.Errorf("State() = %v, want READY", c.State().ConnectivityState)
		}
	})
	if _, ok := h.CC.LastState(); ok {
		t.Errorf("the manager published to the parent; only the owner may")
	}
}

func TestSubConnsGoThroughParentUnchanged(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")
	h.Do(func() { _ = o.m.Add("c0").Update(policy(t, b, plain), addrs("a:1")) })
	scs := h.CC.SubConns()
	if len(scs) != 1 || scs[0].Addresses()[0].Addr != "a:1" {
		t.Fatalf("SubConns = %v, want one for a:1", scs)
	}
	scs[0].Ready()
	if got := last(scripts).Heard(last(scripts).SubConn()); !slices.Equal(got, []lb.ConnectivityState{lb.Ready}) {
		t.Errorf("child's listener heard %v, want [READY]", got)
	}
}

func TestResolveNowCanBeIgnored(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")
	var c *childmanager.Child[int]
	h.Do(func() { c = o.m.Add("c0"); _ = c.Update(policy(t, b, plain), addrs("a:1")) })

	h.Do(func() { last(scripts).ClientConn().ResolveNow() })
	if n := h.CC.ResolveNows.Pending(); n != 1 {
		t.Fatalf("ResolveNow reached the parent %d times, want 1", n)
	}
	h.Do(func() { c.SetIgnoreResolveNow(true); last(scripts).ClientConn().ResolveNow() })
	if n := h.CC.ResolveNows.Pending(); n != 1 || !c.IgnoresResolveNow() {
		t.Fatalf("ignored ResolveNow: parent count %d, want still 1", n)
	}
	h.Do(func() { c.SetIgnoreResolveNow(false); last(scripts).ClientConn().ResolveNow() })
	if n := h.CC.ResolveNows.Pending(); n != 2 {
		t.Fatalf("ResolveNow after clearing the flag: parent count %d, want 2", n)
	}
	if got := last(scripts).ClientConn().Target(); got != h.CC.Target() {
		t.Errorf("Target() = %q, want the parent's %q", got, h.CC.Target())
	}
}

func TestPolicyChangeReplacesBalancer(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	a := scripts.Builder("fake_a")
	b := scripts.Builder("fake_b")
	var c *childmanager.Child[int]
	h.Do(func() { c = o.m.Add("c0"); _ = c.Update(policy(t, a, inline), addrs("a:1")) })
	old := last(scripts)
	oldSC := h.CC.SubConns()[0]

	o.changes = nil
	h.Do(func() { _ = c.Update(policy(t, b, plain), addrs("a:1")) })
	if !old.Closed() || !oldSC.IsShutdown() {
		t.Fatalf("old balancer closed %v, old SubConn shut down %v; want both", old.Closed(), oldSC.IsShutdown())
	}
	if len(scripts.All()) != 2 || c.Policy() != "fake_b" {
		t.Fatalf("%d built, policy %q; want 2, fake_b", len(scripts.All()), c.Policy())
	}
	if !slices.Equal(o.changes, []string{"c0:CONNECTING"}) || c.State().ConnectivityState != lb.Connecting {
		t.Errorf("changes = %v, state %v; want the reset to [c0:CONNECTING]", o.changes, c.State().ConnectivityState)
	}
	// The old balancer's ClientConn is dead.
	h.Do(func() {
		old.ClientConn().UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: &lbtest.ScriptPicker{Token: "old"}})
		old.ClientConn().ResolveNow()
		if _, err := old.ClientConn().NewSubConn([]resolver.Address{{Addr: "x"}}, lb.NewSubConnOptions{StateListener: func(lb.SubConnState) {}}); err == nil {
			t.Errorf("NewSubConn through a closed balancer's ClientConn succeeded")
		}
	})
	if c.State().ConnectivityState != lb.Connecting || len(o.changes) != 1 || h.CC.ResolveNows.Pending() != 0 {
		t.Errorf("a replaced balancer's calls were not ignored: state %v, changes %v", c.State().ConnectivityState, o.changes)
	}
}

func TestDeactivationTimer(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")
	var c *childmanager.Child[int]
	h.Do(func() { c = o.m.Add("c0"); _ = c.Update(policy(t, b, plain), addrs("a:1")) })
	sc := h.CC.SubConns()[0]

	h.Do(c.Deactivate)
	if c.Active() {
		t.Fatalf("Active() after Deactivate = true")
	}
	h.Advance(10 * time.Minute)
	h.Do(c.Deactivate) // must not restart the timer
	h.Advance(5*time.Minute - time.Nanosecond)
	if c.Removed() || sc.IsShutdown() {
		t.Fatalf("child removed before 15 min")
	}
	h.Advance(time.Nanosecond)
	if !c.Removed() || !sc.IsShutdown() || !last(scripts).Closed() {
		t.Fatalf("at 15 min: removed %v, SubConn shut down %v; want both", c.Removed(), sc.IsShutdown())
	}
	if o.m.Get("c0") != nil || !slices.Equal(o.removed, []string{"c0"}) {
		t.Errorf("Get after removal = %v, Removed hooks %v", o.m.Get("c0"), o.removed)
	}
	var err error
	h.Do(func() { err = c.Update(policy(t, b, plain), addrs("a:1")) })
	if err == nil {
		t.Errorf("Update of a removed child succeeded")
	}
}

func TestReactivateKeepsChild(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h, childmanager.WithDeactivationDelay(time.Minute))
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")
	var c *childmanager.Child[int]
	h.Do(func() { c = o.m.Add("c0"); _ = c.Update(policy(t, b, inline), addrs("a:1")) })
	h.Do(c.Deactivate)
	h.Advance(time.Minute - time.Nanosecond)
	h.Do(c.Reactivate)
	if !c.Active() {
		t.Fatalf("Active() after Reactivate = false")
	}
	h.Advance(time.Hour)
	if c.Removed() || len(scripts.All()) != 1 || h.CC.SubConns()[0].IsShutdown() {
		t.Fatalf("reactivated child was removed or rebuilt")
	}
	if c.State().ConnectivityState != lb.Ready {
		t.Errorf("reactivated child's state = %v, want its last, READY", c.State().ConnectivityState)
	}
	if _, ok := h.Serializer.NextDeadline(); ok {
		t.Errorf("a timer is still pending after Reactivate")
	}
	// With the option, the delay is one minute.
	h.Do(c.Deactivate)
	h.Advance(time.Minute)
	if !c.Removed() {
		t.Errorf("child not removed after WithDeactivationDelay(1m)")
	}
}

func TestRemoveAndClose(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")
	var c0, c1, c2 *childmanager.Child[int]
	var ran []string
	h.Do(func() {
		c0, c1, c2 = o.m.Add("c0"), o.m.Add("c1"), o.m.Add("c2")
		_ = c0.Update(policy(t, b, plain), addrs("a:0"))
		_ = c1.Update(policy(t, b, plain), addrs("a:1"))
		c1.Deactivate()
		// Work of the children's balancers and the owner's work for the
		// children: pending timers, and hops queued behind this call.
		for i, c := range []*childmanager.Child[int]{c0, c1, c2} {
			name := c.Name()
			c.Scheduler().AfterFunc(time.Minute, func() { ran = append(ran, name+" owner timer") })
			c.Scheduler().Schedule(func() { ran = append(ran, name+" owner hop") })
			if i < 2 {
				scripts.All()[i].Scheduler().AfterFunc(time.Minute, func() { ran = append(ran, name+" balancer timer") })
			}
		}
		c0.Remove()
		o.m.Close()
	})
	if len(ran) != 0 {
		t.Errorf("after removal, %q ran", ran)
	}
	h.Advance(time.Hour)
	if len(ran) != 0 {
		t.Errorf("after removal, %q ran", ran)
	}
	o.removed = nil
	h.Do(func() {
		c0, c1, c2 = o.m.Add("c0"), o.m.Add("c1"), o.m.Add("c2")
		_ = c0.Update(policy(t, b, plain), addrs("a:0"))
		_ = c1.Update(policy(t, b, plain), addrs("a:1"))
		c1.Deactivate()
	})
	h.Do(c0.Remove)
	if !c0.Removed() || !h.CC.SubConns()[2].IsShutdown() || o.m.Len() != 2 {
		t.Fatalf("Remove: removed %v, len %d", c0.Removed(), o.m.Len())
	}
	h.Do(c0.Remove) // twice is harmless
	h.Do(o.m.Close)
	if !slices.Equal(o.removed, []string{"c0", "c1", "c2"}) {
		t.Errorf("Removed hooks = %v, want [c0 c1 c2]", o.removed)
	}
	if !c1.Removed() || !c2.Removed() || !h.CC.SubConns()[3].IsShutdown() || o.m.Len() != 0 {
		t.Errorf("Close left children behind")
	}
	if _, ok := h.Serializer.NextDeadline(); ok {
		t.Errorf("Close left a timer pending")
	}
}

func TestResolverErrorAndExitIdleReachBuiltChildren(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")
	var c0 *childmanager.Child[int]
	h.Do(func() {
		c0 = o.m.Add("c0")
		o.m.Add("c1") // never built
		_ = c0.Update(policy(t, b, plain), addrs("a:0"))
	})
	boom := errors.New("boom")
	h.Do(func() { o.m.ResolverError(boom); c0.ExitIdle(); o.m.Get("c1").ExitIdle() })
	f := last(scripts)
	if len(f.ResolverErrors()) != 1 || !errors.Is(f.ResolverErrors()[0], boom) || f.ExitIdles() != 1 {
		t.Errorf("child got errors %v and %d ExitIdle; want [boom] and 1", f.ResolverErrors(), f.ExitIdles())
	}
}

func TestNilPickerIsReplaced(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("fake_a")
	var c *childmanager.Child[int]
	h.Do(func() { c = o.m.Add("c0"); _ = c.Update(policy(t, b, plain), addrs("a:0")) })
	h.Do(func() { last(scripts).ClientConn().UpdateState(lb.State{ConnectivityState: lb.Ready}) })
	p := c.State().Picker
	if p == nil {
		t.Fatalf("nil picker kept")
	}
	if _, err := p.Pick(lb.PickInfo{}); !errors.Is(err, lb.ErrTransientFailure) {
		t.Errorf("replacement picker error = %v, want a transient failure", err)
	}
}

func TestChildrenSortedByName(t *testing.T) {
	h := lbtest.New(t)
	o := newOwner(t, h)
	var names []string
	h.Do(func() {
		for _, n := range []string{"b", "c", "a"} {
			o.m.Add(n)
		}
		for _, c := range o.m.Children() {
			names = append(names, c.Name())
		}
	})
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("Children() names = %v, want [a b c]", names)
	}
}
