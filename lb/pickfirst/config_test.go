package pickfirst_test

import (
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
)

func TestParseConfig(t *testing.T) {
	lbtest.CheckParseCases(t, pickfirst.Builder{}, []lbtest.ParseCase[pickfirst.Config]{
		{In: ``},
		{In: `null`},
		{In: `{}`},
		{In: ` {"shuffleAddressList": true} `, Want: shuffle},
		{In: `{"shuffleAddressList": false}`},
		{In: `{"shuffleAddressList": null}`},
		{In: `{"shuffle_address_list": true}`, Want: shuffle},
		{In: `{"somethingNew": [1, 2], "shuffleAddressList": true}`, Want: shuffle},
		{In: `{"ShuffleAddressList": true}`}, // names are case-sensitive; unknown field
		{In: `{"shuffleAddressList": "true"}`, ErrPath: "shuffleAddressList"},
		{In: `{"shuffleAddressList": 1}`, ErrPath: "shuffleAddressList"},
		{In: `{"shuffle_address_list": {}}`, ErrPath: "shuffle_address_list"},
		{In: `[]`, Err: true},
		{In: `true`, Err: true},
		{In: `{"shuffleAddressList": tru}`, Err: true},
	})
}

func TestConfigThroughRegistry(t *testing.T) {
	p, err := lb.ParseLoadBalancingConfig([]byte(`[{"pick_first": {"shuffleAddressList": true}}]`))
	if err != nil || p.Name != pickfirst.Name || p.Config != shuffle {
		t.Fatalf("ParseLoadBalancingConfig = %+v, %v; want pick_first with %+v", p, err, shuffle)
	}
	_, err = lb.ParseLoadBalancingConfig([]byte(`[{"pick_first": {"shuffleAddressList": 3}}]`))
	const want = `loadBalancingConfig[0].pick_first.shuffleAddressList: want bool, got number`
	if err == nil || err.Error() != want {
		t.Fatalf("bad config error %q, want %q", err, want)
	}

	h := lbtest.New(t)
	b, cfg := h.BuildPolicy(pickfirst.Name, `{"shuffleAddressList": true}`)
	if b == nil || cfg != shuffle {
		t.Fatalf("BuildPolicy = %v, %#v", b, cfg)
	}
}

// FuzzParseConfig checks that no input panics, that a rejected input's error
// is a *lb.ConfigError, and that parsing is deterministic.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"shuffleAddressList":true}`, `{"shuffleAddressList":"x"}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, _, ok := lbtest.CheckConfigParse(t, pickfirst.Builder{}, raw)
		if _, isConfig := cfg.(pickfirst.Config); ok && !isConfig {
			t.Fatalf("ParseConfig(%q) = %T, want pickfirst.Config", raw, cfg)
		}
	})
}

func ExampleBuilder_ParseConfig() {
	cfg, _, err := pickfirst.Builder{}.ParseConfig([]byte(`{"shuffleAddressList": true}`))
	fmt.Printf("%+v %v\n", cfg, err)
	_, _, err = pickfirst.Builder{}.ParseConfig([]byte(`{"shuffleAddressList": "yes"}`))
	fmt.Println(err)
	// Output:
	// {ShuffleAddressList:true} <nil>
	// shuffleAddressList: want bool, got string
}
