package pickfirst_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
)

var shuffle = pickfirst.Config{ShuffleAddressList: true}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.0.%d:80", i)
	}
	return out
}

// passOrder fails each SubConn the pass connects, from the first created at
// index from, until the pass ends, and returns the addresses in the order
// they were tried.
func passOrder(t *testing.T, e *env, from, n int) []string {
	t.Helper()
	var order []string
	for i := range n {
		sc := e.h.SubConn(from + i)
		order = append(order, sc.Addresses()[0].Addr)
		sc.Fail(errors.New("down"))
	}
	if s := e.h.State().ConnectivityState; s != lb.TransientFailure {
		t.Fatalf("state %v after failing %d addresses, want TRANSIENT_FAILURE", s, n)
	}
	return order
}

func TestShuffleIsPermutationAndDeterministic(t *testing.T) {
	list := names(8)
	run := func(seed uint64) []string {
		e := newEnv(t, lbtest.WithSeed(seed))
		if err := e.update(shuffle, list...); err != nil {
			t.Fatal(err)
		}
		return passOrder(t, e, 0, len(list))
	}
	first := run(7)
	if !slices.Equal(slices.Sorted(slices.Values(first)), slices.Sorted(slices.Values(list))) {
		t.Fatalf("order %v is not a permutation of %v", first, list)
	}
	if again := run(7); !slices.Equal(first, again) {
		t.Fatalf("seed 7 gave %v, then %v", first, again)
	}
	differs := false
	for seed := uint64(8); seed < 12 && !differs; seed++ {
		differs = !slices.Equal(first, run(seed))
	}
	if !differs {
		t.Fatalf("seeds 7 to 11 all gave %v; the list is not being shuffled", first)
	}
}

// Every update is shuffled anew, not only the first: while CONNECTING, each
// update restarts the pass and connects its new first address.
func TestShuffleOnEveryUpdate(t *testing.T) {
	list := names(8)
	e := newEnv(t)
	firsts := map[string]int{}
	for range 20 {
		if err := e.update(shuffle, list...); err != nil {
			t.Fatal(err)
		}
		sc, ok := e.h.CC.Connects.Last()
		if !ok {
			t.Fatal("no Connect after an update")
		}
		firsts[sc.Addresses()[0].Addr]++
	}
	if len(firsts) < 2 {
		t.Fatalf("20 shuffled updates all started with the same address: %v", firsts)
	}
}

func TestNoShuffleKeepsOrder(t *testing.T) {
	list := names(6)
	e := newEnv(t)
	if err := e.update(pickfirst.Config{}, list...); err != nil {
		t.Fatal(err)
	}
	if got := passOrder(t, e, 0, len(list)); !slices.Equal(got, list) {
		t.Fatalf("tried %v, want the resolver's order %v", got, list)
	}
}

// Over many fixed seeds, each address comes first about equally often. The
// seeds are fixed, so the test is deterministic; the bound is the chi-square
// critical value for p = 0.001.
func TestShuffleIsUniform(t *testing.T) {
	const (
		n     = 5
		seeds = 2000
		// chi-square, 4 degrees of freedom, p = 0.001.
		critical = 18.467
	)
	list := names(n)
	counts := map[string]int{}
	for seed := range uint64(seeds) {
		e := newEnv(t, lbtest.WithSeed(seed))
		if err := e.update(shuffle, list...); err != nil {
			t.Fatal(err)
		}
		counts[e.h.SubConn(0).Addresses()[0].Addr]++
	}
	expected := float64(seeds) / n
	chi2 := 0.0
	for _, a := range list {
		d := float64(counts[a]) - expected
		chi2 += d * d / expected
	}
	t.Logf("first-address counts %v, chi-square %.2f", counts, chi2)
	if chi2 > critical {
		t.Fatalf("first-address counts %v: chi-square %.2f > %.2f", counts, chi2, critical)
	}
}

// gRFC A62 put the shuffleAddressList knob behind the temporary environment
// variable GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG while it was being built.
// lbkit has no such guard: the knob is always parsed and always honoured, even
// when the variable says "false" (docs/conformance.md, A62 row 17).
func TestShuffleIgnoresExperimentalEnvironmentVariable(t *testing.T) {
	for _, value := range []string{"false", "true", ""} {
		t.Setenv("GRPC_EXPERIMENTAL_PICKFIRST_LB_CONFIG", value)
		p, err := lb.ParseLoadBalancingConfig([]byte(`[{"pick_first": {"shuffleAddressList": true}}]`))
		if err != nil || p.Config != shuffle {
			t.Fatalf("with the variable %q: ParseLoadBalancingConfig = %+v, %v; want pick_first with %+v", value, p, err, shuffle)
		}
		list := names(8)
		orders := map[string]bool{}
		for seed := uint64(1); seed <= 5; seed++ {
			e := newEnv(t, lbtest.WithSeed(seed))
			if err := e.update(p.Config.(pickfirst.Config), list...); err != nil {
				t.Fatal(err)
			}
			orders[fmt.Sprint(passOrder(t, e, 0, len(list)))] = true
		}
		if len(orders) == 1 {
			t.Fatalf("with the variable %q, seeds 1 to 5 all tried the addresses in one order: the list is not being shuffled", value)
		}
	}
}
