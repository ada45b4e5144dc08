package conn

// The built-in resolvers register their schemes: a channel resolves
// "dns:", "passthrough:", "unix:", "unix-abstract:" and "static:" targets
// without further imports, as grpc-go does for its own built-ins.
import (
	_ "github.com/lbkit/lbkit/lb/resolver/dns"
	_ "github.com/lbkit/lbkit/lb/resolver/passthrough"
	_ "github.com/lbkit/lbkit/lb/resolver/static"
	_ "github.com/lbkit/lbkit/lb/resolver/unix"
)
