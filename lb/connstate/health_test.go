package connstate

import (
	"errors"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"pgregory.net/rapid"
)

type healthRec struct {
	started   []uint64
	cancels   int
	verdicts  []Verdict
	inFlight  bool
	lastStart uint64
	checked   int // answers applied
}

func (r *healthRec) StartCheck(id uint64) {
	r.started = append(r.started, id)
	r.inFlight, r.lastStart = true, id
}
func (r *healthRec) CancelCheck()                  { r.cancels++; r.inFlight = false }
func (r *healthRec) Checked(error)                 { r.checked++ }
func (r *healthRec) SetVerdict(v Verdict, _ error) { r.verdicts = append(r.verdicts, v) }

// TestHealthFollowsA17 runs random answers, timeouts and restarts against
// a model of gRFC A17 with thresholds: the first answer decides; then
// UnhealthyThreshold failures in a row make a passing backend failing, and
// HealthyThreshold passes in a row a failing one passing; one check at a
// time; stale answers change nothing; UNIMPLEMENTED makes it passing with
// no further check; the owner hears every change of verdict and only
// those, and every answer applied (timeouts included).
func TestHealthFollowsA17(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sched := &manualSched{}
		rec := &healthRec{}
		h := NewHealth(sched, nil, rec)
		set := HealthSettings{Interval: time.Second, Timeout: 100 * time.Millisecond,
			UnhealthyThreshold: rapid.IntRange(1, 4).Draw(t, "unhealthy"),
			HealthyThreshold:   rapid.IntRange(1, 4).Draw(t, "healthy")}
		h.Start(set)
		model, passes, fails, on := Unknown, 0, 0, true
		applied := 0     // answers the model applied
		settled := false // the backend does not implement checks: no more checks
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			heard := len(rec.verdicts)
			switch rapid.IntRange(0, 5).Draw(t, "event") {
			case 0, 1: // an answer to the check in flight, or a stale one
				pass := rapid.Bool().Draw(t, "pass")
				var err error
				if !pass {
					err = errors.New("down")
				}
				id := rec.lastStart
				stale := rapid.IntRange(0, 4).Draw(t, "stale") == 0
				if stale {
					id--
				}
				live := on && rec.inFlight && !stale
				if h.Awaits(id) != live {
					t.Fatalf("Awaits(%d) = %v, want %v", id, !live, live)
				}
				if got := h.Result(id, err); got != live {
					t.Fatalf("Result applied %v, want %v", got, live)
				}
				if !live {
					break
				}
				applied++
				if pass {
					passes, fails = passes+1, 0
					if model == Unknown || (model == Failing && passes >= set.HealthyThreshold) {
						model = Passing
					}
				} else {
					passes, fails = 0, fails+1
					if model == Unknown || (model == Passing && fails >= set.UnhealthyThreshold) {
						model = Failing
					}
				}
			case 2: // the timers: the check's timeout or the next check
				wasInFlight := rec.inFlight
				sched.fire()
				if on && wasInFlight { // the timeout fails the check
					applied++
					passes, fails = 0, fails+1
					if model == Unknown || (model == Passing && fails >= set.UnhealthyThreshold) {
						model = Failing
					}
				}
			case 3:
				h.Stop()
				model, passes, fails, on, settled = Unknown, 0, 0, false, false
			case 4:
				h.Start(set)
				model, passes, fails, on, settled = Unknown, 0, 0, true, false
			case 5: // UNIMPLEMENTED: passing, and no further check (A17)
				live := h.Awaits(rec.lastStart)
				if got := h.Unimplemented(rec.lastStart, errors.New("unimplemented")); got != live {
					t.Fatalf("Unimplemented applied %v, want %v", got, live)
				}
				if live {
					model, settled = Passing, true
					applied++
				}
			}
			if rec.checked != applied {
				t.Fatalf("owner told of %d answers, %d applied", rec.checked, applied)
			}
			if v, _ := h.Verdict(); v != model {
				t.Fatalf("verdict %v, model %v", v, model)
			}
			if len(rec.verdicts) > heard+1 || (len(rec.verdicts) == heard+1 && rec.verdicts[heard] != model) {
				t.Fatalf("owner heard %v, model %v", rec.verdicts[heard:], model)
			}
			if on && !settled && !rec.inFlight && sched.pending() == 0 {
				t.Fatal("checking, but no check in flight and none scheduled")
			}
			if settled && (rec.inFlight || sched.pending() > 0) {
				t.Fatal("a check after the backend said it does not implement them")
			}
		}
	})
}

// TestViewGatesReadyOnHealth pins View's table (A17).
func TestViewGatesReadyOnHealth(t *testing.T) {
	for _, c := range []struct {
		s    lb.ConnectivityState
		v    Verdict
		want lb.ConnectivityState
	}{
		{lb.Ready, Unknown, lb.Connecting}, {lb.Ready, Passing, lb.Ready}, {lb.Ready, Failing, lb.TransientFailure},
		{lb.Idle, Passing, lb.Idle}, {lb.TransientFailure, Unknown, lb.TransientFailure},
	} {
		if got := View(c.s, c.v); got != c.want {
			t.Errorf("View(%v, %v) = %v, want %v", c.s, c.v, got, c.want)
		}
	}
}
