package pickfirst

import "github.com/lbkit/lbkit/lb"

// Config is an [lb.PolicyConfig]: usable wherever a service config or a
// child policy is taken, as the JSON object json.Marshal makes of it.
var _ lb.PolicyConfig = Config{}

// PolicyName returns [Name], making Config an [lb.PolicyConfig].
func (Config) PolicyName() string { return Name }
