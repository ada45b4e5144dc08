package grpcgo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
)

// Pick errors do in grpc-go what lbkit's contract says: a drop fails every
// RPC; a transient failure, or an unmarked error (even a grpc-go status
// error), fails RPCs that are not wait-for-ready with UNAVAILABLE and the
// message, and makes wait-for-ready RPCs wait.
func TestPickErrorsInGRPC(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		waitFails bool   // a wait-for-ready RPC fails at once
		prefix    string // what the error's message has before the policy's
	}{
		{kind: "drop", waitFails: true},
		{kind: "tf"},
		{kind: "status", prefix: "rpc error: code = Internal desc = "},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			cfg := fmt.Sprintf(`{"loadBalancingConfig": [{%q: {"kind": %q, "message": "probe says no"}}]}`, fixedName, tc.kind)
			msg := tc.prefix + "probe says no"
			c := newClient(t, resolver.State{Addresses: []resolver.Address{{Addr: "127.0.0.1:1"}}}, cfg)
			c.waitForState(t, connectivity.TransientFailure)

			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			_, err := c.who(ctx)
			if st, _ := status.FromError(err); st.Code() != codes.Unavailable || st.Message() != msg {
				t.Errorf("RPC: got %v, want code Unavailable and message %q", err, msg)
			}

			wait := hangGuard
			if !tc.waitFails {
				wait = 50 * time.Millisecond
			}
			ctx, cancel = context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, err = c.who(ctx, grpc.WaitForReady(true))
			st, _ := status.FromError(err)
			if tc.waitFails {
				if st.Code() != codes.Unavailable || st.Message() != msg {
					t.Errorf("wait-for-ready RPC: got %v, want code Unavailable and message %q at once", err, msg)
				}
				return
			}
			// grpc-go ends a waiting RPC with the last picker error.
			if st.Code() != codes.DeadlineExceeded || !strings.Contains(st.Message(), msg) {
				t.Errorf("wait-for-ready RPC: got %v, want it to wait until its deadline, naming %q", err, msg)
			}
		})
	}
}
