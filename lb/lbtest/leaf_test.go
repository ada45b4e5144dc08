package lbtest_test

import (
	"errors"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestLeafPolicy(t *testing.T) {
	h := lbtest.New(t)
	h.Build(lbtest.NewLeafBuilder("test_leaf"))
	if err := h.UpdateAddresses(nil, resolver.Address{Addr: "a:1"}, resolver.Address{Addr: "b:1"}); err != nil {
		t.Fatal(err)
	}
	scs := h.CC.SubConns()
	if len(scs) != 2 || scs[0].ConnectCount() != 1 || scs[1].ConnectCount() != 1 {
		t.Fatalf("want two SubConns, each connected once")
	}
	if st, _ := h.CC.LastState(); st.ConnectivityState != lb.Connecting {
		t.Fatalf("state %v, want CONNECTING", st.ConnectivityState)
	}
	scs[0].Ready()
	scs[1].Ready()
	st, _ := h.CC.LastState()
	counts, err := lbtest.CountPicks(st.Picker, 10)
	if err != nil || counts[scs[0]] != 5 || counts[scs[1]] != 5 {
		t.Fatalf("picks %v, %v; want 5 each", counts, err)
	}
	refused := errors.New("refused")
	scs[0].Fail(refused)
	scs[1].Fail(refused)
	st, _ = h.CC.LastState()
	if _, err := st.Picker.Pick(lb.PickInfo{}); st.ConnectivityState != lb.TransientFailure || !errors.Is(err, refused) {
		t.Fatalf("state %v, pick error %v; want TRANSIENT_FAILURE naming the connection error", st.ConnectivityState, err)
	}
	if h.CC.ResolveNows.Pending() != 2 {
		t.Fatalf("%d ResolveNow calls, want one per failure", h.CC.ResolveNows.Pending())
	}
	if err := h.UpdateAddresses(nil); !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("empty update = %v, want ErrBadResolverState", err)
	}
	if !scs[0].IsShutdown() || !scs[1].IsShutdown() {
		t.Fatalf("SubConns of removed addresses not shut down")
	}
}
