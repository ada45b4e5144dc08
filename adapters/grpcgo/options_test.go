package grpcgo_test

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"

	"google.golang.org/grpc/balancer"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// recordOptions is an lbkit policy that records the BuildOptions of each
// balancer it builds (a probe balancer).
type recordOptions struct {
	mu  sync.Mutex
	got []lb.BuildOptions
}

func (r *recordOptions) Name() string { return "record_options" }

func (r *recordOptions) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	r.mu.Lock()
	r.got = append(r.got, opts)
	r.mu.Unlock()
	return &probeBalancer{p: &probe{}, cc: cc}
}

// WithLogger's logger receives the bridge's logs and is the policies'
// logger; WithRand's function is called once per balancer, and each
// balancer gets the source it returned, shared with no other.
func TestWithLoggerAndWithRandReachEveryBalancer(t *testing.T) {
	logs := &lbtest.Logs{}
	logger := slog.New(logs)
	var made []*rand.Rand
	newRand := func() *rand.Rand {
		r := rand.New(rand.NewPCG(1, uint64(len(made))))
		made = append(made, r)
		return r
	}
	rec := &recordOptions{}
	bb := grpcgo.NewBuilder("record_options_via_grpc", rec, grpcgo.WithLogger(logger), grpcgo.WithRand(newRand))
	bals := []balancer.Balancer{bb.Build(newFakeCC(), balancer.BuildOptions{}), bb.Build(newFakeCC(), balancer.BuildOptions{})}
	defer func() {
		for _, b := range bals {
			b.Close()
		}
	}()
	if len(made) != 2 || len(rec.got) != 2 {
		t.Fatalf("WithRand's function called %d times for %d balancers built, want 2 and 2", len(made), len(rec.got))
	}
	for i, opts := range rec.got {
		if opts.Rand != made[i] {
			t.Errorf("balancer %d got random source %p, want the one WithRand's function returned for it (%p)", i, opts.Rand, made[i])
		}
		opts.Logger.Info("from the policy", "balancer", i)
	}
	if n := logs.Count(slog.LevelInfo, "from the policy"); n != 2 {
		t.Errorf("%d of the policies' 2 logs reached WithLogger's logger", n)
	}
	// The bridge's own log: an empty update is a bad resolver state.
	if err := bals[0].UpdateClientConnState(balancer.ClientConnState{}); err != balancer.ErrBadResolverState {
		t.Fatalf("empty update: %v, want balancer.ErrBadResolverState", err)
	}
	if n := logs.Count(slog.LevelDebug, "grpcgo: policy rejected the resolver state"); n != 1 {
		t.Errorf("%d bridge logs of the rejected update reached WithLogger's logger, want 1", n)
	}
}

// Without the options, each balancer still gets a logger and a random
// source of its own; nil options change nothing.
func TestWithoutLoggerAndRandEachBalancerHasItsOwn(t *testing.T) {
	rec := &recordOptions{}
	bb := grpcgo.NewBuilder("record_options_defaults", rec, grpcgo.WithLogger(nil), grpcgo.WithRand(nil))
	a, b := bb.Build(newFakeCC(), balancer.BuildOptions{}), bb.Build(newFakeCC(), balancer.BuildOptions{})
	defer a.Close()
	defer b.Close()
	if len(rec.got) != 2 {
		t.Fatalf("%d balancers built, want 2", len(rec.got))
	}
	x, y := rec.got[0], rec.got[1]
	if x.Logger == nil || y.Logger == nil || x.Rand == nil || y.Rand == nil || x.Rand == y.Rand {
		t.Fatalf("default options: loggers %v, %v; random sources %p, %p; want loggers and two distinct sources", x.Logger, y.Logger, x.Rand, y.Rand)
	}
}

// Without WithLogger, WARN and ERROR records reach slog.Default as it is
// when grpc-go builds the balancer (not when the builder was made, often
// in an init function before main sets its logger), and INFO and DEBUG
// records are dropped, as conn.New does (issue 28: they were discarded).
func TestWithoutLoggerWarningsReachSlogDefault(t *testing.T) {
	rec := &recordOptions{}
	bb := grpcgo.NewBuilder("record_options_default_logger", rec) // before SetDefault, as at init
	logs := &lbtest.Logs{}
	prev := slog.Default()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() { slog.SetDefault(prev) })

	bal := bb.Build(newFakeCC(), balancer.BuildOptions{})
	defer bal.Close()
	policy := rec.got[0].Logger
	policy.Warn("policy warning")
	policy.Error("policy error")
	policy.Info("policy info")
	policy.Debug("policy debug")
	if err := bal.UpdateClientConnState(balancer.ClientConnState{}); err != balancer.ErrBadResolverState { // the bridge's DEBUG record
		t.Fatalf("empty update: %v, want balancer.ErrBadResolverState", err)
	}
	for _, c := range []struct {
		level slog.Level
		msg   string
		want  int
	}{
		{slog.LevelWarn, "policy warning", 1}, {slog.LevelError, "policy error", 1},
		{slog.LevelInfo, "policy info", 0}, {slog.LevelDebug, "policy debug", 0},
		{slog.LevelDebug, "grpcgo: policy rejected the resolver state", 0},
	} {
		if n := logs.Count(c.level, c.msg); n != c.want {
			t.Errorf("%d %v records %q reached slog.Default, want %d", n, c.level, c.msg, c.want)
		}
	}
}

// A nil policy or option panics at registration with a message naming it,
// not with a nil-pointer dereference when grpc-go first builds the policy
// (issue 28).
func TestNewBuilderNamesANilPolicyOrOption(t *testing.T) {
	for _, tc := range []struct {
		want string
		f    func()
	}{
		{"grpcgo.NewBuilder: nil lb.Builder for mine", func() { grpcgo.NewBuilder("mine", nil) }},
		{"grpcgo.NewBuilder: option 1 of 1 is nil", func() { grpcgo.NewBuilder("mine", &recordOptions{}, nil) }},
	} {
		func() {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("panic %v, want %q", r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}
