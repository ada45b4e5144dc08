package conn

import (
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// lingering is a policy that leaves work behind: on its update it starts a
// timer and queues a hop on its scheduler, and it keeps its ClientConn.
type lingering struct {
	cc     lb.ClientConn
	sched  lb.Scheduler
	closed bool
	late   []string // what ran after Close
}

func (l *lingering) Name() string { return "lingering" }

func (l *lingering) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	l.cc, l.sched = cc, opts.Scheduler
	return l
}

func (l *lingering) UpdateClientConnState(lb.ClientConnState) error {
	l.cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
	l.sched.AfterFunc(time.Minute, func() { l.ranLate("timer") })
	return nil
}

func (l *lingering) ranLate(what string) {
	if l.closed {
		l.late = append(l.late, what)
	}
}

func (l *lingering) ResolverError(error) {}
func (l *lingering) ExitIdle()           {}
func (l *lingering) Close() {
	l.closed = true
	l.sched.Schedule(func() { l.ranLate("hop scheduled by Close") })
}

// A policy the channel switches away from runs on a scope that the switch
// closes: its timer never fires, and its calls through the ClientConn it
// kept reach nothing.
func TestSwitchedOutPolicyRunsNothing(t *testing.T) {
	s := startServer(t)
	old := &lingering{}
	reg := lb.NewRegistry(old, lb.DefaultRegistry().Get("pick_first"))
	c, r, mock := newTestChannel(t, WithRegistry(reg),
		WithDefaultServiceConfig(`{"loadBalancingConfig":[{"lingering":{}}]}`))
	r.update(t, resolver.State{Addresses: addrs(s.addr)})
	c.Connect()
	settle(t, c)
	if old.cc == nil {
		t.Fatalf("the lingering policy was not built")
	}
	r.update(t, resolver.State{
		Addresses:     addrs(s.addr),
		ServiceConfig: []byte(`{"loadBalancingConfig":[{"pick_first":{}}]}`),
	})
	if got := pickAddr(t, c); got != s.addr {
		t.Fatalf("pick_first picked %s, want %s", got, s.addr)
	}
	if !old.closed {
		t.Fatalf("the switched-out policy was not closed")
	}
	c.ser.Run(guard(t), func() {
		old.cc.UpdateState(lb.State{ConnectivityState: lb.TransientFailure, Picker: lb.NewQueuePicker()})
		old.cc.ResolveNow()
		if _, err := old.cc.NewSubConn(addrs(s.addr), lb.NewSubConnOptions{StateListener: func(lb.SubConnState) {}}); err == nil {
			t.Errorf("NewSubConn through a closed policy's ClientConn succeeded")
		}
	})
	if c.State() != lb.Ready {
		t.Errorf("channel state %v after the closed policy published TRANSIENT_FAILURE, want READY", c.State())
	}
	advance(t, c, mock, 2*time.Minute) // past the timer, short of the idle timeout
	if len(old.late) != 0 {
		t.Errorf("after Close, the policy's %q ran", old.late)
	}
}
