package grpcgo

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/serviceconfig"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/consistenthash"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/peakewma"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/weightedtarget"
	"github.com/lbkit/lbkit/lb/wrr"
)

// The names this package registers with grpc-go's balancer registry, in its
// init function. They are prefixed so as not to replace grpc-go's own
// policies of the same kind.
const (
	// PickFirstName runs lbkit's pick_first (package pickfirst).
	PickFirstName = "lbkit_pick_first"
	// PriorityName runs lbkit's priority_experimental (package priority).
	PriorityName = "lbkit_priority"
	// WeightedTargetName runs lbkit's weighted_target_experimental
	// (package weightedtarget).
	WeightedTargetName = "lbkit_weighted_target"
	// WeightedRoundRobinName runs lbkit's weighted_round_robin (package
	// wrr), which spreads requests by the weights set with [SetWeight].
	WeightedRoundRobinName = "lbkit_weighted_round_robin"
	// RoundRobinName runs lbkit's round_robin (package roundrobin).
	RoundRobinName = "lbkit_round_robin"
	// LeastRequestName runs lbkit's least_request_experimental (package
	// leastrequest), which counts each RPC against its endpoint until
	// grpc-go reports it done.
	LeastRequestName = "lbkit_least_request"
	// OutlierDetectionName runs lbkit's outlier_detection_experimental
	// (package outlierdetection, gRFC A50); the child policy in its
	// config names an lbkit policy.
	OutlierDetectionName = "lbkit_outlier_detection"
	// RingHashName runs lbkit's ring_hash_experimental (package consistenthash,
	// gRFC A42, A76), which picks the same endpoint as grpc-go's
	// ring_hash_experimental for the same endpoints and request hash.
	RingHashName = "lbkit_ring_hash"
	// MaglevName runs lbkit's maglev_experimental (package
	// consistenthash): ring_hash's behaviour over Envoy's Maglev table.
	MaglevName = "lbkit_maglev"
	// PeakEWMAName runs lbkit's peak_ewma_experimental (package peakewma):
	// two random choices by peak-EWMA round trip times requests in
	// flight, timed from pick to grpc-go's Done.
	PeakEWMAName = "lbkit_peak_ewma"
)

// init registers the ten default policies. grpc-go's registry may only be
// written during initialization, so registering here lets importing the
// package be all a program needs; it is the package's only side effect.
func init() {
	for _, p := range defaultPolicies {
		Register(p.name, p.b)
	}
}

// defaultPolicy is a policy init registers: b under name with grpc-go.
type defaultPolicy struct {
	name string
	b    lb.Builder
}

// defaultPolicies are the policies init registers.
var defaultPolicies = []defaultPolicy{
	{PickFirstName, pickfirst.Builder{}},
	{PriorityName, priority.NewBuilder()},
	{WeightedTargetName, weightedtarget.Builder{}},
	{WeightedRoundRobinName, wrr.Builder{}},
	{RoundRobinName, roundrobin.Builder{}},
	{LeastRequestName, leastrequest.Builder{}},
	{OutlierDetectionName, outlierdetection.Builder{}},
	{RingHashName, consistenthash.RingHashBuilder{}},
	{MaglevName, consistenthash.MaglevBuilder{}},
	{PeakEWMAName, peakewma.Builder{}},
}

// Register registers, with grpc-go's balancer registry, a [Builder] that
// runs the lbkit policy b under name, with opts. Like
// [balancer.Register], it must be called during initialization (from an
// init function), or at least before any grpc.ClientConn that could parse
// a service config is created: grpc-go's registry is not safe for
// concurrent use. A later registration under the same name replaces the
// earlier one; registering one of this package's default names replaces
// the default.
func Register(name string, b lb.Builder, opts ...Option) {
	balancer.Register(NewBuilder(name, b, opts...))
}

// Builder is a grpc-go [balancer.Builder] and [balancer.ConfigParser] that
// runs an lbkit policy. Create it with [NewBuilder]; register it with
// [balancer.Register] (or use [Register]).
//
// Each balancer it builds is one lbkit balancer tree with its own
// [lb.Serializer]; see the package documentation for how grpc-go's calls
// reach it.
type Builder struct {
	name string
	b    lb.Builder
	opts options
}

var (
	_ balancer.Builder      = (*Builder)(nil)
	_ balancer.ConfigParser = (*Builder)(nil)
)

// NewBuilder returns a Builder that grpc-go knows as name and that runs the
// lbkit policy b with opts. A nil b or option panics with a message
// naming it: registration runs at init, where that mistake belongs.
func NewBuilder(name string, b lb.Builder, opts ...Option) *Builder {
	if b == nil {
		panic("grpcgo.NewBuilder: nil lb.Builder for " + name)
	}
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("grpcgo.NewBuilder: option %d of %d is nil", i+1, len(opts)))
		}
	}
	return &Builder{name: name, b: b, opts: newOptions(opts)}
}

// Name returns the name grpc-go knows the policy by, as given to
// [NewBuilder].
func (bb *Builder) Name() string { return bb.name }

// lbConfig carries an lbkit policy's parsed config through grpc-go.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig
	cfg lb.Config
}

// ParseConfig parses the policy's JSON config as lbkit does
// ([lb.ParseConfig]): the config is exactly the JSON the lbkit policy
// takes. Child policy lists nested in it (priority's children,
// weighted_target's targets) are parsed with an lbkit [lb.Registry] and so
// name lbkit policies as registered with lbkit ("pick_first",
// "weighted_round_robin", ...), not grpc-go's. A builder without a parser
// ignores its config. The fields the policy does not know are ignored:
// grpc-go's parser has no way to report them. An error is the lbkit
// builder's, normally a [*lb.ConfigError] naming the offending field.
func (bb *Builder) ParseConfig(raw json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	cfg, _, err := lb.ParseConfig(bb.b, raw)
	if err != nil {
		return nil, err
	}
	return &lbConfig{cfg: cfg}, nil
}

// Build returns a new balancer that runs the lbkit policy for cc. It creates
// the balancer's serializer, passes it to the [WithSerializerObserver]
// function, and builds the lbkit policy inside it.
func (bb *Builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return newBridge(bb, cc, opts)
}
