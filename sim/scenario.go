package sim

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/connstate"
)

// Limits that keep a run's memory bounded; a scenario beyond one is an
// error that says which.
const (
	maxClients   = 10_000
	maxBackends  = 100_000
	maxSubConns  = 2_000_000  // clients × backends
	maxCells     = 20_000_000 // seconds of series × backends × policies
	maxInFlight  = 1_000_000  // requests alive at once (else the run stops)
	maxRequests  = 1 << 40
	maxScenarioT = 24 * time.Hour
)

// Scenario is a parsed scenario file: the fleet, its faults, the clients
// and their traffic, and the policies to compare. Make one with
// [ParseScenario]; run it with [Run].
type Scenario struct {
	name, description string
	seed              uint64
	duration          time.Duration // arrivals stop then; 0: each client's request count ends it
	warmup            time.Duration // requests arriving before are not measured
	drain             time.Duration // the longest wait for outstanding requests after arrivals end
	policies          []policySpec
	clients           []clientSpec
	backends          []backendSpec
	faults            []faultSpec
	// atOneInstant is how many events in a row may run at one instant
	// before the run stops as one whose time cannot advance:
	// maxAtOneInstant (tests lower it).
	atOneInstant int
}

// Name returns the scenario's name.
func (s *Scenario) Name() string { return s.name }

// policySpec is one policy to run the scenario under.
type policySpec struct {
	name   string
	parsed *lb.ParsedPolicy
}

// clientSpec is one client (one policy tree) and its traffic.
type clientSpec struct {
	name        string
	rates       []rateStep // open loop: Poisson arrivals at these rates
	concurrency int        // closed loop: requests kept in flight
	requests    int64      // the most requests it issues; 0: no limit
	timeout     time.Duration
	retries     int
	// The connections' backoff, least connect timeout and health checks
	// (Interval 0: none), as conn's options set them.
	backoff           backoff.Config
	minConnectTimeout time.Duration
	health            connstate.HealthSettings
	// keys, when count > 0, gives each request a key drawn from count
	// keys by a Zipf law of exponent zipf (> 1), hashed into
	// lb.PickInfo.Hash.
	keys keySpec
}

// keySpec is a client's key distribution.
type keySpec struct {
	count int64
	zipf  float64
}

// rateStep is an open-loop rate in requests per second from at on.
type rateStep struct {
	at   time.Duration
	rate float64
}

// backendSpec is one backend.
type backendSpec struct {
	name         string
	service      dist
	concurrency  int // requests served at once; 0: unlimited
	connectDelay time.Duration
	rtt          time.Duration // network round trip added to every request, half each way
	loadFactor   float64       // service time × (1 + loadFactor × others in service)
	weight       uint32        // 0: no weight attribute
	hierarchy    []string
	// reportLoad makes every reply carry a load report (lb.DoneInfo.Load),
	// as an ORCA per-request report: the backend's utilization and
	// requests per second over its last whole second.
	reportLoad bool
}

// ParseScenario parses a scenario file (docs/simulation.md describes its
// fields). Every error is an [*lb.ConfigError] naming the JSON path, such as
// `faults[2].backend: no backend named "b12"`; nothing panics.
func ParseScenario(data []byte) (*Scenario, error) {
	o, err := parseObject(data, "")
	if err != nil {
		return nil, err
	}
	s := &Scenario{seed: 1, drain: time.Minute, atOneInstant: maxAtOneInstant}
	var seed int64 = 1
	err = firstErr(
		func() error {
			return o.known("name", "description", "seed", "duration", "warmup", "drain", "policies", "backends", "clients", "faults")
		},
		func() error { return o.str("name", &s.name) },
		func() error { return o.str("description", &s.description) },
		func() error { return o.integer("seed", &seed, 0, math.MaxInt64) },
		func() error { return o.duration("duration", &s.duration, 0, maxScenarioT) },
		func() error { return o.duration("warmup", &s.warmup, 0, maxScenarioT) },
		func() error { return o.duration("drain", &s.drain, 0, maxScenarioT) },
		func() error { return s.parsePolicies(o) },
		func() error { return s.parseBackends(o) },
		func() error { return s.parseClients(o) },
		func() error { return s.parseFaults(o) },
		s.checkBounds,
	)
	if err != nil {
		return nil, err
	}
	s.seed = uint64(seed)
	if s.name == "" {
		return nil, lb.ConfigErrorf("name", "required")
	}
	return s, nil
}

// firstErr runs steps in order and returns the first error.
func firstErr(steps ...func() error) error {
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// parsePolicies reads policies: [{"name": ..., "serviceConfig": {...}}],
// each service config's loadBalancingConfig parsed against lb's default
// registry, as a channel parses it; an unknown field is an error.
func (s *Scenario) parsePolicies(o object) error {
	return o.each("policies", "want at least one policy", []string{"name", "serviceConfig"}, s.parsePolicy)
}

// parsePolicy reads one entry of policies.
func (s *Scenario) parsePolicy(p object) error {
	var spec policySpec
	if err := p.str("name", &spec.name); err != nil {
		return err
	}
	if !p.has("serviceConfig") {
		return lb.ConfigErrorf(p.at("serviceConfig"), "required")
	}
	sc, err := parseObject(p.raw("serviceConfig"), p.at("serviceConfig"))
	if err == nil {
		err = sc.known("loadBalancingConfig")
	}
	if err != nil {
		return err
	}
	if !sc.has("loadBalancingConfig") {
		return lb.ConfigErrorf(sc.at("loadBalancingConfig"), "required")
	}
	spec.parsed, err = lb.DefaultRegistry().ParseLoadBalancingConfig(sc.raw("loadBalancingConfig"))
	if err != nil {
		return lb.PrefixConfigError(sc.path, err)
	}
	if len(spec.parsed.Unknown) > 0 {
		return lb.ConfigErrorf(sc.at(spec.parsed.Unknown[0]), "unknown field")
	}
	if spec.name == "" {
		spec.name = spec.parsed.Name
	}
	for _, q := range s.policies {
		if q.name == spec.name {
			return lb.ConfigErrorf(p.at("name"), "%q is used twice", spec.name)
		}
	}
	s.policies = append(s.policies, spec)
	return nil
}

// expand returns count names: name itself for one, else name0, name1, ...
func expand(name string, count int64) []string {
	if count == 1 {
		return []string{name}
	}
	names := make([]string, count)
	for i := range names {
		names[i] = name + strconv.Itoa(i)
	}
	return names
}

// parseBackends reads backends: [{"name", "count", "service",
// "concurrency", "connectDelay", "rtt", "loadFactor", "weight", "hierarchy",
// "reportLoad"}].
func (s *Scenario) parseBackends(o object) error {
	seen := map[string]bool{}
	return o.each("backends", "want at least one backend",
		[]string{"name", "count", "service", "concurrency", "connectDelay", "rtt", "loadFactor", "weight", "hierarchy", "reportLoad"},
		func(b object) error { return s.parseBackend(b, seen) })
}

// parseBackend reads one entry of backends; seen holds the names so far.
func (s *Scenario) parseBackend(b object, seen map[string]bool) error {
	var spec backendSpec
	var count, conc, weight int64 = 1, 0, 0
	err := firstErr(
		func() error { return b.str("name", &spec.name) },
		func() error { return b.integer("count", &count, 1, maxBackends) },
		func() error { return b.integer("concurrency", &conc, 0, math.MaxInt32) },
		func() error { return b.duration("connectDelay", &spec.connectDelay, 0, maxScenarioT) },
		func() error { return b.duration("rtt", &spec.rtt, 0, maxServiceTime) },
		func() error { return b.float("loadFactor", &spec.loadFactor, 0, 1e3) },
		func() error { return b.integer("weight", &weight, 0, math.MaxUint32) },
		func() error { return b.decode("hierarchy", &spec.hierarchy) },
		func() error { return b.decode("reportLoad", &spec.reportLoad) },
	)
	if err != nil {
		return err
	}
	if spec.name == "" {
		return lb.ConfigErrorf(b.at("name"), "required")
	}
	if !b.has("service") {
		return lb.ConfigErrorf(b.at("service"), "required")
	}
	if spec.service, err = parseDist(b.raw("service"), b.at("service")); err != nil {
		return err
	}
	spec.concurrency, spec.weight = int(conc), uint32(weight)
	if len(s.backends)+int(count) > maxBackends {
		return lb.ConfigErrorf(b.at("count"), "more than %d backends in all", maxBackends)
	}
	for _, n := range expand(spec.name, count) {
		if seen[n] {
			return lb.ConfigErrorf(b.at("name"), "backend %q is named twice", n)
		}
		seen[n] = true
		one := spec
		one.name = n
		s.backends = append(s.backends, one)
	}
	return nil
}

// backendIndex returns the index of the backend named name.
func (s *Scenario) backendIndex(name string) (int, bool) {
	for i, b := range s.backends {
		if b.name == name {
			return i, true
		}
	}
	return 0, false
}

// checkBounds refuses a scenario whose run would not fit the memory
// bounds, or that would never end.
func (s *Scenario) checkBounds() error {
	n := 0
	for _, c := range s.clients {
		n++
		if c.requests == 0 && s.duration == 0 {
			return lb.ConfigErrorf("duration", "required when a client has no request count (else the run never ends)")
		}
	}
	if n*len(s.backends) > maxSubConns {
		return lb.ConfigErrorf("clients", "%d clients × %d backends is more than %d connections", n, len(s.backends), maxSubConns)
	}
	secs := int64(s.duration/time.Second) + 1
	if cells := secs * int64(len(s.backends)) * int64(len(s.policies)); cells > maxCells {
		return lb.ConfigErrorf("duration", "a per-second series of %d s × %d backends × %d policies is more than %d cells", secs, len(s.backends), len(s.policies), maxCells)
	}
	return nil
}

// String describes the scenario in one line.
func (s *Scenario) String() string {
	return fmt.Sprintf("%s: %d backends, %d clients, %d policies", s.name, len(s.backends), len(s.clients), len(s.policies))
}
