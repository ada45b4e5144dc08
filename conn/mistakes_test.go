package conn

import (
	"strings"
	"testing"
)

// A truncated service config is an error with the byte offset where the
// JSON ends and why, as an EDS file's is (issue 28), not "want a JSON
// object, got invalid JSON".
func TestTruncatedServiceConfigNamesTheOffset(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"loadBalancingConfig":[{"round_robin":{}}`, "invalid JSON at byte 42: "},
		{`{"loadBalancingConfig":[{"round_robin":{}}]`, "invalid JSON at byte 43: "},
		{`{"loadBalancingConfig" [`, "invalid JSON at byte 23: "},
		{"\n  {\"loadBalancingConfig\":", "invalid JSON at byte 26: "},
	} {
		_, err := New("test:///svc", WithResolver(&testResolver{}), WithDefaultServiceConfig(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %s = %v, want an error containing %q", tc.json, err, tc.want)
		}
	}
}
