package sim

import (
	"math"
	"strings"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/connstate"
)

// maxRate is the highest open-loop rate a client may ask for, per second.
const maxRate = 1e9

// parseClients reads clients: [{"name", "count", "rate" | "rates" |
// "concurrency", "requests", "timeout", "retries", "backoff",
// "minConnectTimeout", "healthCheck", "keys"}].
func (s *Scenario) parseClients(o object) error {
	return o.each("clients", "want at least one client",
		[]string{"name", "count", "rate", "rates", "concurrency", "requests", "timeout", "retries", "backoff", "minConnectTimeout", "healthCheck", "keys"},
		s.parseClient)
}

// parseClient reads one entry of clients.
func (s *Scenario) parseClient(c object) error {
	spec := clientSpec{name: "client", backoff: backoff.ChannelDefault(), minConnectTimeout: defaultMinConnectTimeout}
	var count, conc, retries int64 = 1, 0, 0
	err := firstErr(
		func() error { return c.str("name", &spec.name) },
		func() error { return c.integer("count", &count, 1, maxClients) },
		func() error { return c.integer("concurrency", &conc, 0, maxInFlight) },
		func() error { return c.integer("requests", &spec.requests, 1, maxRequests) },
		func() error { return c.duration("timeout", &spec.timeout, 0, maxScenarioT) },
		func() error { return c.integer("retries", &retries, 0, 10) },
		func() error { return parseBackoff(c, &spec.backoff) },
		func() error {
			return c.duration("minConnectTimeout", &spec.minConnectTimeout, time.Millisecond, maxScenarioT)
		},
		func() error { return parseHealthCheck(c, &spec.health) },
		func() error { return parseKeys(c, &spec.keys) },
		func() error { return parseRates(c, &spec) },
	)
	if err != nil {
		return err
	}
	spec.concurrency, spec.retries = int(conc), int(retries)
	if (conc > 0) == (len(spec.rates) > 0) {
		return lb.ConfigErrorf(c.path, "want exactly one of rate, rates (open loop) and concurrency (closed loop)")
	}
	if len(s.clients)+int(count) > maxClients {
		return lb.ConfigErrorf(c.at("count"), "more than %d clients in all", maxClients)
	}
	for _, n := range expand(spec.name, count) {
		one := spec
		one.name = n
		s.clients = append(s.clients, one)
	}
	return nil
}

// parseRates reads "rate": r (from time 0) or "rates": [{"at", "rate"}]
// with increasing times, the first at 0.
func parseRates(c object, spec *clientSpec) error {
	if c.has("rate") {
		if c.has("rates") {
			return lb.ConfigErrorf(c.at("rates"), "give rate or rates, not both")
		}
		var r float64
		if err := c.float("rate", &r, 0, maxRate); err != nil {
			return err
		}
		spec.rates = []rateStep{{rate: r}}
		return nil
	}
	return c.each("rates", "", []string{"at", "rate"}, func(r object) error {
		var st rateStep
		if !r.has("at") || !r.has("rate") {
			return lb.ConfigErrorf(r.path, "at and rate are required")
		}
		if err := firstErr(
			func() error { return r.duration("at", &st.at, 0, maxScenarioT) },
			func() error { return r.float("rate", &st.rate, 0, maxRate) },
		); err != nil {
			return err
		}
		i := len(spec.rates)
		switch {
		case i == 0 && st.at != 0:
			return lb.ConfigErrorf(r.at("at"), "the first step must be at 0s")
		case i > 0 && st.at <= spec.rates[i-1].at:
			return lb.ConfigErrorf(r.at("at"), "must be after the previous step's")
		}
		spec.rates = append(spec.rates, st)
		return nil
	})
}

// faultKind names what a fault does to its backend.
type faultKind uint8

const (
	faultSlower    faultKind = iota // service time × factor, or a fixed latency
	faultErrors                     // a fraction of requests fail
	faultRefuse                     // new connections are refused
	faultStop                       // the backend is down, then restarts warming up
	faultRemoved                    // the endpoint is out of the resolver's state
	faultWeight                     // the endpoint's weight attribute changes
	faultUnhealthy                  // health checks fail (requests are still served)
)

// faultKinds are the keys that name a fault's kind, in faultKind order.
var faultKinds = []string{"slower", "errors", "refuse", "stop", "removed", "weight", "unhealthy"}

// forever is the end of a fault with no "until".
const forever = time.Duration(math.MaxInt64)

// faultSpec is one entry of the fault timeline: kind applies to backend
// from from until until.
type faultSpec struct {
	backend     int
	from, until time.Duration
	kind        faultKind
	factor      float64       // slower: service time multiplier; stop: warm-up's initial multiplier
	latency     time.Duration // slower: a fixed service time instead
	rate        float64       // errors: the fraction that fails
	warmup      time.Duration // stop: how long the warm-up lasts after the restart
	weight      uint32        // weight: the new weight
}

// active reports whether f applies at t.
func (f *faultSpec) active(t time.Duration) bool { return f.from <= t && t < f.until }

// parseFaults reads faults: [{"backend", "from", "until", and one of
// slower, errors, refuse, stop, removed, weight, unhealthy}].
func (s *Scenario) parseFaults(o object) error {
	return o.each("faults", "", append([]string{"backend", "from", "until"}, faultKinds...), s.parseFault)
}

// parseFault reads one entry of faults.
func (s *Scenario) parseFault(f object) error {
	spec := faultSpec{until: forever}
	var name string
	if err := firstErr(
		func() error { return f.str("backend", &name) },
		func() error { return f.duration("from", &spec.from, 0, maxScenarioT) },
		func() error { return f.duration("until", &spec.until, 0, maxScenarioT) },
	); err != nil {
		return err
	}
	var ok bool
	if spec.backend, ok = s.backendIndex(name); !ok {
		return lb.ConfigErrorf(f.at("backend"), "no backend named %q", name)
	}
	if spec.until <= spec.from {
		return lb.ConfigErrorf(f.at("until"), "must be after from")
	}
	if err := parseFaultKind(f, &spec); err != nil {
		return err
	}
	s.faults = append(s.faults, spec)
	return nil
}

// parseFaultKind reads the one key of f that names the fault's kind.
func parseFaultKind(f object, spec *faultSpec) error {
	found := -1
	for k, name := range faultKinds {
		if f.has(name) {
			if found >= 0 {
				return lb.ConfigErrorf(f.at(name), "a fault has one kind; %s is given too", faultKinds[found])
			}
			found = k
		}
	}
	if found < 0 {
		return lb.ConfigErrorf(f.path, "want one of %s", strings.Join(faultKinds, ", "))
	}
	spec.kind = faultKind(found)
	name := faultKinds[found]
	if spec.kind == faultWeight {
		var w int64
		err := f.integer(name, &w, 1, math.MaxUint32)
		spec.weight = uint32(w)
		return err
	}
	k, err := parseObject(f.raw(name), f.at(name))
	if err != nil {
		return err
	}
	switch spec.kind {
	case faultSlower:
		if err := k.known("factor", "latency"); err != nil {
			return err
		}
		if k.has("factor") == k.has("latency") {
			return lb.ConfigErrorf(k.path, "want exactly one of factor and latency")
		}
		err = firstErr(
			func() error { return k.float("factor", &spec.factor, 0, 1e6) },
			func() error { return k.duration("latency", &spec.latency, 0, maxServiceTime) },
		)
	case faultErrors:
		if err := k.known("rate"); err != nil {
			return err
		}
		if !k.has("rate") {
			return lb.ConfigErrorf(k.at("rate"), "required")
		}
		err = k.float("rate", &spec.rate, 0, 1)
	case faultRefuse, faultRemoved, faultUnhealthy:
		err = k.known()
	case faultStop:
		spec.factor = 1
		err = firstErr(
			func() error { return k.known("warmup", "warmupFactor") },
			func() error { return k.duration("warmup", &spec.warmup, 0, maxScenarioT) },
			func() error { return k.float("warmupFactor", &spec.factor, 1, 1e6) },
		)
	}
	return err
}

// defaultMinConnectTimeout is a client's least connect timeout without
// minConnectTimeout: conn's DefaultMinConnectTimeout, 20 s.
const defaultMinConnectTimeout = 20 * time.Second

// parseBackoff reads a client's "backoff": {"baseDelay", "multiplier",
// "jitter", "maxDelay"}, each defaulting to conn's schedule
// (lb/backoff.ChannelDefault) as conn's WithBackoff does.
func parseBackoff(c object, b *backoff.Config) error {
	if !c.has("backoff") {
		return nil
	}
	k, err := parseObject(c.raw("backoff"), c.at("backoff"))
	if err != nil {
		return err
	}
	err = firstErr(
		func() error { return k.known("baseDelay", "multiplier", "jitter", "maxDelay") },
		func() error { return k.duration("baseDelay", &b.BaseDelay, time.Millisecond, maxScenarioT) },
		func() error { return k.float("multiplier", &b.Multiplier, 1, 1e3) },
		func() error { return k.float("jitter", &b.Jitter, 0, 1) },
		func() error { return k.duration("maxDelay", &b.MaxDelay, time.Millisecond, maxScenarioT) },
	)
	if err != nil {
		return err
	}
	if b.MaxDelay < b.BaseDelay {
		return lb.ConfigErrorf(k.at("maxDelay"), "must be at least baseDelay (%v)", b.BaseDelay)
	}
	return nil
}

// parseHealthCheck reads a client's "healthCheck": {"interval",
// "timeout", "unhealthyThreshold", "healthyThreshold", "jitter"}, with
// conn's defaults (10 s, 2 s, 3, 2, 0.1). Without it, no checks run.
// parseKeys reads a client's "keys": {"count": n, "zipf": s}: n keys (2
// to 10^9), drawn by a Zipf law of exponent s (above 1, at most 10).
func parseKeys(c object, k *keySpec) error {
	if !c.has("keys") {
		return nil
	}
	o, err := parseObject(c.raw("keys"), c.at("keys"))
	if err != nil {
		return err
	}
	k.zipf = 1.1
	err = firstErr(
		func() error { return o.known("count", "zipf") },
		func() error { return o.integer("count", &k.count, 2, 1e9) },
		func() error { return o.float("zipf", &k.zipf, 1, 10) },
	)
	if err == nil && k.zipf <= 1 {
		err = lb.ConfigErrorf(o.at("zipf"), "must be above 1, got %v", k.zipf)
	}
	if err == nil && k.count == 0 {
		err = lb.ConfigErrorf(o.at("count"), "required")
	}
	return err
}

func parseHealthCheck(c object, h *connstate.HealthSettings) error {
	if !c.has("healthCheck") {
		return nil
	}
	k, err := parseObject(c.raw("healthCheck"), c.at("healthCheck"))
	if err != nil {
		return err
	}
	*h = connstate.HealthSettings{Interval: 10 * time.Second, Timeout: 2 * time.Second,
		UnhealthyThreshold: 3, HealthyThreshold: 2, Jitter: 0.1}
	var unhealthy, healthy = int64(h.UnhealthyThreshold), int64(h.HealthyThreshold)
	err = firstErr(
		func() error {
			return k.known("interval", "timeout", "unhealthyThreshold", "healthyThreshold", "jitter")
		},
		func() error { return k.duration("interval", &h.Interval, time.Millisecond, maxScenarioT) },
		func() error { return k.duration("timeout", &h.Timeout, time.Millisecond, maxScenarioT) },
		func() error { return k.integer("unhealthyThreshold", &unhealthy, 1, 1000) },
		func() error { return k.integer("healthyThreshold", &healthy, 1, 1000) },
		func() error { return k.float("jitter", &h.Jitter, 0, 1) },
	)
	h.UnhealthyThreshold, h.HealthyThreshold = int(unhealthy), int(healthy)
	return err
}
