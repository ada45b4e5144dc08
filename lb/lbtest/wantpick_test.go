package lbtest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// WantQueue, WantTransientFailure and PickErr check the last picker's
// pick error, and report a picker that says otherwise.
func TestWantPickErrors(t *testing.T) {
	tb := &fatalTB{T: t}
	h := lbtest.New(tb)
	h.Build(roundrobin.Builder{})
	if err := h.UpdateAddresses(nil, resolver.Address{Addr: "a"}); err != nil {
		t.Fatal(err)
	}
	h.WantQueue() // CONNECTING
	if msg := tb.fatal(func() { h.WantTransientFailure() }); !strings.Contains(msg, "want TRANSIENT_FAILURE") {
		t.Errorf("WantTransientFailure on CONNECTING reported %q", msg)
	}
	refused := errors.New("refused")
	h.SubConn(0).Fail(refused)
	h.WantTransientFailure(refused)
	if msg := tb.fatal(func() { h.WantTransientFailure(errors.New("other")) }); !strings.Contains(msg, "does not match") {
		t.Errorf("WantTransientFailure(other) reported %q", msg)
	}
	if msg := tb.fatal(h.WantQueue); !strings.Contains(msg, "want ErrNoSubConnAvailable") {
		t.Errorf("WantQueue on TRANSIENT_FAILURE reported %q", msg)
	}
	h.SubConn(0).Ready()
	if msg := tb.fatal(func() { h.PickErr() }); !strings.Contains(msg, "want an error") {
		t.Errorf("PickErr on READY reported %q", msg)
	}
}
