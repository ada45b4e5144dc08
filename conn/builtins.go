package conn

// The built-in resolvers and policies register themselves: a channel
// resolves "dns:", "passthrough:", "unix:", "unix-abstract:", "static:"
// and "eds:" targets, and runs every built-in policy (package
// lb/policies lists them), with no further imports.
import (
	_ "github.com/lbkit/lbkit/lb/policies"
	_ "github.com/lbkit/lbkit/lb/resolver/dns"
	_ "github.com/lbkit/lbkit/lb/resolver/eds"
	_ "github.com/lbkit/lbkit/lb/resolver/passthrough"
	_ "github.com/lbkit/lbkit/lb/resolver/static"
	_ "github.com/lbkit/lbkit/lb/resolver/unix"
)
