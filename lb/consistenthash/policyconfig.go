package consistenthash

import "github.com/lbkit/lbkit/lb"

// RingHashConfig and MaglevConfig are [lb.PolicyConfig]s: usable wherever
// a service config or a child policy is taken, as the JSON object
// json.Marshal makes of them (a zero field is left out, so it takes its
// default).
var (
	_ lb.PolicyConfig = RingHashConfig{}
	_ lb.PolicyConfig = MaglevConfig{}
)

// PolicyName returns [RingHashName], making RingHashConfig an
// [lb.PolicyConfig].
func (RingHashConfig) PolicyName() string { return RingHashName }

// PolicyName returns [MaglevName], making MaglevConfig an
// [lb.PolicyConfig].
func (MaglevConfig) PolicyName() string { return MaglevName }
