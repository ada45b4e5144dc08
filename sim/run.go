package sim

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// Random streams: each consumer has its own PCG stream of the scenario's
// seed, so a policy's choices do not shift the arrivals another policy
// sees (the same arrivals for every policy: common random numbers).
const (
	streamArrivals = 1 << 32
	streamPolicy   = 2 << 32
	streamService  = 3 << 32
	streamConns    = 4 << 32
	streamKeys     = 5 << 32
)

func stream(seed, id uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, id)) }

// Run runs the scenario once per policy, each on a fresh fleet from the
// same seed, and returns the report. One scenario and one seed give the
// same report, byte for byte, on every run and machine. An error says why
// a run could not finish (a memory bound, a policy that broke the
// concurrency contract).
func Run(s *Scenario) (*Report, error) {
	rep := &Report{Scenario: s.name, Description: s.description, Seed: s.seed}
	for i := range s.policies {
		res, err := runPolicy(s, &s.policies[i])
		if err != nil {
			return nil, fmt.Errorf("sim: %s under %s: %w", s.name, s.policies[i].name, err)
		}
		rep.Policies = append(rep.Policies, res)
	}
	return rep, nil
}

// run is one policy's run of a scenario: the engine, the fleet, the
// clients and what is measured.
type run struct {
	e        engine
	sc       *Scenario
	policy   *policySpec
	backends []*backend
	byName   map[string]*backend
	clients  []*client
	st       stats

	nextID        uint64
	alive         int // requests not ended
	aliveMeasured int
	issuing       int // clients still making requests
	stopAt        time.Duration
	err           error

	reqs pool[request]
	atts pool[attempt]
}

// pool keeps values for reuse, so a run allocates for the most requests
// alive at once, not for every request.
type pool[T any] struct{ free []*T }

// get returns a zeroed value.
func (p *pool[T]) get() *T {
	n := len(p.free)
	if n == 0 {
		return new(T)
	}
	v := p.free[n-1]
	p.free = p.free[:n-1]
	return v
}

// put zeroes v and keeps it.
func (p *pool[T]) put(v *T) {
	var zero T
	*v = zero
	p.free = append(p.free, v)
}

// maxAtOneInstant is how many events in a row may run at one virtual
// instant before the run is stopped as one whose time cannot advance.
const maxAtOneInstant = 10_000_000

// errTooManyInFlight stops a run whose fleet falls so far behind that
// its requests would not fit the memory bound.
var errTooManyInFlight = fmt.Errorf("more than %d requests in flight: the fleet cannot keep up (set a timeout or lower the rate)", maxInFlight)

func runPolicy(s *Scenario, p *policySpec) (res PolicyResult, err error) {
	r := &run{sc: s, policy: p, byName: make(map[string]*backend, len(s.backends)), stopAt: forever}
	defer func() {
		if v := recover(); v != nil {
			ce, ok := v.(contractError)
			if !ok {
				panic(v)
			}
			err = ce
		}
	}()
	r.build()
	r.loop()
	if r.err != nil {
		return PolicyResult{}, r.err
	}
	for _, c := range r.clients {
		c.scope.Close()
		c.bal.Close()
	}
	return r.result(), nil
}

// build makes the fleet, the fault timeline, the clients and their
// policy trees, gives the trees their first resolver state and starts the
// traffic, all at time zero.
func (r *run) build() {
	s := r.sc
	for i := range s.backends {
		b := &backend{run: r, idx: i, spec: &s.backends[i], rng: stream(s.seed, streamService|uint64(i))}
		r.backends = append(r.backends, b)
		r.byName[b.spec.name] = b
	}
	for i := range s.faults {
		r.planFault(&s.faults[i])
	}
	logger := slog.New(slog.DiscardHandler)
	for i := range s.clients {
		c := &client{run: r, idx: i, spec: &s.clients[i], issuing: true,
			rng: stream(s.seed, streamArrivals|uint64(i)), connRand: stream(s.seed, streamConns|uint64(i))}
		if k := c.spec.keys; k.count > 0 {
			c.keys = rand.NewZipf(stream(s.seed, streamKeys|uint64(i)), k.zipf, 1, uint64(k.count-1))
		}
		c.ctx = context.WithValue(context.Background(), oracleKey{}, Oracle(r))
		c.repickFn, c.workerFn = c.repick, c.worker
		// As a channel does: the root balancer runs on a scope of its own
		// over the tree's scheduler, and reports through the scope's
		// ClientConn.
		c.scope = lb.NewScope(scheduler{&r.e})
		c.bal = r.policy.parsed.Builder.Build(c.scope.ClientConn(c), lb.BuildOptions{
			Clock: vclock{&r.e}, Logger: logger, Rand: stream(s.seed, streamPolicy|uint64(i)),
			Scheduler: c.scope, Target: c.Target(),
		}.WithDefaults())
		r.clients = append(r.clients, c)
		r.issuing++
	}
	r.publish()
	for _, c := range r.clients {
		if c.spec.concurrency > 0 {
			for range c.spec.concurrency {
				r.e.at(0, evFunc, 0, c.workerFn)
			}
		} else if t, ok := c.nextArrival(0); ok {
			r.e.at(t, evArrival, 0, c)
		} else {
			c.stopIssuing()
		}
	}
}

// planFault puts f on its backend and its actions on the timeline.
func (r *run) planFault(f *faultSpec) {
	b := r.backends[f.backend]
	b.faults = append(b.faults, f)
	switch f.kind {
	case faultStop:
		r.e.at(f.from, evFunc, 0, b.stop)
		if f.until != forever {
			r.e.at(f.until, evFunc, 0, func() { b.restart(f) })
		}
	case faultRemoved, faultWeight:
		r.e.at(f.from, evFunc, 0, r.publish)
		if f.until != forever {
			r.e.at(f.until, evFunc, 0, r.publish)
		}
	}
}

// addresses returns the resolver's addresses now: every backend not
// removed, with its weight and hierarchy path.
func (r *run) addresses() []resolver.Address {
	now := r.e.now
	var addrs []resolver.Address
	for _, b := range r.backends {
		w, removed := b.spec.weight, false
		for _, f := range b.faults {
			if f.active(now) {
				switch f.kind {
				case faultRemoved:
					removed = true
				case faultWeight:
					w = f.weight
				}
			}
		}
		if removed {
			continue
		}
		a := resolver.Address{Addr: b.spec.name}
		if w > 0 {
			a = weight.Set(a, w)
		}
		if len(b.spec.hierarchy) > 0 {
			a = hierarchy.Set(a, b.spec.hierarchy)
		}
		addrs = append(addrs, a)
	}
	return addrs
}

// publish gives every client's tree the resolver's current state, as a
// resolver update would.
func (r *run) publish() {
	addrs := r.addresses()
	for _, c := range r.clients {
		_ = c.bal.UpdateClientConnState(lb.ClientConnState{
			ResolverState:  resolver.State{Addresses: addrs},
			BalancerConfig: r.policy.parsed.Config,
		})
	}
}

// loop runs events until every request has ended after the traffic
// stopped, or the drain time is over.
func (r *run) loop() {
	e := &r.e
	same := 0 // events in a row at one instant
	for len(e.heap) > 0 && r.err == nil {
		if e.heap[0].at > r.stopAt {
			break
		}
		if e.heap[0].at == e.now {
			if same++; same > r.sc.atOneInstant {
				r.err = fmt.Errorf("virtual time stopped at %v: more than %d events at one instant (a closed loop over service times of 0?)", e.now, r.sc.atOneInstant)
				break
			}
		} else {
			same = 0
		}
		ev := e.next()
		switch ev.kind() {
		case evFunc, evTimer:
			ev.runScheduled()
		case evArrival:
			ev.ref.(*client).arrival()
		case evComplete:
			a := ev.ref.(*attempt)
			a.b.complete(a)
		case evTimeout:
			ev.ref.(*client).expire()
		case evConnect:
			ev.ref.(*subConn).connected(ev.id)
		case evSend:
			a := ev.ref.(*attempt)
			a.b.reach(a, ev.id == 1)
		case evReply:
			a := ev.ref.(*attempt)
			a.b.reply(a, ev.id == 1)
		}
		if r.issuing == 0 && r.alive == 0 {
			break
		}
	}
	r.st.close(r, r.aliveMeasured)
}

// arrivalsEnded is called when the last client stops making requests.
func (r *run) arrivalsEnded() { r.stopAt = r.e.now + r.sc.drain }

// newRequest returns a request of c arriving now.
func (r *run) newRequest(c *client) *request {
	q := r.reqs.get()
	r.nextID++
	*q = request{id: r.nextID, c: c, start: r.e.now, measured: r.e.now >= r.sc.warmup}
	if c.keys != nil {
		q.hash, q.hasHash = keyHash(c.keys.Uint64()), true
	}
	r.alive++
	if q.measured {
		r.aliveMeasured++
	}
	if r.alive > maxInFlight {
		r.err = errTooManyInFlight
	}
	r.st.arrived(r)
	return q
}

// newAttempt returns an attempt of q at b.
func (r *run) newAttempt(q *request, b *backend) *attempt {
	a := r.atts.get()
	*a = attempt{r: q, rid: q.id, b: b}
	return a
}

// freeAttempt recycles a once its backend is done with it.
func (r *run) freeAttempt(a *attempt) {
	r.atts.put(a)
}

// attemptDone takes the outcome of a, which its backend is done with:
// the request succeeds, is tried again, or fails.
func (r *run) attemptDone(a *attempt, err error) { r.attemptDoneWith(a, err, nil) }

// attemptDoneWith is attemptDone with the backend's load report, if it
// sends one (valid only during the call, as lb.DoneInfo.Load is).
func (r *run) attemptDoneWith(a *attempt, err error, load *lb.LoadReport) {
	q := a.r
	if !a.live() {
		return // the request timed out (or ended) before
	}
	q.att = nil
	if done := q.done; done != nil {
		q.done = nil
		done(lb.DoneInfo{Err: err, Load: load})
	}
	switch {
	case err == nil:
		r.finish(q, outOK)
	case q.tries <= q.c.spec.retries && (q.deadline == 0 || r.e.now < q.deadline):
		q.c.pick(q)
	default:
		r.finish(q, outError)
	}
}

// timeout ends q at its deadline; its attempt, if any, stays on its
// backend, and its Done reports ErrDeadline.
func (r *run) timeout(q *request) {
	if q.att != nil {
		q.att = nil
		if done := q.done; done != nil {
			q.done = nil
			done(lb.DoneInfo{Err: ErrDeadline})
		}
	}
	r.finish(q, outTimeout)
}

// finish ends q with o and recycles it.
func (r *run) finish(q *request, o outcome) {
	r.st.ended(r, q, o)
	c, reached := q.c, q.tries > 0
	r.alive--
	if q.measured {
		r.aliveMeasured--
	}
	r.reqs.put(q)
	c.ended(o, reached)
}

// Oracle is what the simulator tells the oracle policy (see [OracleName])
// at each pick, through the pick's context.
type Oracle interface {
	// Estimate returns the expected time a new request sent now to the
	// backend at addr would take, and false when the backend is stopped
	// or unknown.
	Estimate(addr string) (time.Duration, bool)
}

type oracleKey struct{}

// Estimate is the oracle's knowledge: the mean of the backend's
// service-time distribution, under the faults active now (slower, the
// warm-up after a restart), times the queueing delay its current load
// implies: with c slots and n requests served or queued, a new request
// waits for (n-c+1)/c service times when n >= c; plus the network's
// round trip.
func (r *run) Estimate(addr string) (time.Duration, bool) {
	b, ok := r.byName[addr]
	if !ok || b.down {
		return 0, false
	}
	mean := b.scale(b.spec.service.mean(), r.e.now)
	if c := b.spec.concurrency; c > 0 {
		if n := b.inFlight(); n >= c {
			mean *= 1 + float64(n-c+1)/float64(c)
		}
	}
	return time.Duration(mean) + b.spec.rtt, true
}
