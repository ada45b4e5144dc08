package weightedtarget

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

// scriptName is a test-only child policy whose state the test sets
// directly. On its first update it creates one SubConn (address
// "script:<id>"), which its READY pickers return; it publishes nothing by
// itself, except, when its config says "inline", that state from inside
// every UpdateClientConnState. It finds the test's tracker in the resolver
// state's attributes and registers there under the id of its config.
const scriptName = "test_script"

// trackerKey carries the test's tracker down the tree in
// resolver.State.Attributes, which the policy passes to its children.
var trackerKey = attributes.NewKey[*tracker]("lbkit/weightedtarget_test.tracker")

// tracker records every script balancer of one test.
type tracker struct {
	mu   sync.Mutex
	live map[string]*script // by id, the newest balancer
}

func newTracker() *tracker { return &tracker{live: make(map[string]*script)} }

// get returns the newest script balancer with id, or nil.
func (t *tracker) get(id string) *script {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live[id]
}

type scriptBuilder struct{}

func (scriptBuilder) Name() string { return scriptName }

func (scriptBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &script{cc: cc}
}

type scriptConfig struct {
	id     string
	inline *lb.ConnectivityState
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

// script is one balancer of the test_script policy. Its fields are written
// inside the serializer and read by the test after the harness has waited
// for the serializer.
type script struct {
	cc           lb.ClientConn
	id           string
	sc           lb.SubConn
	updates      []lb.ClientConnState
	resolverErrs []error
	exitIdles    int
	closed       bool
	// onExitIdle, when set, runs inside ExitIdle.
	onExitIdle func()
}

func (s *script) UpdateClientConnState(st lb.ClientConnState) error {
	cfg := st.BalancerConfig.(*scriptConfig)
	if s.updates == nil {
		s.id = cfg.id
		sc, err := s.cc.NewSubConn([]resolver.Address{{Addr: "script:" + s.id}}, lb.NewSubConnOptions{
			StateListener: func(lb.SubConnState) {},
		})
		if err != nil {
			return err
		}
		s.sc = sc
		if t, ok := attributes.Get(st.ResolverState.Attributes, trackerKey); ok {
			t.mu.Lock()
			t.live[s.id] = s
			t.mu.Unlock()
		}
	}
	s.updates = append(s.updates, st)
	if cfg.inline != nil {
		s.report(*cfg.inline, "inline")
	}
	return nil
}

// report publishes state with a new picker identified by token: READY
// pickers return the script's SubConn, TRANSIENT_FAILURE ones fail with
// "<id>: <token>", others queue. It must run inside the serializer.
func (s *script) report(state lb.ConnectivityState, token string) *scriptPicker {
	p := &scriptPicker{token: s.id + "/" + token}
	switch state {
	case lb.Ready:
		p.result = lb.PickResult{SubConn: s.sc}
	case lb.TransientFailure:
		p.err = lb.TransientFailureError(fmt.Errorf("%s: %s", s.id, token))
	default:
		p.err = lb.ErrNoSubConnAvailable
	}
	s.cc.UpdateState(lb.State{ConnectivityState: state, Picker: p})
	return p
}

func (s *script) ResolverError(err error) { s.resolverErrs = append(s.resolverErrs, err) }

func (s *script) ExitIdle() {
	s.exitIdles++
	if s.onExitIdle != nil {
		s.onExitIdle()
	}
}

func (s *script) Close() {
	s.closed = true
	if s.sc != nil {
		s.sc.Shutdown()
	}
}

// scriptPicker returns its result or its error; tests tell pickers apart
// by token.
type scriptPicker struct {
	token  string
	result lb.PickResult
	err    error
}

func (p *scriptPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	if p.err != nil {
		return lb.PickResult{}, p.err
	}
	return p.result, nil
}

// Failure makes a failing script picker an lb.FailingPicker.
func (p *scriptPicker) Failure() error { return p.err }

var errScriptNotFound = errors.New("no such script child")
