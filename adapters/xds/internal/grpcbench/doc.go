// Package grpcbench measures lbkit's xDS client side by side with
// grpc-go's own (google.golang.org/grpc/xds): both receive the same
// snapshot from the same kind of go-control-plane server, and an update
// ends when the leaf policy of priority 0 has published a picker of the
// new endpoints. It is its own module so that grpc-go's xDS packages and
// their dependencies never enter adapters/xds's go.mod; it holds tests and
// benchmarks only (docs/performance.md, "xDS").
package grpcbench
