package sim

import (
	"errors"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
)

// doneRecorder is a test policy: it picks the first READY endpoint and
// records the error of every Done.
type doneRecorder struct{ errs *[]error }

func (doneRecorder) Name() string { return "test_done_recorder" }

func (d doneRecorder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	record := func(di lb.DoneInfo) { *d.errs = append(*d.errs, di.Err) }
	l := endpointlist.New(cc, opts, opts.PolicyLogger("test_done_recorder"), endpointlist.Policy[struct{}]{
		Name: "test_done_recorder",
		BuildPicker: func(ready []*endpointlist.Endpoint[struct{}]) (lb.Picker, error) {
			return firstPicker{lb.PickResult{SubConn: ready[0].SubConn, Done: record}}, nil
		},
	})
	return recorderBalancer{l}
}

type recorderBalancer struct{ *endpointlist.List[struct{}] }

func (b recorderBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	return b.Update(s.ResolverState, nil)
}

type firstPicker struct{ r lb.PickResult }

func (p firstPicker) Pick(lb.PickInfo) (lb.PickResult, error) { return p.r, nil }

// Every attempt's Done reports its outcome: nil, the errors fault's error,
// the stop's, or the timeout's.
func TestDoneReportsEachOutcome(t *testing.T) {
	s, err := ParseScenario([]byte(`{"name": "done", "duration": "4s", "seed": 3,
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": 50, "timeout": "0.5s"}],
		"backends": [{"name": "b", "service": {"constant": "0.1s"}}],
		"faults": [
			{"backend": "b", "from": "1s", "until": "2s", "errors": {"rate": 1}},
			{"backend": "b", "from": "2s", "until": "3s", "slower": {"latency": "1s"}},
			{"backend": "b", "from": "3.5s", "stop": {}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	s.policies[0] = policySpec{name: "recorder", parsed: &lb.ParsedPolicy{Name: "test_done_recorder", Builder: doneRecorder{&errs}}}
	rep, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	count := map[error]int{}
	for _, e := range errs {
		switch {
		case e == nil, errors.Is(e, ErrBackendError), errors.Is(e, ErrDeadline), errors.Is(e, ErrConnectionLost):
			count[e]++
		default:
			t.Errorf("Done reported %v", e)
		}
	}
	f := rep.Policies[0].Failed
	t.Logf("Done: %d ok, %d errors, %d deadlines, %d lost; report %+v", count[nil], count[ErrBackendError], count[ErrDeadline], count[ErrConnectionLost], f)
	if count[nil] == 0 || count[ErrBackendError] == 0 || count[ErrDeadline] == 0 || count[ErrConnectionLost] == 0 {
		t.Errorf("want every outcome at least once")
	}
	if uint64(count[ErrDeadline]) != f.Timeout || uint64(count[ErrBackendError]+count[ErrConnectionLost]) != f.Error {
		t.Errorf("Done's errors %v do not match the report's failures %+v", count, f)
	}
}
