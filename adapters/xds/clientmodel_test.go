package xds

import (
	"context"
	"strings"

	"pgregory.net/rapid"
)

// runInClient runs f inside c's serializer and waits for it, failing t if
// it does not run within hangGuard: how the client's state machine tests
// (ads_model_test.go, fallback_model_test.go) reach the client's state.
func runInClient(t *rapid.T, c *client, f func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.ser.Run(ctx, f); err != nil {
		t.Fatal(err)
	}
}

// checkClient fails t with every problem invariants, run inside c's
// serializer, reports: the Check of those state machines.
func checkClient(t *rapid.T, c *client, invariants func() []string) {
	t.Helper()
	var problems []string
	runInClient(t, c, func() { problems = invariants() })
	if len(problems) > 0 {
		t.Fatalf("%s", strings.Join(problems, "; "))
	}
}
