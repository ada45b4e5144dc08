package conn

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// greeterConfig is the config of the greeter policy.
type greeterConfig struct{ Greeting string }

// greeter is a user's policy written before lb.ConfigParser listed unknown
// fields: its only parser is ParseConfig(raw) (lb.Config, error). It runs
// lbtest's leaf and records the configs its balancers receive.
type greeter struct {
	mu         sync.Mutex
	configs    []lb.Config
	incomplete int // balancers built with a nil field in their BuildOptions
}

func (*greeter) Name() string { return "greeter" }

func (*greeter) ParseConfig(raw json.RawMessage) (lb.Config, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return nil, err
	}
	c := greeterConfig{Greeting: "hello"}
	if err := obj.Decode(&c.Greeting, "greeting"); err != nil {
		return nil, err
	}
	return c, nil
}

func (g *greeter) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	if opts.Clock == nil || opts.Logger == nil || opts.Rand == nil || opts.Scheduler == nil || opts.Metrics == nil || opts.OnEvent == nil {
		g.mu.Lock()
		g.incomplete++
		g.mu.Unlock()
	}
	return &greeterBalancer{Balancer: lbtest.NewLeafBuilder("greeter").Build(cc, opts), g: g}
}

func (g *greeter) received() []lb.Config {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]lb.Config(nil), g.configs...)
}

type greeterBalancer struct {
	lb.Balancer
	g *greeter
}

func (b *greeterBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	b.g.mu.Lock()
	b.g.configs = append(b.g.configs, s.BalancerConfig)
	b.g.mu.Unlock()
	return b.Balancer.UpdateClientConnState(s)
}

// A user's policy with only the simple ParseConfig still works in a
// channel: its config reaches its balancer, its errors name their path,
// and, since it cannot say which fields it ignored, none is reported, even
// under WithStrictConfig.
func TestUserPolicyWithSimpleParseConfig(t *testing.T) {
	g := &greeter{}
	reg := lb.NewRegistry(g)
	logs := &lbtest.Logs{}
	c, r, _ := newTestChannel(t, WithRegistry(reg), WithStrictConfig(), WithLogger(slog.New(logs)))
	c.Connect()
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"),
		ServiceConfig: []byte(`{"loadBalancingConfig":[{"greeter":{"greeting":"hi","typo":1}}]}`)})
	settle(t, c)
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"loadBalancingPolicy":"greeter"}`)})
	settle(t, c)
	got := g.received()
	if len(got) != 2 || got[0] != (greeterConfig{Greeting: "hi"}) || got[1] != (greeterConfig{Greeting: "hello"}) {
		t.Fatalf("configs received %#v, want hi then the default, hello", got)
	}
	_, err := parseServiceConfig([]byte(`{"loadBalancingConfig":[{"greeter":{"greeting":7}}]}`), reg, true)
	if err == nil || !strings.Contains(err.Error(), "loadBalancingConfig[0].greeter.greeting: want string, got number") {
		t.Fatalf("a bad greeting: %v", err)
	}
	if n := logs.Count(slog.LevelWarn, "invalid service config; keeping the last valid one"); n != 0 {
		t.Fatalf("%d configs refused", n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.incomplete != 0 {
		t.Fatalf("%d balancers built with incomplete BuildOptions: the channel applies WithDefaults", g.incomplete)
	}
}
