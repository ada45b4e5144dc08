package childmanager

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
)

// Policy is what a [Builder] needs of a parent policy whose builder takes
// no options: its name, its config reader and its balancer. Implement it on
// a struct type with no fields, since Builder uses P's zero value; its
// methods must be safe for concurrent use.
type Policy interface {
	// Name returns the policy's name in loadBalancingConfig.
	Name() string
	// ReadConfig reads the policy's config from obj, parsing its
	// children's policy lists against reg (nil: [lb.DefaultRegistry]).
	// Its errors are [*lb.ConfigError]s whose paths are relative to the
	// policy's object.
	ReadConfig(obj lb.ConfigObject, reg *lb.Registry) (lb.Config, error)
	// Build returns a new balancer reporting to cc, as
	// [lb.Builder.Build] does.
	Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer
}

// Builder is the [lb.Builder] of the parent policy P: an
// [lb.ConfigParser] that parses the children's policy lists against the
// registry it was registered in ([lb.ParentBuilder]). The zero Builder is
// ready to use and parses them against [lb.DefaultRegistry] until a
// registry binds it. A Builder is immutable and safe for concurrent use.
//
// A policy package declares its builder as an alias, so that users name
// it as the package's own:
//
//	type Builder = childmanager.Builder[policy]
type Builder[P Policy] struct {
	// registry is what the children's policy lists are parsed against;
	// nil means [lb.DefaultRegistry]. A registry sets it (InRegistry).
	registry *lb.Registry
}

// Name returns P's name.
func (Builder[P]) Name() string {
	var p P
	return p.Name()
}

// InRegistry returns a Builder that parses the children's policy lists
// against r ([lb.ParentBuilder]).
func (Builder[P]) InRegistry(r *lb.Registry) lb.Builder { return Builder[P]{registry: r} }

// ParseConfig parses the policy's JSON config with P's ReadConfig and
// lists the fields it does not know, its children's policies' included
// ([lb.ConfigParser], [lb.ParseConfigWith]).
func (b Builder[P]) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	var p P
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (lb.Config, error) {
		return p.ReadConfig(obj, b.registry)
	})
}

// Build returns P's new balancer reporting to cc.
func (Builder[P]) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	var p P
	return p.Build(cc, opts)
}
