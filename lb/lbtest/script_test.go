package lbtest_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestScript(t *testing.T) {
	h := lbtest.New(t)
	b := lbtest.NewScriptBuilder("test_script")
	h.Build(b)
	cfg, _, err := lb.ParseConfig(b, json.RawMessage(`{"id": "a", "subConn": true, "inline": "CONNECTING"}`))
	if err != nil {
		t.Fatal(err)
	}
	scripts := lbtest.NewScripts()
	if err := h.UpdateClientConnState(lb.ClientConnState{
		ResolverState:  resolver.State{Attributes: scripts.Attributes(attributes.Attributes{})},
		BalancerConfig: cfg,
	}); err != nil {
		t.Fatal(err)
	}
	s := scripts.Get("a")
	if s == nil || len(scripts.All()) != 1 || len(s.Updates()) != 1 {
		t.Fatalf("script a not recorded: %v", scripts.All())
	}
	if st := h.State(); st.ConnectivityState != lb.Connecting || st.Picker.(*lbtest.ScriptPicker).Token != "inline:a" {
		t.Fatalf("inline state %v, want CONNECTING from the inline picker", st.ConnectivityState)
	}
	var ready, failed *lbtest.ScriptPicker
	h.Do(func() { ready = s.Report(lb.Ready, "up") })
	if r, err := ready.Pick(lb.PickInfo{}); err != nil || r.SubConn != s.SubConn() || s.SubConn() == nil {
		t.Fatalf("READY picker: %v, %v; want the script's SubConn", r.SubConn, err)
	}
	h.Do(func() { failed = s.Report(lb.TransientFailure, "down") })
	if err := lb.FailureOf(failed); !errors.Is(err, lb.ErrTransientFailure) || err.Error() != "a: down" {
		t.Fatalf("TRANSIENT_FAILURE picker fails with %v, want the transient failure \"a: down\"", err)
	}
	if _, _, err := lb.ParseConfig(b, json.RawMessage(`{"inline": "SOMETIMES"}`)); err == nil {
		t.Fatal("an unknown inline state was accepted")
	}
}

func TestScriptSubConnsAndBuilder(t *testing.T) {
	t.Parallel()
	h := lbtest.New(t)
	scripts := lbtest.NewScripts()
	b := scripts.Builder("test_script")
	h.Build(b)
	if got := scripts.All(); len(got) != 1 || got[0].ID() != "" || scripts.Get("") != nil {
		t.Fatalf("built script not recorded at once (and by id only at its first update): %v", got)
	}
	cfg, _, err := lb.ParseConfig(b, json.RawMessage(`{"id": "a", "subConns": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "x:1"}, resolver.Address{Addr: "x:2"}); err != nil {
		t.Fatal(err)
	}
	s := scripts.Get("a")
	if s == nil || len(scripts.All()) != 1 {
		t.Fatalf("script a not recorded once: %v", scripts.All())
	}
	scs := h.CC.SubConns()
	if len(scs) != 2 || len(s.SubConns()) != 2 || s.SubConn() != s.SubConns()[0] || scs[1].Addresses()[0].Addr != "x:2" {
		t.Fatalf("SubConns %v, want one per address", scs)
	}
	scs[1].Ready()
	scs[1].Fail(lb.ErrTransientFailure)
	if got := s.Heard(s.SubConns()[1]); !slices.Equal(got, []lb.ConnectivityState{lb.Ready, lb.TransientFailure}) {
		t.Fatalf("heard %v", got)
	}
	h.Do(s.Close)
	if !scs[0].IsShutdown() || !scs[1].IsShutdown() {
		t.Fatal("Close left SubConns up")
	}
}
