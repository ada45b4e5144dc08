package conn

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// resolverCC is the resolver.ClientConn of one resolver instance. Updates
// hop onto the serializer; those from an instance the channel has since
// replaced (after idleness) are ignored.
//
// Updates coalesce: the resolver's newest State waits in one slot, with
// at most one hop queued, so a resolver that publishes faster than the
// balancer applies costs bounded memory and Close never waits behind a
// backlog. Since every State is complete, only superseded ones are skipped.
// An error reported after the newest State is applied after it; a State
// published after an error supersedes it.
type resolverCC struct {
	c *Channel

	mu        sync.Mutex
	state     *resolver.State // newest State not yet applied
	err       error           // newest error not yet applied, newer than state
	scheduled bool            // a hop to apply them is queued

	// degraded is the Degraded reason of the State the balancer tree
	// applied last, for the snapshot. Owned by the serializer.
	degraded error
}

// UpdateState records s as the newest State and returns at once. It returns
// ErrClosed once the channel is closed, else nil: the channel itself
// re-resolves with backoff when the balancer rejects an update, so a
// resolver need not.
func (r *resolverCC) UpdateState(s resolver.State) error {
	r.mu.Lock()
	r.state, r.err = &s, nil
	return r.scheduleLocked()
}

// ReportError records err to be passed to the balancer after any State
// published before it.
func (r *resolverCC) ReportError(err error) {
	r.mu.Lock()
	r.err = err
	_ = r.scheduleLocked()
}

// scheduleLocked queues the hop that applies the pending update, unless one
// is queued, and unlocks r.mu.
func (r *resolverCC) scheduleLocked() error {
	queue := !r.scheduled
	r.scheduled = true
	r.mu.Unlock()
	if r.c.shut.Load() || (queue && !r.c.ser.Schedule(r.apply)) {
		return ErrClosed
	}
	return nil
}

// apply hands the pending State and error to the channel. Runs serialized.
func (r *resolverCC) apply() {
	r.mu.Lock()
	s, err := r.state, r.err
	r.state, r.err, r.scheduled = nil, nil, false
	r.mu.Unlock()
	if s != nil {
		r.c.onResolverState(r, *s)
	}
	if err != nil {
		r.c.onResolverError(r, err)
	}
}

// serviceConfig is a parsed service config.
type serviceConfig struct {
	policy *lb.ParsedPolicy // nil: the default policy
	// healthService is healthCheckConfig.serviceName; nil when unset,
	// which leaves health checking off (gRFC A17).
	healthService *string
	// unknown lists the JSON paths of the fields that gRPC's service
	// config does not have, in document order; they are ignored.
	unknown []string
	// raw is the config's JSON, compacted, for the snapshot.
	raw json.RawMessage
}

// serviceConfigFields are the fields of gRPC's service config: the first
// three are used, the others (methodConfig, retryThrottling) are known
// and ignored.
var serviceConfigFields = []string{"loadBalancingConfig", "loadBalancingPolicy", "healthCheckConfig", "methodConfig", "retryThrottling"}

// parseServiceConfig parses {"loadBalancingConfig": [...]}, or the older
// {"loadBalancingPolicy": "name"}, and {"healthCheckConfig": {"serviceName":
// "..."}}. Other fields of gRPC's service config are ignored; a field it
// does not have, or that the chosen policy's config does not have (as far
// as the policy can say: [lb.ParseConfig]), is listed in unknown,
// or, when strict, an error naming its path.
func parseServiceConfig(raw json.RawMessage, reg *lb.Registry, strict bool) (*serviceConfig, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return nil, fmt.Errorf("service config: %w", err)
	}
	sc := &serviceConfig{raw: compactJSON(raw)}
	if sc.healthService, err = parseHealthCheckConfig(obj); err != nil {
		return nil, fmt.Errorf("service config: %w", err)
	}
	if sc.policy, err = parsePolicy(obj, reg); err != nil {
		return nil, fmt.Errorf("service config: %w", err)
	}
	obj.Raw(serviceConfigFields...) // known, whether used or not
	sc.unknown = obj.Unknown()
	if sc.policy != nil {
		sc.unknown = append(sc.unknown, sc.policy.Unknown...)
	}
	if strict && len(sc.unknown) > 0 {
		return nil, fmt.Errorf("service config: %w", lb.ConfigErrorf(sc.unknown[0], "unknown field (refused by WithStrictConfig)"))
	}
	return sc, nil
}

// parseHealthCheckConfig returns healthCheckConfig.serviceName, or nil when
// either is unset or null.
func parseHealthCheckConfig(obj lb.ConfigObject) (*string, error) {
	raw, _, ok := obj.Raw("healthCheckConfig")
	if !ok {
		return nil, nil
	}
	hc, err := obj.ObjectAt("healthCheckConfig", raw)
	if err != nil {
		return nil, err
	}
	if v, _, ok := hc.Raw("serviceName"); !ok || strings.TrimSpace(string(v)) == "null" {
		return nil, nil
	}
	var name string
	if err := hc.Decode(&name, "serviceName"); err != nil {
		return nil, lb.PrefixConfigError("healthCheckConfig", err)
	}
	return &name, nil
}

// parsePolicy returns the policy obj names, or nil for the default.
func parsePolicy(obj lb.ConfigObject, reg *lb.Registry) (*lb.ParsedPolicy, error) {
	if list, _, ok := obj.Raw("loadBalancingConfig"); ok {
		return reg.ParseLoadBalancingConfig(list)
	}
	var name string
	if err := obj.Decode(&name, "loadBalancingPolicy"); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, nil
	}
	b := reg.Get(name)
	if b == nil {
		return nil, fmt.Errorf("loadBalancingPolicy: no registered policy %q (registered: %s)", name, strings.Join(reg.Names(), ", "))
	}
	p, err := withDefaultConfig(name, b)
	if err != nil {
		return nil, fmt.Errorf("loadBalancingPolicy %q: %w", name, err)
	}
	return p, nil
}

// withDefaultConfig returns the policy b, registered as name, with the
// config it parses from none: its defaults.
func withDefaultConfig(name string, b lb.Builder) (*lb.ParsedPolicy, error) {
	cfg, _, err := lb.ParseConfig(b, nil)
	if err != nil {
		return nil, err
	}
	return &lb.ParsedPolicy{Name: name, Builder: b, Config: cfg}, nil
}

// DefaultPolicy is the policy used when no service config names one.
const DefaultPolicy = "pick_first"

var errNoDefaultPolicy = errors.New("no policy registered as " + DefaultPolicy)

// policyFor returns the policy the channel should run now: the resolver's
// service config, else the last valid one, else the default service
// config, else pick_first.
func (c *Channel) policyFor() (*lb.ParsedPolicy, error) {
	for _, sc := range []*serviceConfig{c.lastSC, c.defSC} {
		if sc != nil && sc.policy != nil {
			return sc.policy, nil
		}
	}
	b := c.cfg.registry.Get(DefaultPolicy)
	if b == nil {
		return nil, errNoDefaultPolicy
	}
	p, err := withDefaultConfig(DefaultPolicy, b)
	if err != nil {
		return nil, fmt.Errorf("default policy %s: %w", DefaultPolicy, err)
	}
	return p, nil
}

// onResolverState applies a resolver update. Runs serialized.
func (c *Channel) onResolverState(r *resolverCC, s resolver.State) {
	if c.closed || r != c.resCC {
		return
	}
	c.resolverErr = nil
	if s.ServiceConfig != nil {
		sc, err := parseServiceConfig(s.ServiceConfig, c.cfg.registry, c.cfg.strictConfig)
		switch {
		case err != nil && c.lastSC == nil && c.current == nil:
			c.rejectedSC = lb.NewTimedError(err, c.clock.Now())
			c.logger.Warn("invalid service config and no valid one yet", "error", err)
			c.publishFailure(fmt.Errorf("conn: %w", err))
			c.reResolveWithBackoff()
			return
		case err != nil:
			c.rejectedSC = lb.NewTimedError(err, c.clock.Now())
			c.logger.Warn("invalid service config; keeping the last valid one", "error", err)
		default:
			c.lastSC, c.rejectedSC = sc, nil
			c.warnUnknown(s.ServiceConfig, sc)
		}
		c.applyHealth()
	}
	p, err := c.policyFor()
	if err != nil {
		c.publishFailure(fmt.Errorf("conn: %w", err))
		return
	}
	w := c.switchTo(p)
	r.degraded = s.Degraded
	err = w.b.UpdateClientConnState(lb.ClientConnState{ResolverState: s, BalancerConfig: p.Config})
	if errors.Is(err, lb.ErrBadResolverState) {
		c.reResolveWithBackoff()
		return
	}
	if err != nil {
		c.logger.Warn("balancer rejected the resolver update", "policy", p.Name, "error", err)
	}
	c.resolveRetries = 0
	if c.resolveTimer != nil {
		c.resolveTimer.Stop()
		c.resolveTimer = nil
	}
}

// warnUnknown logs the unknown fields of a service config at WARN, once
// per distinct config: a resolver that publishes the same config again
// does not repeat the warning. Runs serialized.
func (c *Channel) warnUnknown(raw json.RawMessage, sc *serviceConfig) {
	if len(sc.unknown) == 0 || string(raw) == c.warnedSC {
		return
	}
	c.warnedSC = string(raw)
	c.logger.Warn("service config: unknown fields ignored (WithStrictConfig refuses them)", "fields", sc.unknown)
}

// onResolverError passes a resolver error to the balancer, or fails the
// channel if there is no balancer yet. Runs serialized.
func (c *Channel) onResolverError(r *resolverCC, err error) {
	if c.closed || r != c.resCC {
		return
	}
	c.resolverErr = lb.NewTimedError(err, c.clock.Now())
	c.logger.Warn("resolver error", "error", err)
	if w := c.latest(); w != nil {
		w.b.ResolverError(err)
		return
	}
	c.publishFailure(fmt.Errorf("conn: resolving %q: %w", c.target, err))
}

// reResolveWithBackoff asks the resolver again after the connection
// backoff's next delay, unless a request is already pending.
func (c *Channel) reResolveWithBackoff() {
	if c.resolveTimer != nil {
		return
	}
	d := c.cfg.backoff.Delay(c.resolveRetries, c.rand)
	c.resolveRetries++
	c.resolveTimer = c.ser.AfterFunc(d, func() {
		c.resolveTimer = nil
		if c.res != nil {
			c.res.ResolveNow()
		}
	})
}

// resolveNow passes a balancer's re-resolution request to the resolver.
func (c *Channel) resolveNow() {
	if c.res != nil {
		c.res.ResolveNow()
	}
}
