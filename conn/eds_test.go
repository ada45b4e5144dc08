package conn_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// An assignment that leaves every priority without endpoints makes picks
// fail with the reason and the place, not only with the priority
// policy's "empty priority list" (issue 17).
func TestEDSEmptyTreePickErrorNamesTheReason(t *testing.T) {
	for _, tc := range []struct {
		name, cla, want string
	}{
		{"locality without weight",
			`{"cluster_name":"c","endpoints":[{"locality":{"zone":"a"},"lb_endpoints":[{"endpoint":{"address":{"socket_address":{"address":"127.0.0.1","port_value":1}}}}]}]}`,
			`priority 0 has no locality with a load_balancing_weight and an endpoint UNKNOWN or HEALTHY (endpoints[0] (locality "/a/", priority 0): no load_balancing_weight)`},
		{"no healthy endpoint",
			`{"cluster_name":"c","endpoints":[{"load_balancing_weight":1,"lb_endpoints":[{"health_status":"DRAINING","endpoint":{"address":{"socket_address":{"address":"127.0.0.1","port_value":1}}}}]}]}`,
			`endpoints[0] (locality "//", priority 0): no endpoint with health_status UNKNOWN or HEALTHY`},
		{"no endpoints", `{"cluster_name":"c"}`, "the assignment has no endpoints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "cla.json")
			if err := os.WriteFile(file, []byte(tc.cla), 0o600); err != nil {
				t.Fatal(err)
			}
			ch, err := conn.New("eds://"+file, conn.WithResolver(&eds.Builder{}))
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // guards against a hang only
			defer cancel()
			for {
				_, err := ch.Pick(ctx, conn.PickOptions{})
				if err == nil {
					t.Fatal("pick succeeded with no usable endpoint")
				}
				if strings.Contains(err.Error(), "priority policy has empty priority list: eds: file "+file+": no usable endpoint: ") &&
					strings.Contains(err.Error(), tc.want) {
					return
				}
				if ctx.Err() != nil {
					t.Fatalf("last pick error %q does not name %q", err, tc.want)
				}
			}
		})
	}
}
