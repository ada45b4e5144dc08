package lbtest

import (
	"encoding/json"
	"fmt"
	"slices"
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
//     at address "script:<id>", which READY pickers return;
//   - "subConns" (bool): on the first update, create and connect one SubConn
//     for each of its addresses instead; READY pickers return the first.
//
// A script publishes nothing by itself otherwise. It records every state
// its SubConns' listeners hear ([Script.Heard]).

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

// Builder returns the script policy's builder under name, whose balancers
// are recorded in s as soon as they are built ([Scripts.All]), and by id at
// their first update ([Scripts.Get]): for tests that build children
// directly, with no resolver state to carry s down the tree.
func (s *Scripts) Builder(name string) lb.Builder { return scriptBuilder{name: name, rec: s} }

// add records sc in All, once.
func (s *Scripts) add(sc *Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.all, sc) {
		s.all = append(s.all, sc)
	}
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

type scriptBuilder struct {
	name string
	rec  *Scripts // nil: found in the first update's attributes
}

func (b scriptBuilder) Name() string { return b.name }

func (b scriptBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	s := &Script{cc: cc, sched: opts.Scheduler, rec: b.rec, heard: make(map[lb.SubConn][]lb.ConnectivityState)}
	if b.rec != nil {
		b.rec.add(s)
	}
	return s
}

type scriptConfig struct {
	id       string
	inline   *lb.ConnectivityState
	subConn  bool
	subConns bool
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
	if err := obj.Decode(&cfg.subConns, "subConns"); err != nil {
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
	sched        lb.Scheduler
	rec          *Scripts
	id           string
	scs          []lb.SubConn
	heard        map[lb.SubConn][]lb.ConnectivityState
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
		if err := s.connect(cfg, st.ResolverState.Addresses); err != nil {
			return err
		}
		if rec, ok := attributes.Get(st.ResolverState.Attributes, scriptsKey); ok {
			s.rec = rec
		}
		if s.rec != nil {
			s.rec.add(s)
			s.rec.mu.Lock()
			s.rec.live[s.id] = s
			s.rec.mu.Unlock()
		}
	}
	s.updates = append(s.updates, st)
	if cfg.inline != nil {
		s.Report(*cfg.inline, "inline:"+s.id)
	}
	return nil
}

// connect creates and connects the SubConns cfg asks for.
func (s *Script) connect(cfg *scriptConfig, addrs []resolver.Address) error {
	var list [][]resolver.Address
	switch {
	case cfg.subConns:
		for _, a := range addrs {
			list = append(list, []resolver.Address{a})
		}
	case cfg.subConn:
		list = [][]resolver.Address{{{Addr: "script:" + s.id}}}
	}
	for _, a := range list {
		var sc lb.SubConn
		sc, err := s.cc.NewSubConn(a, lb.NewSubConnOptions{
			StateListener: func(st lb.SubConnState) { s.heard[sc] = append(s.heard[sc], st.ConnectivityState) },
		})
		if err != nil {
			return err
		}
		sc.Connect()
		s.scs = append(s.scs, sc)
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
	case state == lb.Ready && len(s.scs) > 0:
		p.result, p.err = lb.PickResult{SubConn: s.scs[0]}, nil
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

// Close records the call and shuts the SubConns down.
func (s *Script) Close() {
	s.closed = true
	for _, sc := range s.scs {
		sc.Shutdown()
	}
}

// ID returns the id of the script's config.
func (s *Script) ID() string { return s.id }

// ClientConn returns the ClientConn the parent gave the script.
func (s *Script) ClientConn() lb.ClientConn { return s.cc }

// Scheduler returns the Scheduler the parent built the script with
// ([lb.BuildOptions]), to run work as the child would (a timer, a hop).
func (s *Script) Scheduler() lb.Scheduler { return s.sched }

// SubConn returns the script's first SubConn, or nil without "subConn" or
// "subConns".
func (s *Script) SubConn() lb.SubConn {
	if len(s.scs) == 0 {
		return nil
	}
	return s.scs[0]
}

// SubConns returns the script's SubConns, in creation order.
func (s *Script) SubConns() []lb.SubConn { return s.scs }

// Heard returns the states the listener of sc, one of the script's
// SubConns, has heard, in order.
func (s *Script) Heard(sc lb.SubConn) []lb.ConnectivityState { return s.heard[sc] }

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
