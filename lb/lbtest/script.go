package lbtest

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

// A script is a child policy for testing parent policies: the test sets
// its state directly. Register its builder ([NewScriptBuilder]) under a
// name, name it in the parent's config with {"id": "..."}, and find the
// balancers the parent built through a [Scripts] passed down the tree in
// the resolver state's attributes. Its config:
//
//   - "id" (string): the name the test finds the balancer by;
//   - "inline" (a state name, such as "READY"): publish that state from
//     inside every UpdateClientConnState, as some policies do;
//   - "subConn" (bool): on the first update, create and connect one SubConn
//     at address "script:<id>", which READY pickers return.
//
// A script publishes nothing by itself otherwise.

// Scripts records the script balancers built for one test. Its methods are
// safe for concurrent use.
type Scripts struct {
	mu   sync.Mutex
	live map[string]*Script // by id, the newest balancer
	all  []*Script
}

// scriptsKey carries a test's Scripts down the tree.
var scriptsKey = attributes.NewKey[*Scripts]("lbkit/lbtest.scripts")

// NewScripts returns an empty record.
func NewScripts() *Scripts { return &Scripts{live: make(map[string]*Script)} }

// Attributes returns attrs with s attached. Put them in the resolver state
// given to the parent policy, which passes them on to its children; the
// scripts built there register with s.
func (s *Scripts) Attributes(attrs attributes.Attributes) attributes.Attributes {
	return attributes.With(attrs, scriptsKey, s)
}

// Get returns the newest script balancer with id, or nil.
func (s *Scripts) Get(id string) *Script {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id]
}

// All returns every script balancer built, in order.
func (s *Scripts) All() []*Script {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Script(nil), s.all...)
}

// NewScriptBuilder returns the builder of the script policy, under name.
func NewScriptBuilder(name string) lb.Builder { return scriptBuilder{name: name} }

type scriptBuilder struct{ name string }

func (b scriptBuilder) Name() string { return b.name }

func (scriptBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &Script{cc: cc}
}

type scriptConfig struct {
	id      string
	inline  *lb.ConnectivityState
	subConn bool
}

func (scriptBuilder) ParseConfig(raw json.RawMessage) (lb.Config, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return nil, err
	}
	cfg := &scriptConfig{}
	if err := obj.Decode(&cfg.id, "id"); err != nil {
		return nil, err
	}
	if err := obj.Decode(&cfg.subConn, "subConn"); err != nil {
		return nil, err
	}
	var inline string
	if err := obj.Decode(&inline, "inline"); err != nil {
		return nil, err
	}
	if inline != "" {
		for s := lb.Idle; s < lb.Shutdown; s++ {
			if s.String() == inline {
				cfg.inline = &s
			}
		}
		if cfg.inline == nil {
			return nil, lb.ConfigErrorf("inline", "unknown state %q", inline)
		}
	}
	return cfg, nil
}

// Script is one balancer of the script policy. Its state is written inside
// the tree's serialized calls and read by the test after the harness has
// waited for the serializer.
type Script struct {
	cc           lb.ClientConn
	id           string
	sc           lb.SubConn
	updates      []lb.ClientConnState
	resolverErrs []error
	exitIdles    int
	closed       bool
	onExitIdle   func()
}

// UpdateClientConnState records the update; the first one registers the
// script with the test's Scripts and creates its SubConn if configured.
func (s *Script) UpdateClientConnState(st lb.ClientConnState) error {
	cfg, ok := st.BalancerConfig.(*scriptConfig)
	if !ok {
		return fmt.Errorf("lbtest: script: got config %T", st.BalancerConfig)
	}
	if s.updates == nil {
		s.id = cfg.id
		if cfg.subConn {
			sc, err := s.cc.NewSubConn([]resolver.Address{{Addr: "script:" + s.id}}, lb.NewSubConnOptions{
				StateListener: func(lb.SubConnState) {},
			})
			if err != nil {
				return err
			}
			sc.Connect()
			s.sc = sc
		}
		if rec, ok := attributes.Get(st.ResolverState.Attributes, scriptsKey); ok {
			rec.mu.Lock()
			rec.live[s.id] = s
			rec.all = append(rec.all, s)
			rec.mu.Unlock()
		}
	}
	s.updates = append(s.updates, st)
	if cfg.inline != nil {
		s.Report(*cfg.inline, "inline:"+s.id)
	}
	return nil
}

// Report publishes state with a new picker called token, and returns it.
// READY pickers return the script's SubConn (or queue, without one);
// TRANSIENT_FAILURE ones fail with "<id>: <token>"; others queue. It must
// run inside the tree's serialized calls (Harness.Do).
func (s *Script) Report(state lb.ConnectivityState, token string) *ScriptPicker {
	p := &ScriptPicker{Token: token, err: lb.ErrNoSubConnAvailable}
	switch {
	case state == lb.Ready && s.sc != nil:
		p.result, p.err = lb.PickResult{SubConn: s.sc}, nil
	case state == lb.TransientFailure:
		p.err = lb.TransientFailureError(fmt.Errorf("%s: %s", s.id, token))
	}
	s.cc.UpdateState(lb.State{ConnectivityState: state, Picker: p})
	return p
}

// ResolverError records err.
func (s *Script) ResolverError(err error) { s.resolverErrs = append(s.resolverErrs, err) }

// ExitIdle counts the call and runs the hook set with SetOnExitIdle.
func (s *Script) ExitIdle() {
	s.exitIdles++
	if s.onExitIdle != nil {
		s.onExitIdle()
	}
}

// Close records the call and shuts the SubConn down.
func (s *Script) Close() {
	s.closed = true
	if s.sc != nil {
		s.sc.Shutdown()
	}
}

// ID returns the id of the script's config.
func (s *Script) ID() string { return s.id }

// ClientConn returns the ClientConn the parent gave the script.
func (s *Script) ClientConn() lb.ClientConn { return s.cc }

// SubConn returns the script's SubConn, or nil without "subConn".
func (s *Script) SubConn() lb.SubConn { return s.sc }

// Updates returns every update received, in order.
func (s *Script) Updates() []lb.ClientConnState { return s.updates }

// ResolverErrors returns every resolver error received, in order.
func (s *Script) ResolverErrors() []error { return s.resolverErrs }

// ExitIdles returns how many times ExitIdle was called.
func (s *Script) ExitIdles() int { return s.exitIdles }

// Closed reports whether Close was called.
func (s *Script) Closed() bool { return s.closed }

// SetOnExitIdle makes ExitIdle run f (inside the serialized calls), for
// example to report a state. Call it inside Harness.Do.
func (s *Script) SetOnExitIdle(f func()) { s.onExitIdle = f }

// ScriptPicker is a script's picker; tests tell them apart by Token.
type ScriptPicker struct {
	// Token names the picker.
	Token  string
	result lb.PickResult
	err    error
}

// Pick returns the picker's result or error.
func (p *ScriptPicker) Pick(lb.PickInfo) (lb.PickResult, error) { return p.result, p.err }

// Failure returns the error every Pick fails with (nil for a READY picker
// with a SubConn), making a ScriptPicker an [lb.FailingPicker].
func (p *ScriptPicker) Failure() error { return p.err }

// String returns "ScriptPicker(token)".
func (p *ScriptPicker) String() string { return fmt.Sprintf("ScriptPicker(%s)", p.Token) }
