// Package xds follows an xDS management server over ADS and registers the
// "xds" resolver scheme: "xds:///CLUSTER" resolves a cluster from its CDS
// and EDS resources into the same priority_experimental →
// weighted_target_experimental → endpoint-policy tree as the eds file
// resolver.
package xds

import (
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	_ "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	_ "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	_ "github.com/lbkit/lbkit/lb/resolver/eds"
	_ "google.golang.org/grpc"
)
