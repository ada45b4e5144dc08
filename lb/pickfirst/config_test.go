package pickfirst_test

import (
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    pickfirst.Config
		errPath string // when non-empty or errAt is set, an error is wanted
		errAt   bool
	}{
		{in: ``},
		{in: `null`},
		{in: `{}`},
		{in: ` {"shuffleAddressList": true} `, want: shuffle},
		{in: `{"shuffleAddressList": false}`},
		{in: `{"shuffleAddressList": null}`},
		{in: `{"shuffle_address_list": true}`, want: shuffle},
		{in: `{"somethingNew": [1, 2], "shuffleAddressList": true}`, want: shuffle},
		{in: `{"ShuffleAddressList": true}`}, // names are case-sensitive; unknown field
		{in: `{"shuffleAddressList": "true"}`, errPath: "shuffleAddressList"},
		{in: `{"shuffleAddressList": 1}`, errPath: "shuffleAddressList"},
		{in: `{"shuffle_address_list": {}}`, errPath: "shuffle_address_list"},
		{in: `[]`, errAt: true},
		{in: `true`, errAt: true},
		{in: `{"shuffleAddressList": tru}`, errAt: true},
	} {
		cfg, _, err := pickfirst.Builder{}.ParseConfig([]byte(tc.in))
		if tc.errPath == "" && !tc.errAt {
			if err != nil || cfg != tc.want {
				t.Errorf("ParseConfig(%s) = %#v, %v; want %#v, nil", tc.in, cfg, err, tc.want)
			}
			continue
		}
		lbtest.WantConfigError(t, fmt.Sprintf("ParseConfig(%s) = %#v", tc.in, cfg), err, tc.errPath)
	}
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
