package lb_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

func TestConnectivityStateString(t *testing.T) {
	for s, want := range map[lb.ConnectivityState]string{
		lb.Idle: "IDLE", lb.Connecting: "CONNECTING", lb.Ready: "READY",
		lb.TransientFailure: "TRANSIENT_FAILURE", lb.Shutdown: "SHUTDOWN", 7: "ConnectivityState(7)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(s), got, want)
		}
	}
}

func TestAggregateState(t *testing.T) {
	R, C, I, TF, S := lb.Ready, lb.Connecting, lb.Idle, lb.TransientFailure, lb.Shutdown
	for _, tc := range []struct {
		in   []lb.ConnectivityState
		want lb.ConnectivityState
	}{
		{nil, TF},
		{[]lb.ConnectivityState{TF, TF}, TF},
		{[]lb.ConnectivityState{TF, I}, I},
		{[]lb.ConnectivityState{I, C, TF}, C},
		{[]lb.ConnectivityState{C, R, I, TF}, R},
		{[]lb.ConnectivityState{S}, TF},
		{[]lb.ConnectivityState{S, I}, I},
	} {
		if got := lb.AggregateState(tc.in...); got != tc.want {
			t.Errorf("AggregateState(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	var c lb.StateCounter
	c.Add(R)
	c.Add(TF)
	c.Remove(R)
	c.Remove(R) // never below zero
	if got := c.Aggregate(); got != TF {
		t.Errorf("after removing READY: %v, want TRANSIENT_FAILURE", got)
	}
	if c.Count(R) != 0 || c.Count(TF) != 1 {
		t.Errorf("counts READY=%d TF=%d, want 0 and 1", c.Count(R), c.Count(TF))
	}
}

func TestClassifyPickError(t *testing.T) {
	cause := errors.New("connection refused")
	for _, tc := range []struct {
		err  error
		want lb.PickAction
	}{
		{lb.ErrNoSubConnAvailable, lb.PickQueue},
		{fmt.Errorf("wrapped: %w", lb.ErrNoSubConnAvailable), lb.PickQueue},
		{lb.TransientFailureError(cause), lb.PickFailUnlessWaitForReady},
		{lb.TransientFailureError(nil), lb.PickFailUnlessWaitForReady},
		{cause, lb.PickFailUnlessWaitForReady},
		{lb.DropError(cause), lb.PickFail},
		{lb.DropError(nil), lb.PickFail},
	} {
		if got := lb.ClassifyPickError(tc.err); got != tc.want {
			t.Errorf("ClassifyPickError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	tf := lb.TransientFailureError(cause)
	if !errors.Is(tf, cause) || !errors.Is(tf, lb.ErrTransientFailure) || tf.Error() != cause.Error() {
		t.Errorf("TransientFailureError(%v) = %v: must match both and keep the message", cause, tf)
	}
	if d := lb.DropError(cause); !errors.Is(d, lb.ErrDropped) || !errors.Is(d, cause) {
		t.Errorf("DropError does not match both sentinels")
	}
	if _, err := lb.NewQueuePicker().Pick(lb.PickInfo{}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Errorf("queue picker error = %v", err)
	}
	if _, err := lb.NewErrPicker(tf).Pick(lb.PickInfo{}); err != tf {
		t.Errorf("err picker error = %v, want %v", err, tf)
	}
}
