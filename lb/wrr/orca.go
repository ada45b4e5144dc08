package wrr

import (
	"encoding/json"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
)

// The defaults of gRFC A58's config fields.
const (
	// DefaultBlackoutPeriod is how long an endpoint must report load
	// before its reported weight is used.
	DefaultBlackoutPeriod = 10 * time.Second
	// DefaultWeightExpirationPeriod is how old the last report may become
	// before the reported weight is no longer used.
	DefaultWeightExpirationPeriod = 3 * time.Minute
	// DefaultWeightUpdatePeriod is how often weights are recomputed.
	DefaultWeightUpdatePeriod = time.Second
	// MinWeightUpdatePeriod is the shortest weight update period: shorter
	// ones are raised to it, as A58 says.
	MinWeightUpdatePeriod = 100 * time.Millisecond
	// DefaultErrorUtilizationPenalty is the default multiplier of eps/qps.
	DefaultErrorUtilizationPenalty = 1.0
	// DefaultOOBReportingPeriod is A58's default out-of-band reporting
	// period (out-of-band reporting is not implemented).
	DefaultOOBReportingPeriod = 10 * time.Second
)

// LoadReportConfig holds gRFC A58's fields: how weights are computed from
// the backends' load reports ([lb.DoneInfo].Load). The zero value means
// every default. Because 0 is a meaningful blackout period and penalty,
// those two fields use a negative value to mean zero ([NoBlackout],
// [NoErrorPenalty]); ParseConfig maps "0s" and 0 to them.
type LoadReportConfig struct {
	// BlackoutPeriod: a weight is used only after the endpoint has
	// reported for this long (since its first report, its SubConn's
	// return to READY or its weight's expiry). 0 means
	// [DefaultBlackoutPeriod]; negative ([NoBlackout]) means none. JSON
	// "blackoutPeriod" (or "blackout_period"), a duration.
	BlackoutPeriod time.Duration
	// WeightExpirationPeriod: a weight whose last report is this old is
	// no longer used. 0 means [DefaultWeightExpirationPeriod]. JSON
	// "weightExpirationPeriod", a positive duration.
	WeightExpirationPeriod time.Duration
	// WeightUpdatePeriod: how often the schedule is rebuilt with new
	// weights. 0 means [DefaultWeightUpdatePeriod]; below
	// [MinWeightUpdatePeriod] means that. JSON "weightUpdatePeriod".
	WeightUpdatePeriod time.Duration
	// ErrorUtilizationPenalty multiplies eps/qps in the weight. 0 means
	// [DefaultErrorUtilizationPenalty]; negative ([NoErrorPenalty]) means
	// none. JSON "errorUtilizationPenalty", a number of at least 0.
	ErrorUtilizationPenalty float64
	// OOBReportingPeriod is parsed and kept, but unused: lbkit does not
	// implement out-of-band reporting, and refuses
	// "enableOobLoadReport": true. JSON "oobReportingPeriod".
	OOBReportingPeriod time.Duration
}

// NoBlackout as [LoadReportConfig.BlackoutPeriod] means no blackout.
const NoBlackout time.Duration = -1

// NoErrorPenalty as [LoadReportConfig.ErrorUtilizationPenalty] means a
// penalty of 0: errors do not lower weights.
const NoErrorPenalty = -1.0

// withDefaults returns c with its zero fields replaced by the defaults and
// its sentinels by the values they stand for (0).
func (c LoadReportConfig) withDefaults() LoadReportConfig {
	switch {
	case c.BlackoutPeriod == 0:
		c.BlackoutPeriod = DefaultBlackoutPeriod
	case c.BlackoutPeriod < 0:
		c.BlackoutPeriod = 0
	}
	if c.WeightExpirationPeriod <= 0 {
		c.WeightExpirationPeriod = DefaultWeightExpirationPeriod
	}
	if c.WeightUpdatePeriod == 0 {
		c.WeightUpdatePeriod = DefaultWeightUpdatePeriod
	}
	c.WeightUpdatePeriod = max(c.WeightUpdatePeriod, MinWeightUpdatePeriod)
	switch {
	case c.ErrorUtilizationPenalty == 0:
		c.ErrorUtilizationPenalty = DefaultErrorUtilizationPenalty
	case c.ErrorUtilizationPenalty < 0:
		c.ErrorUtilizationPenalty = 0
	}
	if c.OOBReportingPeriod <= 0 {
		c.OOBReportingPeriod = DefaultOOBReportingPeriod
	}
	return c
}

// parseLoadReportConfig reads A58's fields of obj into c.
func parseLoadReportConfig(obj lb.ConfigObject, c *LoadReportConfig) error {
	var oob bool
	if err := obj.Decode(&oob, "enableOobLoadReport", "enable_oob_load_report"); err != nil {
		return err
	}
	if oob {
		_, name, _ := obj.Raw("enableOobLoadReport", "enable_oob_load_report")
		return lb.ConfigErrorf(name, "true asks for out-of-band load reports (gRFC A58, A51's OpenRcaService stream), which lbkit does not implement; leave it false to weigh by per-request reports")
	}
	for _, f := range []struct {
		dst      *time.Duration
		names    []string
		positive bool
	}{
		{&c.BlackoutPeriod, []string{"blackoutPeriod", "blackout_period"}, false},
		{&c.WeightExpirationPeriod, []string{"weightExpirationPeriod", "weight_expiration_period"}, true},
		{&c.WeightUpdatePeriod, []string{"weightUpdatePeriod", "weight_update_period"}, false},
		{&c.OOBReportingPeriod, []string{"oobReportingPeriod", "oob_reporting_period"}, false},
	} {
		if err := parseConfigDuration(obj, f.dst, f.positive, f.names...); err != nil {
			return err
		}
	}
	if c.BlackoutPeriod == 0 && present(obj, "blackoutPeriod", "blackout_period") {
		c.BlackoutPeriod = NoBlackout
	}
	if c.WeightUpdatePeriod == 0 && present(obj, "weightUpdatePeriod", "weight_update_period") {
		c.WeightUpdatePeriod = MinWeightUpdatePeriod // "0s": below the minimum
	}
	raw, name, ok := obj.Raw("errorUtilizationPenalty", "error_utilization_penalty")
	if !ok || string(raw) == "null" {
		return nil
	}
	p, err := parseFloat(raw)
	if err != nil {
		return lb.ConfigErrorf(name, "want a number, got %s", raw)
	}
	if !(p >= 0) || math.IsInf(p, 0) {
		return lb.ConfigErrorf(name, "%v is not a finite number of at least 0 (gRFC A58 rejects a negative penalty)", p)
	}
	if p == 0 {
		p = NoErrorPenalty
	}
	c.ErrorUtilizationPenalty = p
	return nil
}

// parseFloat reads a proto3 JSON float: a number, or a string holding one.
func parseFloat(raw json.RawMessage) (float64, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return strconv.ParseFloat(text, 64)
	}
	var f float64
	err := json.Unmarshal(raw, &f)
	return f, err
}

// present reports whether obj has a non-null field among names.
func present(obj lb.ConfigObject, names ...string) bool {
	raw, _, ok := obj.Raw(names...)
	return ok && string(raw) != "null"
}

// parseConfigDuration reads the duration field among names into dst; it
// must not be negative (nor zero when positive is set).
func parseConfigDuration(obj lb.ConfigObject, dst *time.Duration, positive bool, names ...string) error {
	raw, name, ok := obj.Raw(names...)
	if !ok {
		return nil
	}
	d, err := lb.ParseDuration(raw)
	if err != nil {
		return lb.PrefixConfigError(name, err)
	}
	if d < 0 || (positive && d == 0 && string(raw) != "null") {
		return lb.ConfigErrorf(name, "%v is not a positive duration", d)
	}
	*dst = d
	return nil
}

// loadState is the balancer's state for load reports. penalty and armed
// are shared with the Done of picks; the rest belongs to the serializer.
type loadState struct {
	clock clock.Clock
	sched lb.Scheduler
	// penalty is the error utilization penalty in force, as float64 bits.
	penalty atomic.Uint64
	// armed is set while the weight update timer runs or is being
	// started: the first report after it stopped starts it again.
	armed atomic.Bool
	// timer is the pending weight update, or nil.
	timer lb.Timer
	// readyEndpoints and readyWeights are the published READY picker's
	// endpoints and their integer weights.
	readyEndpoints []*endpoint
	readyWeights   []uint32
	// A78's metrics beside rr_fallback and not_yet_usable.
	stale   lb.Counter
	weights lb.Histogram
}

// onLoad is the Done of every pick on ep: it records the request's load
// report, if any, in ep's weight, and arms the weight update timer on the
// first report. It runs on request goroutines; it neither blocks (beyond
// the endpoint's short mutex) nor allocates.
func (b *balancer) onLoad(l *loadWeight, di lb.DoneInfo) {
	if di.Load == nil {
		return
	}
	w := reportWeight(di.Load, math.Float64frombits(b.penalty.Load()))
	if w == 0 {
		return
	}
	l.update(w, b.clock.Now())
	if !b.armed.Load() && b.armed.CompareAndSwap(false, true) {
		if !b.sched.Schedule(b.startWeightUpdates) {
			b.armed.Store(false) // closed
		}
	}
}

// startWeightUpdates starts the weight update timer, on the serializer.
func (b *balancer) startWeightUpdates() {
	if b.timer == nil {
		b.timer = b.sched.AfterFunc(b.cfg.LoadReports.withDefaults().WeightUpdatePeriod, b.updateWeights)
	}
}

// updateWeights is the weight update timer's callback (A58's
// weight_update_period): it publishes a new READY picker if the weights
// the schedule would get differ from the published ones, and runs again
// after the period while any endpoint's last report is fresh. When none
// is, it stops; the next report starts it again.
func (b *balancer) updateWeights() {
	b.timer = nil
	if b.ready != nil && b.weightsChanged() {
		b.List.Refresh()
	}
	lc := b.cfg.LoadReports.withDefaults()
	now := b.clock.Now()
	for _, ep := range b.Endpoints() {
		if ep.Data.load.fresh(now, lc.WeightExpirationPeriod) {
			b.startWeightUpdates()
			return
		}
	}
	b.armed.Store(false)
	// A report that came between fresh and here found the timer armed:
	// look once more, so it is not left without one.
	for _, ep := range b.Endpoints() {
		if ep.Data.load.fresh(now, lc.WeightExpirationPeriod) && b.armed.CompareAndSwap(false, true) {
			b.startWeightUpdates()
			return
		}
	}
}

// weightsChanged reports whether the READY picker's endpoints would now be
// scheduled with other weights than the published ones.
func (b *balancer) weightsChanged() bool {
	eps := b.readyEndpoints
	w := make([]uint32, len(eps))
	raw := make([]float64, len(eps))
	b.scheduleWeights(eps, b.clock.Now(), w, raw)
	for i := range eps {
		if w[i] != b.readyWeights[i] {
			return true
		}
	}
	return false
}
