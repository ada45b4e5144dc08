package stress

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// applied is the generation of the newest update a balancer has applied,
// and the one applied before it.
type applied struct{ prev, cur int }

// probeBuilder builds "stress_probe": a policy that records the
// generation carried in its config ({"gen": N, "childPolicy": [...]}) when
// an update reaches it, then hands the update to its child, switching
// child whenever the named child policy changes. It lets the churn test
// know which address set the channel's pickers may still reflect. As every
// parent does, it gives each child a scope of its own ([lb.Scope]) and
// closes it with the child, so nothing of a replaced child runs afterwards.
type probeBuilder struct{ latest *atomic.Pointer[applied] }

type probeConfig struct {
	gen   int
	child *lb.ParsedPolicy
}

func (probeBuilder) Name() string { return "stress_probe" }

func (probeBuilder) ParseConfig(raw json.RawMessage) (lb.Config, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return nil, err
	}
	var cfg probeConfig
	if err := obj.Decode(&cfg.gen, "gen"); err != nil {
		return nil, err
	}
	list, _, ok := obj.Raw("childPolicy")
	if !ok {
		return nil, fmt.Errorf("stress_probe: no childPolicy")
	}
	if cfg.child, err = lb.ParsePolicyList(list); err != nil {
		return nil, lb.PrefixConfigError("childPolicy", err)
	}
	return &cfg, nil
}

func (b probeBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return &probe{cc: cc, opts: opts, latest: b.latest}
}

type probe struct {
	cc        lb.ClientConn
	opts      lb.BuildOptions
	latest    *atomic.Pointer[applied]
	child     lb.Balancer
	scope     *lb.Scope // the child's
	childName string
}

func (p *probe) UpdateClientConnState(s lb.ClientConnState) error {
	cfg := s.BalancerConfig.(*probeConfig)
	old := p.latest.Load()
	p.latest.Store(&applied{prev: old.cur, cur: cfg.gen})
	if p.child == nil || p.childName != cfg.child.Name {
		p.closeChild()
		p.scope = lb.NewScope(p.opts.Scheduler)
		opts := p.opts
		opts.Scheduler = p.scope
		p.child = cfg.child.Builder.Build(p.scope.ClientConn(p.cc), opts)
		p.childName = cfg.child.Name
	}
	return p.child.UpdateClientConnState(lb.ClientConnState{ResolverState: s.ResolverState, BalancerConfig: cfg.child.Config})
}

func (p *probe) ResolverError(err error) {
	if p.child != nil {
		p.child.ResolverError(err)
	}
}

func (p *probe) ExitIdle() {
	if p.child != nil {
		p.child.ExitIdle()
	}
}

func (p *probe) Close() { p.closeChild() }

// closeChild closes the child's scope, then the child, as a parent does.
func (p *probe) closeChild() {
	if p.child != nil {
		p.scope.Close()
		p.child.Close()
	}
}
