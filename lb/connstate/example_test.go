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
