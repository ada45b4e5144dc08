package conn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Snapshot describes a channel at one moment: its state and its balancer
// tree, down to every endpoint's connection. It is a plain value; its JSON
// form is what package conn/debugpage serves. docs/observability.md describes every
// field.
type Snapshot struct {
	// Target is the channel's target.
	Target string `json:"target"`
	// Time is when the snapshot was taken, on the channel's clock.
	Time time.Time `json:"time"`
	// State is the channel's connectivity state.
	State lb.ConnectivityState `json:"state"`
	// StateSince is when the channel entered State, on its clock.
	StateSince time.Time `json:"stateSince"`
	// Config is the service config in use and where it came from.
	Config ConfigInUse `json:"config"`
	// ResolverError is the resolver's last error, with its time; nil
	// once the resolver has sent an update since.
	ResolverError *lb.TimedError `json:"resolverError,omitempty"`
	// LastPickError is the last pick [Channel.Pick] failed, with its time
	// (it stays after picks succeed again: compare its time); nil when
	// none has failed.
	LastPickError *lb.TimedError `json:"lastPickError,omitempty"`
	// Balancer is the balancer tree in use; nil while the channel is idle
	// or has not built one yet.
	Balancer *lb.Node `json:"balancer,omitempty"`
	// Pending is the balancer being switched to, while the channel keeps
	// the old one in use (a policy change in the service config); nil
	// otherwise.
	Pending *lb.Node `json:"pending,omitempty"`
	// Resolver is the resolver's account of itself when it gives one
	// ([resolver.Describer]; the xds resolver does); nil otherwise or
	// while the channel is idle.
	Resolver *resolver.Description `json:"resolver,omitempty"`
}

// The sources of a service config ([ConfigInUse.Source]).
const (
	// ConfigFromResolver is a service config the resolver sent.
	ConfigFromResolver = "resolver"
	// ConfigFromOption is the config of [WithDefaultServiceConfig], used
	// until the resolver sends a valid one.
	ConfigFromOption = "option"
	// ConfigBuiltin means no service config: [DefaultPolicy] with its
	// default config.
	ConfigBuiltin = "builtin"
)

// ConfigInUse is the service config a channel applies.
type ConfigInUse struct {
	// Source is where it came from: [ConfigFromResolver],
	// [ConfigFromOption] or [ConfigBuiltin].
	Source string `json:"source"`
	// ServiceConfig is its JSON, compacted; absent for ConfigBuiltin.
	ServiceConfig json.RawMessage `json:"serviceConfig,omitempty"`
	// Policy is the root policy in use; empty before the channel built
	// one.
	Policy string `json:"policy,omitempty"`
	// Rejected is the resolver's last invalid service config (why, and
	// when), while the channel keeps using an older one or none; nil once
	// a valid one arrives.
	Rejected *lb.TimedError `json:"rejected,omitempty"`
}

// Snapshot describes the channel. It runs on the channel's serializer, so
// the tree it describes is consistent: no update, state change or timer
// runs while it is taken. Its cost is one pass over the tree's nodes and
// endpoints; it does not block picks. It fails with ctx's error if ctx ends
// first, or with [ErrClosed] once the channel is closed. Safe for
// concurrent use.
func (c *Channel) Snapshot(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	err := c.ser.Run(ctx, func() {
		if c.closed {
			return
		}
		g := c.stateGen.Load()
		s = Snapshot{Target: c.target, Time: c.clock.Now(), State: g.state, StateSince: g.since,
			Config: c.configInUse(), ResolverError: c.resolverErr, LastPickError: c.lastPickErr.Load()}
		s.Balancer = c.describe(c.current)
		s.Pending = c.describe(c.pending)
		s.Resolver = c.describeResolver()
	})
	switch {
	case err == nil && s.Target == "":
		return Snapshot{}, ErrClosed
	case err != nil && c.shut.Load():
		return Snapshot{}, ErrClosed
	case err != nil:
		return Snapshot{}, fmt.Errorf("conn: snapshot: %w", err)
	}
	return s, nil
}

// configInUse returns the service config the channel applies. Runs
// serialized.
func (c *Channel) configInUse() ConfigInUse {
	in := ConfigInUse{Source: ConfigBuiltin, Rejected: c.rejectedSC}
	switch {
	case c.lastSC != nil:
		in.Source, in.ServiceConfig = ConfigFromResolver, c.lastSC.raw
	case c.defSC != nil:
		in.Source, in.ServiceConfig = ConfigFromOption, c.defSC.raw
	}
	if c.current != nil {
		in.Policy = c.current.name
	}
	return in
}

// describeResolver returns the resolver's account of itself, with the
// Degraded reason of the State the tree applied last in front of its
// LastError, so the resolver and the tree show that reason together;
// nil when the resolver gives no account and the State has no reason.
// Runs serialized.
func (c *Channel) describeResolver() *resolver.Description {
	var desc resolver.Description
	d, ok := c.res.(resolver.Describer)
	if ok {
		desc = d.Describe()
	}
	if c.resCC != nil && c.resCC.degraded != nil {
		ok = true
		problems := []string{c.resCC.degraded.Error()}
		if desc.LastError != "" {
			problems = append(problems, desc.LastError)
		}
		desc.LastError = strings.Join(problems, "; ")
	}
	if !ok {
		return nil
	}
	return &desc
}

// describe returns w's tree with the channel's view of every endpoint's
// connection; nil for nil. Runs serialized.
func (c *Channel) describe(w *balancerWrapper) *lb.Node {
	if w == nil {
		return nil
	}
	n := lb.Describe(w.b, w.name)
	n.SetState(w.state)
	since := w.since
	n.StateSince = &since
	addConnections(&n)
	return &n
}

// addConnections fills in the connection fields of every endpoint of n
// whose SubConn is this channel's.
func addConnections(n *lb.Node) {
	for i := range n.Endpoints {
		e := &n.Endpoints[i]
		sc, ok := e.SubConn.(*SubConn)
		if !ok {
			continue
		}
		ac := sc.ac
		e.Connection = ac.state
		e.Error = lb.ErrorString(ac.err)
		e.ConnectionSince = timePtr(ac.since)
		if e.StateSince == nil && sc.connected && e.State == sc.state {
			e.StateSince = timePtr(sc.since) // else the policy shows a state of its own
		}
		e.LastConnectionError = ac.lastConnErr
		e.LastHealthCheck = ac.lastCheck
		ac.stats.describe(e)
		if sc.wantsHealth && ac.gated.Load() {
			e.Health = ac.verdict.String()
			if ac.verdict == healthFailing {
				e.Error = lb.ErrorString(ac.verdictErr)
			}
		}
	}
	for i := range n.Children {
		addConnections(&n.Children[i])
	}
}

// timePtr returns a pointer to a copy of t; nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// String returns "unknown", "passing" or "failing".
func (v healthVerdict) String() string {
	switch v {
	case healthPassing:
		return "passing"
	case healthFailing:
		return "failing"
	}
	return "unknown"
}
