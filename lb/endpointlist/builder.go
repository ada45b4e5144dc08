package endpointlist

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// Leaf is what a [Builder] needs of a leaf policy: its name, its config
// reader and its balancer. Implement it on a struct type with no fields,
// since Builder uses P's zero value; its methods must be safe for
// concurrent use.
type Leaf interface {
	// Name returns the policy's name in loadBalancingConfig.
	Name() string
	// ReadConfig reads the policy's config from obj. Its errors are
	// [*lb.ConfigError]s whose paths are relative to the policy's object.
	ReadConfig(obj lb.ConfigObject) (lb.Config, error)
	// Build returns a new balancer reporting to cc, as [lb.Builder.Build]
	// does.
	Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer
}

// Builder is the [lb.Builder] of the leaf policy P, an [lb.ConfigParser].
// The zero Builder is ready to use; it is immutable and safe for
// concurrent use. It is to a leaf policy what
// [github.com/lbkit/lbkit/lb/childmanager.Builder] is to a parent.
//
// A policy package declares its builder as an alias, so that users name
// it as the package's own:
//
//	type Builder = endpointlist.Builder[policy]
type Builder[P Leaf] struct{}

// Name returns P's name.
func (Builder[P]) Name() string {
	var p P
	return p.Name()
}

// ParseConfig parses the policy's JSON config with P's ReadConfig and
// lists the fields it does not know ([lb.ConfigParser],
// [lb.ParseConfigWith]). Empty input and null read as the empty object.
func (Builder[P]) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	var p P
	return lb.ParseConfigWith(raw, p.ReadConfig)
}

// Build returns P's new balancer reporting to cc.
func (Builder[P]) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	var p P
	return p.Build(cc, opts)
}

// NewCounted returns [New]'s list for the policy p, logging to
// opts.PolicyLogger(p.Name), whose slow start tracker counts the ramping
// endpoints of each READY picker under the policy's name
// ([slowstart.PolicyCounter], [slowstart.Tracker.CountPickers]): the
// start of the Build of round_robin, least_request_experimental and
// peak_ewma_experimental.
func NewCounted[T any](cc lb.ClientConn, opts lb.BuildOptions, p Policy[T]) *List[T] {
	l := New(cc, opts, opts.PolicyLogger(p.Name), p)
	l.slow.CountPickers(slowstart.PolicyCounter(cc, opts, p.Name))
	return l
}

// Builder is an lb.ConfigParser whatever its policy.
var _ lb.ConfigParser = Builder[Leaf]{}
