package priority

import (
	"testing"

	"github.com/lbkit/lbkit/lb"
)

func (e *env) describe() lb.Node {
	var n lb.Node
	e.h.Do(func() { n = e.b().Describe() })
	return n
}

// The snapshot names the child in use, each child's pending failover
// deadline, and a deactivated child's retention deadline, on the mock clock.
func TestDescribeCurrentChildFailoverAndRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := e.h.Clock.Now()
	twoLeaves(e)
	n := e.describe()
	if n.Policy != Name || n.Current != "p0" || len(n.Children) != 1 {
		t.Fatalf("describe = %+v, want priority using p0, one child", n)
	}
	if d := n.Children[0].FailoverDeadline; d == nil || !d.Equal(start.Add(failover)) {
		t.Fatalf("p0's failover deadline %v, want %v", d, start.Add(failover))
	}

	e.h.Advance(failover)
	n = e.describe()
	if n.Current != "p1" || len(n.Children) != 2 {
		t.Fatalf("after p0's failover: %+v, want p1 in use of 2 children", n)
	}
	p0, p1 := n.Children[0], n.Children[1]
	if p0.Name != "p0" || p0.State != lb.Connecting || p0.FailoverDeadline != nil {
		t.Errorf("p0 = %+v, want CONNECTING (its own last state) with no failover pending", p0)
	}
	if p1.Name != "p1" || p1.FailoverDeadline == nil || !p1.FailoverDeadline.Equal(start.Add(2*failover)) {
		t.Errorf("p1 = %+v, want failover at %v", p1, start.Add(2*failover))
	}

	e.h.SubConnFor("10.0.0.1:80").Ready()
	now := e.h.Clock.Now()
	n = e.describe()
	p0, p1 = n.Children[0], n.Children[1]
	if n.Current != "p0" || p0.State != lb.Ready || p0.Deactivated {
		t.Errorf("describe = %+v, want p0 READY and in use", n)
	}
	if !p1.Deactivated || p1.RetainUntil == nil || !p1.RetainUntil.Equal(now.Add(retain)) {
		t.Errorf("p1 = %+v, want deactivated until %v", p1, now.Add(retain))
	}
}

// A child in TRANSIENT_FAILURE carries its picker's error as LastError.
func TestDescribeCarriesAChildsFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptChild("p0"))
	e.h.Report("p0", lb.TransientFailure, "refused")
	n := e.describe()
	if len(n.Children) != 1 || n.Children[0].State != lb.TransientFailure || n.Children[0].LastError != "p0: refused" {
		t.Fatalf("describe = %+v, want p0 in TRANSIENT_FAILURE with LastError \"p0: refused\"", n)
	}
}
