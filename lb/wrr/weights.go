package wrr

import (
	"math"
	"sync"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// weightState says whether an endpoint's reported weight can be used now
// (gRFC A58's GetWeight), and if not, why.
type weightState int8

const (
	// weightNone: no report with positive QPS and utilization yet.
	weightNone weightState = iota
	// weightBlackout: reports arrive, but not yet for blackoutPeriod since
	// the first one (or since the SubConn became READY again, or since
	// the weight expired).
	weightBlackout
	// weightStale: the last report is weightExpirationPeriod old or older.
	weightStale
	// weightUsable: the weight is used.
	weightUsable
)

// String names the state, for test failures.
func (s weightState) String() string {
	return [...]string{"none", "blackout", "stale", "usable"}[s]
}

// loadWeight is one endpoint's weight from its load reports, with gRFC
// A58's two timestamps. It is written by Done on request goroutines and
// read on the tree's serializer, under its mutex (held for a few
// instructions; pickers never take it).
type loadWeight struct {
	mu sync.Mutex
	// weight is the last weight computed from a usable report.
	weight float64
	// lastUpdated is when that report arrived; zero before the first.
	lastUpdated time.Time
	// nonEmptySince is when the current run of reports began; zero is
	// A58's "infinity" (no run: never, or reset by READY or expiry).
	nonEmptySince time.Time
}

// reportWeight is A58's weight of a report: qps / (utilization + eps/qps *
// penalty), where utilization is the application utilization if positive,
// else the CPU utilization; 0 (not usable) when qps or utilization is not
// positive, or the result is not a positive finite number.
func reportWeight(r *lb.LoadReport, penalty float64) float64 {
	util := r.ApplicationUtilization
	if !(util > 0) {
		util = r.CPUUtilization
	}
	if !(util > 0) || !(r.QPS > 0) {
		return 0
	}
	w := r.QPS / (util + r.EPS/r.QPS*penalty)
	if !(w > 0) || math.IsInf(w, 0) {
		return 0
	}
	return w
}

// update records a report's weight w received at now (A58's UpdateWeight).
// A weight of 0 changes nothing.
func (l *loadWeight) update(w float64, now time.Time) {
	if w == 0 {
		return
	}
	l.mu.Lock()
	if l.nonEmptySince.IsZero() {
		l.nonEmptySince = now
	}
	l.lastUpdated, l.weight = now, w
	l.mu.Unlock()
}

// becameReady restarts the blackout period: the endpoint's SubConn became
// READY (A58's OnSubchannelBecomesReady).
func (l *loadWeight) becameReady() {
	l.mu.Lock()
	l.nonEmptySince = time.Time{}
	l.mu.Unlock()
}

// get returns the weight to use at now and its state (A58's GetWeight);
// the weight is 0 unless the state is weightUsable. An expired weight
// resets the run of reports, so fresh reports serve a new blackout.
func (l *loadWeight) get(now time.Time, blackout, expiration time.Duration) (float64, weightState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastUpdated.IsZero() {
		return 0, weightNone
	}
	if now.Sub(l.lastUpdated) >= expiration {
		l.nonEmptySince = time.Time{}
		return 0, weightStale
	}
	if blackout > 0 && (l.nonEmptySince.IsZero() || now.Sub(l.nonEmptySince) < blackout) {
		return 0, weightBlackout
	}
	return l.weight, weightUsable
}

// fresh reports whether a report arrived less than expiration before now:
// whether the weight update timer still has work.
func (l *loadWeight) fresh(now time.Time, expiration time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lastUpdated.IsZero() && now.Sub(l.lastUpdated) < expiration
}

// maxScaledWeight is the integer weight of the heaviest endpoint when
// weights come from load reports: the others are scaled in proportion and
// rounded, at least 1, as grpc-go's scheduler scales to 16 bits.
const maxScaledWeight = 1 << 16

// weightCounts counts the states of a schedule's weights, for A78's
// metrics.
type weightCounts struct {
	notYetUsable, stale int64
	reported            bool // the schedule uses reported weights
}

// scheduleWeights fills out with the integer weight of each endpoint of
// ready at now, and raw with the weight each was given (for the
// endpoint_weights histogram): reported weights when at least two
// endpoints have a usable one, the endpoints without one getting the mean
// of those (A58); otherwise every endpoint's configured weight (the
// policy's behaviour without load reports, which is round robin when no
// address carries a weight).
func (b *balancer) scheduleWeights(ready []*endpoint, now time.Time, out []uint32, raw []float64) weightCounts {
	lc := b.cfg.LoadReports.withDefaults()
	var c weightCounts
	var sum, maxW float64
	usable := 0
	for i, ep := range ready {
		w, st := ep.Data.load.get(now, lc.BlackoutPeriod, lc.WeightExpirationPeriod)
		raw[i] = w
		switch st {
		case weightUsable:
			usable++
			sum += w
			maxW = max(maxW, w)
		case weightStale:
			c.stale++
		default:
			c.notYetUsable++
		}
	}
	if usable < 2 {
		c.notYetUsable = 0
		for i, ep := range ready {
			out[i] = ep.Data.weight
			if ep.Data.unweighted {
				c.notYetUsable++
			}
		}
		return c
	}
	c.reported = true
	mean := sum / float64(usable)
	for i := range ready {
		w := raw[i]
		if w == 0 {
			w = mean
		}
		out[i] = uint32(max(1, math.Round(w/maxW*maxScaledWeight)))
	}
	return c
}
