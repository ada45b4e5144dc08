package outlierdetection

import (
	"math"
	"slices"
	"time"
)

// sweep is the interval timer's callback, A50's five steps: record the
// time, swap every call counter's buckets, run the configured algorithms,
// then age multipliers and un-eject addresses whose ejection is over. The
// next sweep is one interval from now.
func (b *odBalancer) sweep() {
	b.timer = nil
	if b.cfg == nil || !b.cfg.enabled() {
		return
	}
	now := b.opts.Clock.Now()
	b.timerStart = now
	for _, e := range b.order {
		e.counter.swap()
	}
	if sr := b.cfg.SuccessRateEjection; sr != nil {
		b.successRate(sr, now)
	}
	if fp := b.cfg.FailurePercentageEjection; fp != nil {
		b.failurePercentage(fp, now)
	}
	for _, e := range b.order {
		switch {
		case !e.ejected && e.multiplier > 0:
			e.multiplier--
		case e.ejected && !now.Before(e.ejectedAt.Add(b.ejectionTime(e))):
			b.uneject(e)
		}
	}
	b.startTimer(b.cfg.Interval)
}

// ejectionEnd returns when e's ejection ends: the first sweep at or after
// its ejection time has passed. Sweeps run every Interval from the next
// one, at timerStart + Interval.
func (b *odBalancer) ejectionEnd(e *entry) time.Time {
	due := e.ejectedAt.Add(b.ejectionTime(e))
	if b.timer == nil || b.timerStart.IsZero() || b.cfg.Interval <= 0 {
		return due
	}
	next := b.timerStart.Add(b.cfg.Interval)
	if !next.Before(due) {
		return next
	}
	steps := (due.Sub(next) + b.cfg.Interval - 1) / b.cfg.Interval
	return next.Add(steps * b.cfg.Interval)
}

// ejectionTime is how long e's current ejection lasts: base ejection time ×
// multiplier, capped at max(base ejection time, max ejection time), without
// overflowing.
func (b *odBalancer) ejectionTime(e *entry) time.Duration {
	limit := b.cfg.maxEjectionTime()
	base := b.cfg.BaseEjectionTime
	if base > 0 && e.multiplier > int64(limit/base) {
		return limit
	}
	return min(base*time.Duration(e.multiplier), limit)
}

// volume is the number of calls an address needs in an interval to be
// judged: the configured request volume, but at least one, since an
// address with no call has no success rate or failure percentage.
func volume(requestVolume uint32) int64 { return max(int64(requestVolume), 1) }

// candidates returns the entries with at least vol calls in the last
// interval, with their successes and failures, in sweep order.
func (b *odBalancer) candidates(vol int64) []candidate {
	var out []candidate
	for _, e := range b.order {
		s, f := e.counter.last()
		if s+f >= vol {
			out = append(out, candidate{e: e, successes: s, failures: f})
		}
	}
	return out
}

type candidate struct {
	e                   *entry
	successes, failures int64
}

// successRate is A50's success-rate algorithm. Success rates are compared
// as float64: the mean minus the standard deviation (of the population)
// times StdevFactor/1000.
func (b *odBalancer) successRate(cfg *SuccessRateEjection, now time.Time) {
	cands := b.candidates(volume(cfg.RequestVolume))
	b.ran(algSuccessRate, len(cands), cfg.MinimumHosts, cfg.RequestVolume)
	if int64(len(cands)) < int64(cfg.MinimumHosts) || len(cands) == 0 {
		return
	}
	rates := make([]float64, len(cands))
	var sum float64
	for i, c := range cands {
		rates[i] = float64(c.successes) / float64(c.successes+c.failures)
		sum += rates[i]
	}
	mean := sum / float64(len(rates))
	var sq float64
	for _, r := range rates {
		sq += (r - mean) * (r - mean)
	}
	threshold := mean - math.Sqrt(sq/float64(len(rates)))*(float64(cfg.StdevFactor)/1000)
	for i, c := range cands {
		if b.ejectionCapReached() {
			return
		}
		if rates[i] < threshold {
			b.maybeEject(c.e, cfg.EnforcementPercentage, now)
		}
	}
}

// failurePercentage is A50's failure-percentage algorithm: an address is an
// outlier when 100 × failures / calls is greater than Threshold, compared
// in integers.
func (b *odBalancer) failurePercentage(cfg *FailurePercentageEjection, now time.Time) {
	cands := b.candidates(volume(cfg.RequestVolume))
	b.ran(algFailurePercentage, len(cands), cfg.MinimumHosts, cfg.RequestVolume)
	if int64(len(cands)) < int64(cfg.MinimumHosts) {
		return
	}
	for _, c := range cands {
		if b.ejectionCapReached() {
			return
		}
		if 100*c.failures > int64(cfg.Threshold)*(c.successes+c.failures) {
			b.maybeEject(c.e, cfg.EnforcementPercentage, now)
		}
	}
}

// ejectionCapReached reports whether the ejected share of addresses has
// reached maxEjectionPercent. With no address ejected it is never reached,
// so one address can always be ejected.
func (b *odBalancer) ejectionCapReached() bool {
	ejected := 0
	for _, e := range b.order {
		if e.ejected {
			ejected++
		}
	}
	return ejected > 0 && int64(ejected)*100 >= int64(b.cfg.MaxEjectionPercent)*int64(len(b.order))
}

// maybeEject ejects an outlier with the enforcement percentage's chance:
// a draw from the tree's random source in [0, 100) below it. An address
// already ejected is left alone, and no number is drawn for it.
func (b *odBalancer) maybeEject(e *entry, enforcement uint32, now time.Time) {
	if e.ejected {
		return
	}
	if uint32(b.opts.Rand.IntN(100)) >= enforcement {
		return
	}
	e.ejected, e.ejectedAt = true, now
	e.multiplier++
	b.ejections.Add(1)
	b.logger.Info("outlierdetection: ejecting address", "addr", e.addr, "multiplier", e.multiplier)
	for _, w := range slices.Clone(e.subConns) {
		w.eject()
	}
}

// uneject returns e to service, if it is ejected.
func (b *odBalancer) uneject(e *entry) {
	if !e.ejected {
		return
	}
	e.ejected, e.ejectedAt = false, time.Time{}
	b.unejections.Add(1)
	b.logger.Info("outlierdetection: un-ejecting address", "addr", e.addr)
	for _, w := range slices.Clone(e.subConns) {
		w.uneject()
	}
}
