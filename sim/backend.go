package sim

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// ErrBackendError is what a request's Done reports when an errors fault
// failed it.
var ErrBackendError = errors.New("sim: the backend answered with an error")

// ErrConnectionLost is what Done reports for a request in flight on a
// backend that stopped.
var ErrConnectionLost = errors.New("sim: the backend stopped with the request in flight")

// attempt is one try of a request at one backend. It lives from its
// arrival at the backend until the backend is done with it, which may be
// after the request itself ended (a timed-out request keeps its backend
// busy, as a real server that never heard of the timeout would).
type attempt struct {
	r      *request
	rid    uint64 // r.id when the attempt was made: r may be reused after
	b      *backend
	slot   int  // index in b.serving while served
	fail   bool // an errors fault will fail it
	killed bool // the backend stopped while serving it; its completion event only frees it
}

// live reports whether the attempt is still its request's current one.
func (a *attempt) live() bool { return a.r.id == a.rid && a.r.att == a }

// backend is one simulated server: a concurrency limit, a FIFO queue, a
// service-time distribution and its faults.
type backend struct {
	run    *run
	idx    int
	spec   *backendSpec
	faults []*faultSpec
	rng    *rand.Rand

	serving []*attempt
	queue   ring
	down    bool
	// restarted is when the backend last came back up, and warm the
	// stop fault that brought it down (its warm-up applies after).
	restarted time.Duration
	warm      *faultSpec
	// conns are the SubConns of every client to this backend not shut
	// down, for a stop to break their connections.
	conns []*subConn

	// load accounts what a backend with reportLoad reports.
	load loadWindow

	requests uint64 // attempts that arrived, measured ones
	dials    int    // connection attempts of every client (tests read it)
	peak     int    // most attempts served or queued at once
	sec      secondStats
	tracked  time.Duration // when sec.area was last brought up to date
}

// secondStats is a backend's current second of the time series.
type secondStats struct {
	requests uint32
	peak     int
	area     int64 // attempts in flight × nanoseconds, this second
}

// track brings the in-flight area up to now; it is called before every
// change of the attempts in flight, after the seconds before now are
// closed (their areas end at their boundaries).
func (b *backend) track() {
	b.run.rollSecond()
	now := b.run.e.now
	b.sec.area += int64(b.inFlight()) * int64(now-b.tracked)
	b.tracked = now
}

// inFlight returns the attempts served or queued.
func (b *backend) inFlight() int { return len(b.serving) + b.queue.len() }

// send sends a to the backend: it arrives after half the backend's rtt.
func (b *backend) send(a *attempt, measured bool) {
	if b.spec.rtt == 0 {
		b.arrive(a, measured)
		return
	}
	var m uint64
	if measured {
		m = 1
	}
	e := &b.run.e
	e.at(e.now+b.spec.rtt/2, evSend, m, a)
}

// reach is a's arrival after its trip: a backend that stopped meanwhile
// fails it.
func (b *backend) reach(a *attempt, measured bool) {
	if b.down {
		b.run.attemptDone(a, ErrConnectionLost)
		b.run.freeAttempt(a)
		return
	}
	b.arrive(a, measured)
}

// arrive takes a new attempt: served at once when below the concurrency
// limit, else queued.
func (b *backend) arrive(a *attempt, measured bool) {
	b.track()
	if measured {
		b.requests++
	}
	b.sec.requests++
	if b.spec.concurrency == 0 || len(b.serving) < b.spec.concurrency {
		b.start(a)
	} else {
		b.queue.push(a)
	}
	n := b.inFlight()
	if measured {
		b.peak = max(b.peak, n)
	}
	b.sec.peak = max(b.sec.peak, n)
}

// start serves a: its service time is drawn now, under the faults active
// now.
func (b *backend) start(a *attempt) {
	e := &b.run.e
	b.load.account(e.now, len(b.serving))
	a.slot = len(b.serving)
	b.serving = append(b.serving, a)
	d, fail := b.serviceTime(e.now)
	if lf := b.spec.loadFactor; lf > 0 {
		d = time.Duration(min(float64(d)*(1+lf*float64(len(b.serving)-1)), float64(maxServiceTime)))
	}
	a.fail = fail
	e.at(e.now+d, evComplete, 0, a)
}

// serviceTime draws a service time and whether the request fails.
func (b *backend) serviceTime(now time.Duration) (time.Duration, bool) {
	d := b.scale(float64(b.spec.service.sample(b.rng)), now)
	fail := false
	for _, f := range b.faults {
		if f.kind == faultErrors && f.active(now) {
			fail = fail || b.rng.Float64() < f.rate
		}
	}
	return time.Duration(min(d, float64(maxServiceTime))), fail
}

// scale returns service time d as the faults active now make it: slower
// by a factor or a fixed latency, and the warm-up after a restart, which
// multiplies by warmupFactor at the restart, falling linearly to 1.
func (b *backend) scale(d float64, now time.Duration) float64 {
	for _, f := range b.faults {
		if f.kind == faultSlower && f.active(now) {
			if f.latency > 0 {
				d = float64(f.latency)
			} else {
				d *= f.factor
			}
		}
	}
	if w := b.warm; w != nil && w.warmup > 0 && now-b.restarted < w.warmup {
		d *= 1 + (w.factor-1)*(1-float64(now-b.restarted)/float64(w.warmup))
	}
	return d
}

// complete ends a's service: the next queued attempt starts, and a's
// outcome goes to its request.
func (b *backend) complete(a *attempt) {
	if a.killed {
		b.run.freeAttempt(a)
		return
	}
	b.track()
	b.load.account(b.run.e.now, len(b.serving))
	b.load.served++
	last := len(b.serving) - 1
	moved := b.serving[last]
	b.serving[a.slot] = moved
	moved.slot = a.slot
	b.serving[last] = nil
	b.serving = b.serving[:last]
	if b.queue.len() > 0 {
		b.start(b.queue.pop())
	}
	if rtt := b.spec.rtt; rtt > 0 {
		var f uint64
		if a.fail {
			f = 1
		}
		e := &b.run.e
		e.at(e.now+rtt-rtt/2, evReply, f, a)
		return
	}
	b.reply(a, a.fail)
}

// reply gives a's outcome to its request and frees a.
func (b *backend) reply(a *attempt, fail bool) {
	var err error
	if fail {
		err = ErrBackendError
	}
	var load *lb.LoadReport
	if b.spec.reportLoad {
		load = b.load.report(b.run.e.now, len(b.serving), b.spec.concurrency)
	}
	b.run.attemptDoneWith(a, err, load)
	b.run.freeAttempt(a)
}

// refusing reports whether a connection attempt fails now.
func (b *backend) refusing(now time.Duration) bool {
	if b.down {
		return true
	}
	for _, f := range b.faults {
		if f.kind == faultRefuse && f.active(now) {
			return true
		}
	}
	return false
}

// unhealthy reports whether a health check fails now: the backend is
// stopped, refusing, or under an unhealthy fault.
func (b *backend) unhealthy(now time.Duration) bool {
	if b.refusing(now) {
		return true
	}
	for _, f := range b.faults {
		if f.kind == faultUnhealthy && f.active(now) {
			return true
		}
	}
	return false
}

// stop takes the backend down: every attempt served or queued fails with
// ErrConnectionLost and every READY connection to it is lost (IDLE).
func (b *backend) stop() {
	b.track()
	b.down = true
	// Connections go first, so that a retry picks another backend.
	for _, sc := range b.conns {
		sc.lose()
	}
	for _, a := range b.serving {
		a.killed = true // its completion event frees it
		b.run.attemptDone(a, ErrConnectionLost)
	}
	clear(b.serving)
	b.serving = b.serving[:0]
	for b.queue.len() > 0 {
		a := b.queue.pop()
		b.run.attemptDone(a, ErrConnectionLost)
		b.run.freeAttempt(a)
	}
}

// restart brings the backend back up after f, warming up as f says.
func (b *backend) restart(f *faultSpec) {
	b.down = false
	b.restarted = b.run.e.now
	b.warm = f
}

// ring is a FIFO queue of attempts.
type ring struct {
	buf        []*attempt
	head, size int
}

func (q *ring) len() int { return q.size }

func (q *ring) push(a *attempt) {
	if q.size == len(q.buf) {
		grown := make([]*attempt, max(16, 2*len(q.buf)))
		for i := range q.size {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = a
	q.size++
}

func (q *ring) pop() *attempt {
	a := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return a
}
