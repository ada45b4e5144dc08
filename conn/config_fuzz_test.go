package conn

import (
	"errors"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// parseServiceConfig never panics; its errors say "service config"; and an
// accepted config parses again to the same policy.
func FuzzParseServiceConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"loadBalancingConfig":[{"pick_first":{}}]}`, `{"loadBalancingPolicy":"weighted_round_robin"}`,
		`{"loadBalancingConfig":[{"nope":{}},{"weighted_round_robin":{"randomStart":true}}]}`,
		`{"loadBalancingConfig":[]}`, `{"loadBalancingPolicy":"nope"}`, `[]`, `null`, `{"loadBalancingConfig":[{"pick_first":{"shuffleAddressList":"yes"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sc, err := parseServiceConfig(raw, lb.DefaultRegistry(), false)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "service config") {
				t.Fatalf("parseServiceConfig(%q) error %q does not say it is about the service config", raw, err)
			}
			var ce *lb.ConfigError
			if strings.Contains(err.Error(), "loadBalancingConfig") && !errors.As(err, &ce) {
				t.Fatalf("parseServiceConfig(%q) error %q is not an *lb.ConfigError", raw, err)
			}
			return
		}
		again, err := parseServiceConfig(raw, lb.DefaultRegistry(), false)
		if err != nil || (sc.policy == nil) != (again.policy == nil) || (sc.policy != nil && sc.policy.Name != again.policy.Name) {
			t.Fatalf("parseServiceConfig(%q) is not deterministic: %+v then %+v, %v", raw, sc, again, err)
		}
	})
}
