package grpcgo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/priority"
)

// grpc-go leaves no goroutine behind once every ClientConn and Server is
// closed, so no goleak option is needed. The grpc-go pickers that
// BenchmarkEDFPick keeps for the whole run are closed before the check.
func TestMain(m *testing.M) {
	code := m.Run()
	closeGRPCPickers()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Test policies, registered with grpc-go during initialization as its
// registry requires.
const (
	// mockPriorityName is lbkit's priority on failoverClock.
	mockPriorityName = "lbkit_test_priority"
	// fixedName publishes TRANSIENT_FAILURE with a picker failing with
	// the error its config describes.
	fixedName = "lbkit_test_fixed"
	// mockOutlierDetectionName is lbkit's outlier detection on
	// outlierClock.
	mockOutlierDetectionName = "lbkit_test_outlier_detection"
)

// outlierClock drives the sweep timers of every mockOutlierDetectionName
// balancer.
var outlierClock = &serializers{clock: clock.NewMock()}

// failoverClock drives the timers of every mockPriorityName balancer.
var failoverClock = &serializers{clock: clock.NewMock()}

func init() {
	grpcgo.Register(mockPriorityName, priority.NewBuilder(),
		grpcgo.WithClock(failoverClock.clock),
		grpcgo.WithSerializerObserver(failoverClock.add))
	grpcgo.Register(fixedName, fixedBuilder{})
	grpcgo.Register(mockOutlierDetectionName, outlierdetection.Builder{},
		grpcgo.WithClock(outlierClock.clock),
		grpcgo.WithSerializerObserver(outlierClock.add))
}

// fixedBuilder builds a policy whose every pick fails with one error:
// {"kind": "drop" | "tf" | "status", "message": "..."}. "status" is an
// unmarked grpc-go status error, which lbkit treats as a transient failure.
type fixedBuilder struct{}

type fixedConfig struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (fixedBuilder) Name() string { return fixedName }

func (fixedBuilder) ParseConfig(raw json.RawMessage) (lb.Config, error) {
	var c fixedConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	switch c.Kind {
	case "drop", "tf", "status":
		return c, nil
	}
	return nil, lb.ConfigErrorf("kind", "unknown kind %q", c.Kind)
}

func (fixedBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &fixedBalancer{cc: cc}
}

type fixedBalancer struct{ cc lb.ClientConn }

func (b *fixedBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	c := s.BalancerConfig.(fixedConfig)
	var err error
	switch c.Kind {
	case "drop":
		err = lb.DropError(errors.New(c.Message))
	case "tf":
		err = lb.TransientFailureError(errors.New(c.Message))
	case "status":
		err = status.Error(codes.Internal, c.Message)
	}
	b.cc.UpdateState(lb.State{ConnectivityState: lb.TransientFailure, Picker: lb.NewErrPicker(err)})
	return nil
}

func (b *fixedBalancer) ResolverError(error) {}
func (b *fixedBalancer) ExitIdle()           {}
func (b *fixedBalancer) Close()              {}
