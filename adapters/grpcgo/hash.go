package grpcgo

import "context"

// requestHashKey is the context key of a call's request hash.
type requestHashKey struct{}

// WithRequestHash returns ctx carrying h as the hash of the calls made with
// it, for lbkit's hash-based policies (lbkit_ring_hash, lbkit_maglev):
// calls with equal hashes go to the same backend while it can serve. It is
// the per-call alternative to the policy's requestHashHeader (gRFC A76),
// when the key is not a header, or should not be sent as one. The hash
// reaches the policy as [lb.PickInfo.Hash].
func WithRequestHash(ctx context.Context, h uint64) context.Context {
	return context.WithValue(ctx, requestHashKey{}, h)
}

// requestHash returns the hash WithRequestHash put in ctx.
func requestHash(ctx context.Context) (uint64, bool) {
	h, ok := ctx.Value(requestHashKey{}).(uint64)
	return h, ok
}
