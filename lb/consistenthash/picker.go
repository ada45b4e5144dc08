package consistenthash

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"

	"github.com/lbkit/lbkit/lb"
)

// ErrNoRequestHash is wrapped by the error of a pick that carries no hash
// ([lb.PickInfo.HasHash] false) under a config without a request hash
// header: gRFC A76 fails such a pick, since nothing else can place it.
var ErrNoRequestHash = errors.New("the request carries no hash (set lb.PickInfo.Hash, or configure requestHashHeader)")

// pickEndpoint is what a picker knows of one endpoint: a snapshot of its
// state when the picker was built.
type pickEndpoint struct {
	state  lb.ConnectivityState
	result lb.PickResult
	// err is the endpoint's last connection error, for a
	// TRANSIENT_FAILURE pick.
	err error
	// connect asks the balancer, on its serializer, to connect the
	// endpoint if it is still IDLE. Made once per endpoint: calling it
	// does not allocate a closure.
	connect func()
	// Under a load bound, load counts the endpoint's requests in flight
	// (shared with every picker), weight is its share of the weight, and
	// result.Done uncounts a request.
	load   *atomic.Int64
	weight float64
}

// loadBound is a picker's bound on requests in flight per endpoint.
type loadBound struct {
	// factor is the hash balance factor, in percent.
	factor int64
	// inFlight counts requests in flight on every endpoint of the
	// balancer; shared with every picker.
	inFlight *atomic.Int64
}

// slots returns the requests in flight an endpoint of share weight may
// hold when inFlight are in flight: Envoy's
// ceil(ceil((inFlight+1)·factor/100)·weight), at least 1.
func (b *loadBound) slots(inFlight int64, weight float64) int64 {
	total := ((inFlight+1)*b.factor + 99) / 100
	return max(int64(math.Ceil(float64(total)*weight)), 1)
}

// picker is an immutable snapshot of the table and the endpoints' states
// (gRFC A42: a new picker for every state change). Pick is safe for
// concurrent use, takes no lock, and allocates nothing when it returns a
// READY endpoint.
type picker struct {
	name      string
	table     table
	endpoints []pickEndpoint
	// bound is the load bound, or nil.
	bound *loadBound
	sched lb.Scheduler
	// header is the config's request hash header, or ""; httpHeader is
	// its canonical HTTP form, the key of an http.Header.
	header, httpHeader string
	// anyConnecting is set if an endpoint was CONNECTING when the picker
	// was built (A76's picker_has_a_child_connecting).
	anyConnecting bool
	// random draws the hashes of requests without the header: a splitmix64
	// sequence from a seed drawn from the tree's random source.
	random atomic.Uint64
}

// Pick places the request in the table and walks it from there, as gRFC
// A61 (for a request's own hash) and A76 (for a random one) say; under a
// load bound, a READY endpoint that is full is passed over (see
// pickBounded).
func (p *picker) Pick(info lb.PickInfo) (lb.PickResult, error) {
	h, random, err := p.requestHash(&info)
	if err != nil {
		return lb.PickResult{}, err
	}
	first := p.table.first(h)
	switch {
	case p.bound != nil:
		return p.pickBounded(first, random)
	case random:
		return p.pickRandom(first)
	}
	slots := p.table.slots
	for i, j := 0, first; i < len(slots); i, j = i+1, wrap(j+1, len(slots)) {
		ep := &p.endpoints[slots[j]]
		switch ep.state {
		case lb.Ready:
			return ep.result, nil
		case lb.Idle:
			p.sched.Schedule(ep.connect)
			return lb.PickResult{}, lb.ErrNoSubConnAvailable
		case lb.Connecting:
			return lb.PickResult{}, lb.ErrNoSubConnAvailable
		}
	}
	return lb.PickResult{}, p.failure(first)
}

// pickBounded is Pick under a load bound: the walk of A61 (or A76 for a
// random hash), where a READY endpoint takes the request only if its
// requests in flight are below its slots. A full READY endpoint is
// remembered and passed over; an IDLE or CONNECTING endpoint met after one
// is asked to connect (IDLE) but does not hold the request, which goes to
// the first full endpoint met rather than wait. Without any READY
// endpoint the walk is A61's (or A76's).
func (p *picker) pickBounded(first int, random bool) (lb.PickResult, error) {
	slots := p.table.slots
	inFlight := p.bound.inFlight.Load()
	var full *pickEndpoint
	requested := p.anyConnecting
	for i, j := 0, first; i < len(slots); i, j = i+1, wrap(j+1, len(slots)) {
		ep := &p.endpoints[slots[j]]
		switch ep.state {
		case lb.Ready:
			if ep.load.Load() < p.bound.slots(inFlight, ep.weight) {
				return p.count(ep), nil
			}
			if full == nil {
				full = ep
			}
			continue
		case lb.Idle:
			if !random || !requested {
				p.sched.Schedule(ep.connect)
				requested = true
			}
		}
		if ep.state == lb.TransientFailure || random {
			continue
		}
		if full != nil {
			return p.count(full), nil
		}
		return lb.PickResult{}, lb.ErrNoSubConnAvailable
	}
	switch {
	case full != nil:
		return p.count(full), nil
	case random && requested:
		return lb.PickResult{}, lb.ErrNoSubConnAvailable
	}
	return lb.PickResult{}, p.failure(first)
}

// wrap returns j, or 0 when j is n: the next entry of a walk along a
// table of n entries, without the division of a modulo (one is the most
// of a READY pick's cost beside Maglev's lookup).
func wrap(j, n int) int {
	if j == n {
		return 0
	}
	return j
}

// count counts a request on ep, which its result's Done uncounts.
func (p *picker) count(ep *pickEndpoint) lb.PickResult {
	ep.load.Add(1)
	p.bound.inFlight.Add(1)
	return ep.result
}

// pickRandom is A76's walk for a random hash: the first READY endpoint
// from first; on the way, one IDLE endpoint is asked to connect unless one
// is already connecting, and the pick waits for it.
func (p *picker) pickRandom(first int) (lb.PickResult, error) {
	requested := p.anyConnecting
	slots := p.table.slots
	for i, j := 0, first; i < len(slots); i, j = i+1, wrap(j+1, len(slots)) {
		ep := &p.endpoints[slots[j]]
		if ep.state == lb.Ready {
			return ep.result, nil
		}
		if !requested && ep.state == lb.Idle {
			p.sched.Schedule(ep.connect)
			requested = true
		}
	}
	if requested {
		return lb.PickResult{}, lb.ErrNoSubConnAvailable
	}
	return lb.PickResult{}, p.failure(first)
}

// failure is the error of a pick that found every endpoint in
// TRANSIENT_FAILURE: the first endpoint's ("return the first failure").
func (p *picker) failure(first int) error {
	err := p.endpoints[p.table.slots[first]].err
	if err == nil {
		err = errors.New(p.name + ": no endpoint is reachable")
	}
	return lb.TransientFailureError(err)
}

// requestHash returns the request's hash, and whether it was drawn at
// random because the configured header is missing.
func (p *picker) requestHash(info *lb.PickInfo) (uint64, bool, error) {
	if p.header == "" {
		if !info.HasHash {
			return 0, false, fmt.Errorf("%s: %w", p.name, ErrNoRequestHash)
		}
		return info.Hash, false, nil
	}
	if v := p.headerValue(info.Metadata); v != "" {
		return xxhash.Sum64String(v), false, nil
	}
	return mix(p.random.Add(golden)), true, nil
}

// multiValued is the optional side of [lb.Metadata] that lists every value
// of a key (http.Header has it).
type multiValued interface {
	Values(key string) []string
}

// headerValue returns the value of the request hash header in md, several
// values joined by "," (gRFC A76), or "" when there is none. An
// http.Header is read by its canonical key, which allocates nothing for a
// single value.
func (p *picker) headerValue(md lb.Metadata) string {
	var vs []string
	switch md := md.(type) {
	case nil:
		return ""
	case http.Header:
		vs = md[p.httpHeader]
	case multiValued:
		vs = md.Values(p.header)
	default:
		return md.Get(p.header)
	}
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	return strings.Join(vs, ",")
}

// golden is splitmix64's increment, 2^64/φ.
const golden = 0x9e3779b97f4a7c15

// mix is splitmix64's finalizer.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
