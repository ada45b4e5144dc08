package sim

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// distKind names a service-time distribution.
type distKind uint8

const (
	distConstant distKind = iota
	distUniform
	distNormal
	distLognormal
	distExponential
	distHistogram
)

// maxServiceTime bounds every service-time parameter: one hour.
const maxServiceTime = time.Hour

// dist is a service-time distribution. Parameters are in nanoseconds.
type dist struct {
	kind distKind
	// constant: a; uniform: [a, b]; normal: mean a, stddev b, truncated
	// at 0; lognormal: median a, sigma b; exponential: mean a.
	a, b float64
	// histogram: bucket upper bounds and cumulative weights, normalised
	// to end at 1; a value is uniform within its bucket.
	uppers, cum []float64
}

// sample draws one service time from r.
func (d *dist) sample(r *rand.Rand) time.Duration {
	var v float64
	switch d.kind {
	case distConstant:
		v = d.a
	case distUniform:
		v = d.a + r.Float64()*(d.b-d.a)
	case distNormal:
		v = d.a + d.b*r.NormFloat64()
		for i := 0; v < 0 && i < 64; i++ { // truncation: draw again
			v = d.a + d.b*r.NormFloat64()
		}
		v = max(v, 0)
	case distLognormal:
		v = d.a * math.Exp(d.b*r.NormFloat64())
	case distExponential:
		v = d.a * r.ExpFloat64()
	case distHistogram:
		u := r.Float64()
		i, _ := slices.BinarySearch(d.cum, u)
		i = min(i, len(d.cum)-1)
		lo := 0.0
		if i > 0 {
			lo = d.uppers[i-1]
		}
		v = lo + r.Float64()*(d.uppers[i]-lo)
	}
	return time.Duration(min(v, float64(maxServiceTime)))
}

// mean returns the distribution's mean in nanoseconds.
func (d *dist) mean() float64 {
	switch d.kind {
	case distNormal: // truncated at 0: mu + sigma·phi(alpha)/(1-Phi(alpha))
		if d.b == 0 {
			return d.a
		}
		alpha := -d.a / d.b
		phi := math.Exp(-alpha*alpha/2) / math.Sqrt(2*math.Pi)
		return d.a + d.b*phi/(0.5*math.Erfc(alpha/math.Sqrt2))
	case distUniform:
		return (d.a + d.b) / 2
	case distLognormal:
		return d.a * math.Exp(d.b*d.b/2)
	case distHistogram:
		m, lo, prev := 0.0, 0.0, 0.0
		for i, u := range d.uppers {
			m += (d.cum[i] - prev) * (lo + u) / 2
			lo, prev = u, d.cum[i]
		}
		return m
	}
	return d.a // constant, exponential
}

// parseDist parses a distribution object with exactly one of the keys
// constant, uniform, normal, lognormal, exponential, histogram.
func parseDist(raw json.RawMessage, path string) (dist, error) {
	o, err := parseObject(raw, path)
	if err != nil {
		return dist{}, err
	}
	o.o.Raw(distKinds...)
	if u := o.o.Unknown(); len(u) > 0 {
		return dist{}, lb.ConfigErrorf(o.at(u[0]), "unknown distribution (want one of %s)", strings.Join(distKinds, ", "))
	}
	var present []string
	for _, k := range distKinds {
		if o.has(k) {
			present = append(present, k)
		}
	}
	if len(present) != 1 {
		return dist{}, lb.ConfigErrorf(path, "want exactly one of %s; got %d", strings.Join(distKinds, ", "), len(present))
	}
	name := present[0]
	at := o.at(name)
	var d dist
	switch name {
	case "constant":
		d.kind = distConstant
		var v time.Duration
		if err := o.duration(name, &v, 0, maxServiceTime); err != nil {
			return dist{}, err
		}
		d.a = float64(v)
	case "exponential":
		d.kind = distExponential
		err = parseParams(o.raw(name), at, durParam{"mean", &d.a, true})
	case "uniform":
		d.kind = distUniform
		if err = parseParams(o.raw(name), at, durParam{"min", &d.a, false}, durParam{"max", &d.b, true}); err == nil && d.b < d.a {
			err = lb.ConfigErrorf(at+".max", "must be at least min")
		}
	case "normal":
		d.kind = distNormal
		err = parseParams(o.raw(name), at, durParam{"mean", &d.a, true}, durParam{"stddev", &d.b, false})
	case "lognormal":
		d.kind = distLognormal
		err = parseLognormal(o.raw(name), at, &d)
	case "histogram":
		d.kind = distHistogram
		err = parseHistogram(o, name, &d)
	}
	return d, err
}

// distKinds are the keys that name a distribution.
var distKinds = []string{"constant", "uniform", "normal", "lognormal", "exponential", "histogram"}

// durParam is one duration parameter of a distribution.
type durParam struct {
	name     string
	dst      *float64
	positive bool
}

// parseParams reads an object of required duration parameters.
func parseParams(raw json.RawMessage, path string, params ...durParam) error {
	o, err := parseObject(raw, path)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range params {
		names = append(names, p.name)
	}
	if err := o.known(names...); err != nil {
		return err
	}
	for _, p := range params {
		if !o.has(p.name) {
			return lb.ConfigErrorf(o.at(p.name), "required")
		}
		var v time.Duration
		if err := o.duration(p.name, &v, 0, maxServiceTime); err != nil {
			return err
		}
		if p.positive && v == 0 {
			return lb.ConfigErrorf(o.at(p.name), "must be positive")
		}
		*p.dst = float64(v)
	}
	return nil
}

// parseLognormal reads {"median": duration, "sigma": number}.
func parseLognormal(raw json.RawMessage, path string, d *dist) error {
	o, err := parseObject(raw, path)
	if err != nil {
		return err
	}
	if err := o.known("median", "sigma"); err != nil {
		return err
	}
	if !o.has("median") || !o.has("sigma") {
		return lb.ConfigErrorf(path, "median and sigma are required")
	}
	var median time.Duration
	if err := o.duration("median", &median, 1, maxServiceTime); err != nil {
		return err
	}
	d.a = float64(median)
	return o.float("sigma", &d.b, 0, 5)
}

// parseHistogram reads [{"le": duration, "weight": number}, ...]: buckets
// with increasing upper bounds, weights not negative, not all zero.
func parseHistogram(o object, name string, d *dist) error {
	total := 0.0
	err := o.each(name, "want at least one bucket", []string{"le", "weight"}, func(b object) error {
		var le time.Duration
		var w float64
		if !b.has("le") || !b.has("weight") {
			return lb.ConfigErrorf(b.path, "le and weight are required")
		}
		if err := b.duration("le", &le, 0, maxServiceTime); err != nil {
			return err
		}
		if err := b.float("weight", &w, 0, math.MaxFloat64); err != nil {
			return err
		}
		if n := len(d.uppers); n > 0 && float64(le) <= d.uppers[n-1] {
			return lb.ConfigErrorf(b.at("le"), "must be greater than the previous bucket's")
		}
		total += w
		d.uppers = append(d.uppers, float64(le))
		d.cum = append(d.cum, total)
		return nil
	})
	if err != nil {
		return err
	}
	if total <= 0 || math.IsInf(total, 0) {
		return lb.ConfigErrorf(o.at(name), "weights must sum to a positive finite number")
	}
	for i := range d.cum {
		d.cum[i] /= total
	}
	return nil
}
