package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// request is one request of a client, from its arrival to its outcome,
// across its attempts. Requests are reused: id changes with each use, so
// an event or a waiting entry made for an earlier use is recognised as
// stale.
type request struct {
	id       uint64
	c        *client
	start    time.Duration
	deadline time.Duration // 0: none
	tries    int
	att      *attempt
	done     func(lb.DoneInfo) // the current attempt's Done
	measured bool
	// hash is the request's hash (lb.PickInfo.Hash) when the client draws
	// keys: every attempt of the request carries the same.
	hash    uint64
	hasHash bool
}

// deadline is a request's timeout. A client's timeout is the same for all
// its requests, so its deadlines come in the order they were made: a FIFO
// with one heap event for its head, rather than an event per request.
type deadline struct {
	r  *request
	id uint64
	at time.Duration
}

// deadlines is a FIFO queue of deadlines.
type deadlines struct {
	buf        []deadline
	head, size int
}

func (q *deadlines) len() int { return q.size }

func (q *deadlines) push(d deadline) {
	if q.size == len(q.buf) {
		grown := make([]deadline, max(16, 2*len(q.buf)))
		for i := range q.size {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = d
	q.size++
}

func (q *deadlines) peek() deadline { return q.buf[q.head] }

func (q *deadlines) pop() {
	q.buf[q.head] = deadline{}
	q.head = (q.head + 1) % len(q.buf)
	q.size--
}

// expire times out every request whose deadline has passed (those that
// ended already are skipped) and plans the event of the next deadline.
func (c *client) expire() {
	now := c.run.e.now
	for c.deadlines.len() > 0 {
		d := c.deadlines.peek()
		if d.r.id != d.id {
			c.deadlines.pop() // ended before its deadline
			continue
		}
		if d.at > now {
			c.run.e.at(d.at, evTimeout, 0, c)
			return
		}
		c.deadlines.pop()
		c.run.timeout(d.r)
	}
}

// waiter is a request waiting for the next picker.
type waiter struct {
	r  *request
	id uint64
}

// outcome is how a request ended.
type outcome uint8

const (
	outOK       outcome = iota
	outTimeout          // its timeout passed
	outError            // the backend failed it (after any retries)
	outNoPick           // the policy failed the pick
	outUnfinish         // still running when the run stopped
)

// ErrDeadline is what a request's Done reports when its timeout passed.
var ErrDeadline = errors.New("sim: the request's timeout passed")

// errNotReady is the Done error of a pick whose SubConn left READY after the
// picker was built: the request waits for the next picker, as a channel's
// does.
var errNotReady = fmt.Errorf("sim: picked SubConn is not READY: %w", lb.ErrRequestNotSent)

// errForeign is the Done error of a pick of a SubConn the client did not
// make.
var errForeign = fmt.Errorf("sim: the policy picked a SubConn this client did not create: %w", lb.ErrRequestNotSent)

// client is one client: its own policy tree on its own scheduler, its
// traffic, and the requests waiting for a picker.
type client struct {
	run  *run
	idx  int
	spec *clientSpec
	bal  lb.Balancer
	ctx  context.Context // PickInfo.Ctx: carries the oracle's view
	rng  *rand.Rand      // arrivals
	// keys draws each request's key (Zipf), when the client has keys.
	keys *rand.Zipf
	// connRand jitters the backoff and health-check intervals of the
	// client's connections, as a channel's seeded randomness does.
	connRand *rand.Rand
	scope    *lb.Scope // the root balancer's scheduler

	picker       lb.Picker
	state        lb.ConnectivityState
	waiting      []waiter
	deadlines    deadlines
	spare        []waiter
	repickQueued bool
	repickFn     func()
	workerFn     func()

	rateIdx int
	issued  int64
	issuing bool // still making requests
}

// canIssue reports whether the client may make another request now.
func (c *client) canIssue() bool {
	now := c.run.e.now
	if c.spec.requests > 0 && c.issued >= c.spec.requests {
		return false
	}
	return c.run.sc.duration == 0 || now < c.run.sc.duration
}

// keyHash spreads key k over 64 bits (splitmix64's finalizer): the
// request's hash for consistent-hashing policies.
func keyHash(k uint64) uint64 {
	k += 0x9e3779b97f4a7c15
	k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9
	k = (k ^ (k >> 27)) * 0x94d049bb133111eb
	return k ^ (k >> 31)
}

// issue makes a new request now and picks for it.
func (c *client) issue() {
	r := c.run.newRequest(c)
	c.issued++
	if c.spec.requests > 0 && c.issued >= c.spec.requests {
		c.stopIssuing()
	}
	if c.spec.timeout > 0 {
		r.deadline = r.start + c.spec.timeout
		if c.deadlines.len() == 0 {
			c.run.e.at(r.deadline, evTimeout, 0, c)
		}
		c.deadlines.push(deadline{r, r.id, r.deadline})
	}
	c.pick(r)
}

// pick asks the picker for r, as a channel does: queue, fail or send.
func (c *client) pick(r *request) {
	if c.picker == nil {
		c.wait(r)
		return
	}
	res, err := c.picker.Pick(lb.PickInfo{Ctx: c.ctx, Hash: r.hash, HasHash: r.hasHash})
	if err != nil {
		if lb.ClassifyPickError(err) == lb.PickQueue {
			c.wait(r)
		} else {
			c.run.finish(r, outNoPick)
		}
		return
	}
	sc, ok := res.SubConn.(*subConn)
	switch {
	case !ok || sc.c != c:
		if res.Done != nil {
			res.Done(lb.DoneInfo{Err: errForeign})
		}
		c.run.finish(r, outNoPick)
	case sc.state != lb.Ready:
		if res.Done != nil {
			res.Done(lb.DoneInfo{Err: errNotReady})
		}
		c.wait(r)
	default:
		r.done = res.Done
		r.tries++
		a := c.run.newAttempt(r, sc.b)
		r.att = a
		sc.b.send(a, r.measured)
	}
}

// wait queues r for the next picker.
func (c *client) wait(r *request) {
	c.waiting = append(c.waiting, waiter{r, r.id})
}

// repick picks again for every request waiting, in arrival order.
func (c *client) repick() {
	c.repickQueued = false
	list := c.waiting
	c.waiting = c.spare[:0]
	for _, w := range list {
		if w.r.id == w.id {
			c.pick(w.r)
		}
	}
	clear(list)
	c.spare = list[:0]
}

// nextArrival returns the time of the open-loop arrival after t: Poisson at
// the rate of t's step, drawn again from the next step's start when it
// would cross it (exact for piecewise-constant rates, as the process is
// memoryless). ok is false when no rate is left.
func (c *client) nextArrival(t time.Duration) (time.Duration, bool) {
	rates := c.spec.rates
	for {
		st := rates[c.rateIdx]
		end := forever
		if c.rateIdx+1 < len(rates) {
			end = rates[c.rateIdx+1].at
		}
		if st.rate > 0 {
			gap := c.rng.ExpFloat64() / st.rate * float64(time.Second)
			if next := float64(t) + gap; next < float64(end) {
				return time.Duration(next), true
			}
		}
		if c.rateIdx+1 >= len(rates) {
			return 0, false
		}
		c.rateIdx++
		t = end
	}
}

// arrival issues an open-loop request and plans the next.
func (c *client) arrival() {
	if !c.canIssue() {
		c.stopIssuing()
		return
	}
	c.issue()
	if !c.issuing {
		return
	}
	if next, ok := c.nextArrival(c.run.e.now); ok {
		c.run.e.at(next, evArrival, 0, c)
	} else {
		c.stopIssuing()
	}
}

// stopIssuing records that the client makes no more requests.
func (c *client) stopIssuing() {
	if c.issuing {
		c.issuing = false
		c.run.issuing--
		if c.run.issuing == 0 {
			c.run.arrivalsEnded()
		}
	}
}

// closedLoopPause is how long a closed-loop worker waits after a request
// that failed without reaching a backend, so that a fleet that fails
// every pick does not spin at one instant.
const closedLoopPause = 10 * time.Millisecond

// ended is called when one of the client's requests ended: a closed-loop
// worker issues its next request.
func (c *client) ended(o outcome, reachedBackend bool) {
	if c.spec.concurrency == 0 || !c.issuing {
		return
	}
	if o != outOK && !reachedBackend {
		c.run.e.at(c.run.e.now+closedLoopPause, evFunc, 0, c.workerFn)
		return
	}
	c.worker()
}

// worker issues one closed-loop request if the client may.
func (c *client) worker() {
	if c.issuing && c.canIssue() {
		c.issue()
	} else {
		c.stopIssuing()
	}
}
