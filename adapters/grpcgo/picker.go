package grpcgo

import (
	"errors"
	"unsafe"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lbkit/lbkit/lb"
)

// picker runs an lbkit picker for grpc-go. It holds nothing else but what
// the channel's pickers share, so a READY pick costs one interface call
// and a type assertion on top of the lbkit pick, and allocates nothing
// unless the lbkit result has a Done or the call has outgoing metadata
// (which becomes [lb.PickInfo.Metadata]: grpc-go copies it).
type picker struct {
	p      lb.Picker
	shared *pickShared
}

// pickShared is what every picker of one channel shares. It is safe for
// concurrent use.
type pickShared struct {
	// authority is the channel's authority (grpc-go's
	// balancer.BuildOptions.Authority: the dial target's, or
	// grpc.WithAuthority's), given to every pick as lb.PickInfo.Authority.
	authority string
	// malformed counts the malformed load reports of the picks.
	malformed onceCounter
	// timeouts counts the picks whose lbkit result had a Timeout, which
	// grpc-go's picker API cannot apply.
	timeouts onceCounter
}

var _ balancer.Picker = (*picker)(nil)

func newPicker(p lb.Picker, shared *pickShared) *picker {
	return &picker{p: p, shared: shared}
}

// errTimeoutIgnored is what the channel logs, once, when an lbkit pick
// carries a Timeout.
var errTimeoutIgnored = errors.New("grpcgo: an lbkit pick asked for a timeout (lb.PickResult.Timeout, such as a route's), " +
	"but grpc-go's balancer.PickResult cannot shorten a call's deadline: set the deadline on the call's context, or a methodConfig timeout in the service config")

// errForeignSubConn is returned when an lbkit picker returns a SubConn this
// bridge did not create, breaking lbkit's contract.
var errForeignSubConn = status.Error(codes.Internal, "grpcgo: lbkit picker returned a SubConn not created by this channel")

// Pick calls the lbkit picker and converts its answer:
//
//   - a SubConn: the grpc-go SubConn behind it, and a Done that passes
//     [balancer.DoneInfo] to the lbkit Done (if the lbkit pick had one):
//     Err as is, the status code of Err as Status, the trailer as
//     Metadata, the ORCA load report as Load (see doneWithLoad);
//   - [lb.ErrNoSubConnAvailable]: [balancer.ErrNoSubConnAvailable], so
//     grpc-go queues the RPC until the next picker;
//   - an error matching [lb.ErrDropped]: a status error with code
//     UNAVAILABLE and the error's message, which grpc-go uses to fail the
//     RPC even if it is wait-for-ready;
//   - any other error ([lb.ErrTransientFailure] or unmarked): a plain
//     error with the original message, which grpc-go uses to fail the RPC
//     with UNAVAILABLE unless it is wait-for-ready, in which case it
//     queues it.
//
// The lbkit picker gets the call's method, outgoing metadata, hash
// ([WithRequestHash]) and the channel's authority. A result's Timeout is
// not applied: grpc-go's picker cannot change a call's deadline; the
// channel counts such picks and logs the first (see the package doc).
func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	in := lb.PickInfo{Ctx: info.Ctx, Method: info.FullMethodName, Authority: p.shared.authority}
	if md, ok := metadata.FromOutgoingContext(info.Ctx); ok {
		in.Metadata = mdView(md) // a copy: grpc-go allocates it only when the call has metadata
	}
	in.Hash, in.HasHash = requestHash(info.Ctx)
	r, err := p.p.Pick(in)
	if err != nil {
		return balancer.PickResult{}, toGRPCPickError(err)
	}
	sc, ok := r.SubConn.(*subConn)
	if !ok {
		return balancer.PickResult{}, errForeignSubConn
	}
	res := balancer.PickResult{SubConn: sc.sc}
	if r.Done != nil {
		res.Done = sc.grpcDone(r.Done, &p.shared.malformed)
	}
	if r.Timeout > 0 {
		p.shared.timeouts.add(errTimeoutIgnored)
	}
	return res, nil
}

// toDoneInfo converts grpc-go's report of a finished RPC: Err stays (nil is
// success), Status is the RPC's gRPC status code, and Metadata reads the
// trailer (nil when there is none).
func toDoneInfo(di balancer.DoneInfo) lb.DoneInfo {
	out := lb.DoneInfo{Err: di.Err, Status: int(status.Code(di.Err))}
	if di.Trailer != nil {
		out.Metadata = mdView(di.Trailer)
	}
	return out
}

// mdView is gRPC metadata (a call's outgoing metadata, a trailer) seen as
// [lb.Metadata]: Get returns the key's first value, Values all of them.
// Converting a metadata.MD to it allocates nothing.
type mdView metadata.MD

// Get returns the first value of key (matched case-insensitively), or "".
func (m mdView) Get(key string) string {
	if v := metadata.MD(m).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values returns every value of key (matched case-insensitively), for a
// policy that joins them (ring_hash's requestHashHeader, gRFC A76).
func (m mdView) Values(key string) []string { return metadata.MD(m).Get(key) }

// toGRPCPickError converts an lbkit pick error as [picker.Pick] describes.
func toGRPCPickError(err error) error {
	switch lb.ClassifyPickError(err) {
	case lb.PickQueue:
		return balancer.ErrNoSubConnAvailable
	case lb.PickFail:
		return status.Error(codes.Unavailable, err.Error())
	default:
		if isStatusError(err) {
			// grpc-go would fail even wait-for-ready RPCs on a status
			// error; keep the message and lose the status.
			return plainError{msg: err.Error()}
		}
		return err
	}
}

// isStatusError reports whether grpc-go would see err as a status error.
func isStatusError(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	return errors.As(err, &se)
}

// plainError is an error message with no status and nothing to unwrap.
type plainError struct{ msg string }

func (e plainError) Error() string { return e.msg }

// doneAdapter is the grpc-go Done made for one lbkit Done.
type doneAdapter struct {
	lbDone unsafe.Pointer // the lbkit Done's closure, its identity
	grpc   func(balancer.DoneInfo)
}

// grpcDone returns the grpc-go form of done: the one cached on sc when
// done is the same closure as last time (policies such as
// weighted_round_robin give one Done per endpoint), else a new one, which
// it caches. Comparing closures by their address is what makes a pick of
// such a policy allocate nothing.
func (sc *subConn) grpcDone(done func(lb.DoneInfo), malformed *onceCounter) func(balancer.DoneInfo) {
	id := closureID(done)
	if a := sc.done.Load(); a != nil && a.lbDone == id {
		return a.grpc
	}
	a := &doneAdapter{lbDone: id, grpc: func(di balancer.DoneInfo) { doneWithLoad(done, di, malformed) }}
	sc.done.Store(a)
	return a.grpc
}

// closureID returns the address of f's closure: two funcs with the same
// one are the same function value.
func closureID(f func(lb.DoneInfo)) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&f)) }
