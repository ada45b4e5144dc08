package connstate_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/connstate"
)

// printOwner dials nothing: it prints what the machine asks for, and the
// example reports the dials' results itself, as an owner's I/O would.
type printOwner struct{ last uint64 }

func (o *printOwner) Dial(id uint64, timeout time.Duration) {
	o.last = id
	fmt.Printf("dial #%d, timeout %v\n", id, timeout)
}

func (o *printOwner) SetState(s lb.ConnectivityState, err error) {
	fmt.Println("state", s, err)
}

// later is an lb.Scheduler that keeps its timers until fire (a real owner
// uses its serializer, or the simulator's events).
type later struct{ timers []func() }

func (l *later) Schedule(f func()) bool { l.timers = append(l.timers, f); return true }
func (l *later) AfterFunc(d time.Duration, f func()) lb.Timer {
	fmt.Println("backoff", d)
	l.timers = append(l.timers, f)
	return stopped{}
}

// fire runs the timers kept, as time passing would.
func (l *later) fire() {
	ts := l.timers
	l.timers = nil
	for _, f := range ts {
		f()
	}
}

type stopped struct{}

func (stopped) Stop() bool { return false }

// A connection refused once, then reached: the machine backs off on the
// scheduler and asks for the next dial when the owner connects again.
func ExampleMachine() {
	o, sched := &printOwner{}, &later{}
	m := connstate.New(connstate.Config{Scheduler: sched, Backoff: backoff.Default(),
		MinConnectTimeout: 20 * time.Second}, o)
	m.Connect()
	m.Failed(o.last, errors.New("connection refused"))
	m.Connect() // does nothing during the backoff
	sched.fire()
	m.Connect()
	m.Connected(o.last)
	// Output:
	// state CONNECTING <nil>
	// dial #1, timeout 20s
	// state TRANSIENT_FAILURE connection refused
	// backoff 1s
	// state IDLE <nil>
	// state CONNECTING <nil>
	// dial #2, timeout 20s
	// state READY <nil>
}

// timers is an lb.Scheduler that prints each timer it is given and runs
// one when the example says, as time passing would.
type timers struct{ fs []func() }

func (s *timers) Schedule(f func()) bool { s.fs = append(s.fs, f); return true }
func (s *timers) AfterFunc(d time.Duration, f func()) lb.Timer {
	fmt.Printf("timer %d: %v\n", len(s.fs), d)
	s.fs = append(s.fs, f)
	return stopped{}
}

// probeOwner is the I/O side of the example's health checks.
type probeOwner struct{ last uint64 }

func (p *probeOwner) StartCheck(id uint64) {
	p.last = id
	fmt.Println("probe starts")
}
func (p *probeOwner) CancelCheck()                        {}
func (p *probeOwner) SetVerdict(connstate.Verdict, error) {}
func (p *probeOwner) Checked(err error)                   { fmt.Println("answer:", err) }

// A connection refused while health checking is on: its backoff is a
// minute, but the backend is probed every second; the first passing probe
// ends the backoff, and the owner's next Connect dials at once.
func ExampleMachine_SetHealth() {
	o, sched, p := &printOwner{}, &timers{}, &probeOwner{}
	m := connstate.New(connstate.Config{Scheduler: sched, MinConnectTimeout: 20 * time.Second,
		Backoff: backoff.Config{BaseDelay: time.Minute, Multiplier: 1, MaxDelay: time.Minute}}, o)
	h := connstate.NewHealth(sched, nil, p)
	m.SetHealth(h, &connstate.HealthSettings{Interval: time.Second, Timeout: 100 * time.Millisecond})
	m.Connect()
	m.Failed(o.last, errors.New("connection refused"))
	// Timer 0 is the first probe, timer 1 the backoff, and timer 2 (once
	// the probe starts) the probe's timeout.
	sched.fs[0]() // one second later: the probe starts
	h.Result(p.last, nil)
	m.Connect()
	// Output:
	// state CONNECTING <nil>
	// dial #1, timeout 1m0s
	// state TRANSIENT_FAILURE connection refused
	// timer 0: 1s
	// timer 1: 1m0s
	// timer 2: 100ms
	// probe starts
	// answer: <nil>
	// state IDLE <nil>
	// state CONNECTING <nil>
	// dial #2, timeout 1m0s
}
