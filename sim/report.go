package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/lbkit/lbkit/sim/hist"
)

// Report is what a run of a scenario measured, one entry per policy. Its
// JSON form is the simulator's output for machines.
type Report struct {
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Description is the scenario's description.
	Description string `json:"description,omitempty"`
	// Seed is the seed the run used.
	Seed uint64 `json:"seed"`
	// Policies has one result per policy, in the scenario's order.
	Policies []PolicyResult `json:"policies"`
}

// PolicyResult is one policy's run. Requests that arrived during the
// scenario's warm-up are left out of every figure but the series.
type PolicyResult struct {
	// Policy is the policy's name in the scenario.
	Policy string `json:"policy"`
	// Requests is the number of requests measured.
	Requests uint64 `json:"requests"`
	// Succeeded is the number that succeeded within their timeout.
	Succeeded uint64 `json:"succeeded"`
	// SuccessRate is Succeeded / Requests.
	SuccessRate float64 `json:"successRate"`
	// Failed counts the other requests by why they failed.
	Failed Failures `json:"failed"`
	// Latency summarises every measured request's time from its arrival
	// at the client to its outcome, failures included (a timed-out
	// request counts at its timeout).
	Latency Latency `json:"latencyMs"`
	// CDF is the latency distribution at quantiles spaced evenly in
	// -log10(1-q), from 0 to 0.9999, then the maximum.
	CDF []CDFPoint `json:"cdf"`
	// Load summarises the requests each backend received.
	Load Load `json:"load"`
	// Backends has each backend's figures, in the scenario's order.
	Backends []BackendResult `json:"backends"`
	// Series has one entry per second of virtual time, from 0, for the
	// whole run (warm-up and drain included).
	Series []Second `json:"series"`
}

// Failures counts failed requests by cause: with
// [PolicyResult].Succeeded they add up to Requests.
type Failures struct {
	// Timeout counts requests whose timeout passed.
	Timeout uint64 `json:"timeout"`
	// Error counts requests whose last attempt failed at the backend (an
	// errors fault, or a backend that stopped with it in flight).
	Error uint64 `json:"error"`
	// NoPick counts requests the policy failed at the pick.
	NoPick uint64 `json:"noPick"`
	// Unfinished counts requests still running when the drain time ran
	// out.
	Unfinished uint64 `json:"unfinished"`
}

// Latency is a latency summary in milliseconds; quantiles come from a
// log-linear histogram (within 0.4%), Mean and Max are exact.
type Latency struct {
	// Mean is the mean.
	Mean float64 `json:"mean"`
	// P50 is the median.
	P50 float64 `json:"p50"`
	// P90 is the 90th percentile.
	P90 float64 `json:"p90"`
	// P99 is the 99th percentile.
	P99 float64 `json:"p99"`
	// P999 is the 99.9th percentile.
	P999 float64 `json:"p99.9"`
	// Max is the largest.
	Max float64 `json:"max"`
}

// CDFPoint is one point of a latency distribution.
type CDFPoint struct {
	// Q is the quantile, from 0 to 1.
	Q float64 `json:"q"`
	// Ms is the latency at Q, in milliseconds.
	Ms float64 `json:"ms"`
}

// Load is how evenly the backends were used.
type Load struct {
	// Max is the most requests one backend received.
	Max uint64 `json:"max"`
	// Avg is the mean over backends.
	Avg float64 `json:"avg"`
	// MaxOverAvg is Max / Avg: 1 is perfectly even.
	MaxOverAvg float64 `json:"maxOverAvg"`
}

// BackendResult is one backend's figures.
type BackendResult struct {
	// Name is the backend's name.
	Name string `json:"name"`
	// Requests counts the attempts it received.
	Requests uint64 `json:"requests"`
	// PeakInFlight is the most attempts it served or queued at once.
	PeakInFlight int `json:"peakInFlight"`
}

// Second is one second of the time series; every request counts here,
// warm-up included.
type Second struct {
	// T is the second's start, in seconds of virtual time.
	T int `json:"t"`
	// Requests counts requests that arrived at the clients.
	Requests uint64 `json:"requests"`
	// Succeeded and Failed count requests that ended.
	Succeeded uint64 `json:"succeeded"`
	// Failed counts requests that ended in failure.
	Failed uint64 `json:"failed"`
	// P50Ms and P99Ms are the latencies of the requests that ended.
	P50Ms float64 `json:"p50Ms"`
	// P99Ms is the 99th percentile of the requests that ended.
	P99Ms float64 `json:"p99Ms"`
	// Backends counts the attempts each backend received.
	Backends []uint32 `json:"backends"`
	// PeakInFlight is each backend's most attempts served or queued.
	PeakInFlight []int `json:"peakInFlight"`
	// MeanInFlight is each backend's attempts served or queued, averaged
	// over the second (the time integral over 1 s), to 0.001.
	MeanInFlight []float64 `json:"meanInFlight"`
}

// stats accumulates one run's measurements in bounded memory: histograms,
// counters and one entry per second.
type stats struct {
	lat   hist.Histogram
	n, ok uint64
	fails Failures

	sec    hist.Histogram // latencies of requests ended this second
	cur    Second
	series []Second
}

// roll closes every second before now.
func (s *stats) roll(r *run) {
	idx := int(r.e.now / time.Second)
	for s.cur.T < idx && r.err == nil {
		s.flush(r)
	}
}

// flush appends the current second and starts the next.
func (s *stats) flush(r *run) {
	c := s.cur
	c.P50Ms, c.P99Ms = ms(s.sec.Quantile(0.5)), ms(s.sec.Quantile(0.99))
	c.Backends = make([]uint32, len(r.backends))
	c.PeakInFlight = make([]int, len(r.backends))
	c.MeanInFlight = make([]float64, len(r.backends))
	end := time.Duration(c.T+1) * time.Second
	for i, b := range r.backends {
		area := b.sec.area + int64(b.inFlight())*int64(end-b.tracked)
		b.tracked = end
		c.Backends[i], c.PeakInFlight[i] = b.sec.requests, b.sec.peak
		c.MeanInFlight[i] = math.Round(float64(area)/float64(time.Second)*1000) / 1000
		b.sec = secondStats{peak: b.inFlight()}
	}
	s.series = append(s.series, c)
	s.sec.Reset()
	s.cur = Second{T: c.T + 1}
	if int64(len(s.series))*int64(len(r.backends)) > maxCells {
		r.err = fmt.Errorf("the time series passed %d cells (seconds × backends); shorten the run", maxCells)
	}
}

func (r *run) rollSecond() { r.st.roll(r) }

// arrived counts a request's arrival.
func (s *stats) arrived(r *run) {
	s.roll(r)
	s.cur.Requests++
}

// ended counts q's outcome o now.
func (s *stats) ended(r *run, q *request, o outcome) {
	s.roll(r)
	lat := r.e.now - q.start
	s.sec.Record(lat)
	if o == outOK {
		s.cur.Succeeded++
	} else {
		s.cur.Failed++
	}
	if !q.measured {
		return
	}
	s.n++
	s.lat.Record(lat)
	switch o {
	case outOK:
		s.ok++
	case outTimeout:
		s.fails.Timeout++
	case outError:
		s.fails.Error++
	case outNoPick:
		s.fails.NoPick++
	}
}

// close ends the series with the second that holds now and counts the
// measured requests still alive as unfinished.
func (s *stats) close(r *run, unfinished int) {
	s.roll(r)
	if r.err == nil {
		s.flush(r)
	}
	s.n += uint64(unfinished)
	s.fails.Unfinished += uint64(unfinished)
}

// result builds the run's [PolicyResult].
func (r *run) result() PolicyResult {
	s := &r.st
	res := PolicyResult{Policy: r.policy.name, Requests: s.n, Succeeded: s.ok, Failed: s.fails, Series: s.series}
	if s.n > 0 {
		res.SuccessRate = math.Round(float64(s.ok)/float64(s.n)*1e6) / 1e6
	}
	h := &s.lat
	res.Latency = Latency{Mean: ms(h.Mean()), P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)),
		P99: ms(h.Quantile(0.99)), P999: ms(h.Quantile(0.999)), Max: ms(h.Max())}
	for k := 0; k <= 80; k++ {
		q := 1 - math.Pow(10, -float64(k)/20)
		res.CDF = append(res.CDF, CDFPoint{Q: math.Round(q*1e6) / 1e6, Ms: ms(h.Quantile(q))})
	}
	res.CDF = append(res.CDF, CDFPoint{Q: 1, Ms: ms(h.Max())})
	var total uint64
	for _, b := range r.backends {
		res.Backends = append(res.Backends, BackendResult{Name: b.spec.name, Requests: b.requests, PeakInFlight: b.peak})
		total += b.requests
		res.Load.Max = max(res.Load.Max, b.requests)
	}
	res.Load.Avg = math.Round(float64(total)/float64(len(r.backends))*1000) / 1000
	if total > 0 {
		res.Load.MaxOverAvg = math.Round(float64(res.Load.Max)/(float64(total)/float64(len(r.backends)))*1000) / 1000
	}
	return res
}

// ms converts d to milliseconds, rounded to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
