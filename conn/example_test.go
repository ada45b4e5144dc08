package conn_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// A channel over three local TCP servers, balanced by round_robin given as
// a typed config: once all three are connected, six picks take each
// address twice.
func Example() {
	addrs, stop := listeners(3)
	defer stop()

	ch, err := conn.New("static:///"+strings.Join(addrs, ","),
		conn.WithDefaultPolicy(roundrobin.Config{})) // or WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()

	ctx := context.Background()
	pick := func() string {
		r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err != nil {
			return err.Error()
		}
		if r.Done != nil {
			r.Done(lb.DoneInfo{})
		}
		return r.SubConn.Address().Addr
	}
	// Wait until every server is connected, so the output is stable.
	for seen := map[string]bool{}; len(seen) < 3; {
		seen[pick()] = true
	}
	count := map[string]int{}
	for range 6 {
		count[pick()]++
	}
	fmt.Println(ch.State(), slices.Sorted(maps.Values(count)))
	// Output: READY [2 2 2]
}

// A typed config is checked by the same parser as its JSON: the mistake is
// New's error, with the same JSON path.
func ExampleWithDefaultPolicy() {
	_, typedErr := conn.New("static:///127.0.0.1:1", conn.WithDefaultPolicy(outlierdetection.Policy{
		Detection: outlierdetection.Detection{
			FailurePercentageEjection: &outlierdetection.FailurePercentageEjection{Threshold: 150},
		},
		ChildPolicy: roundrobin.Config{},
	}))
	_, jsonErr := conn.New("static:///127.0.0.1:1", conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[
		{"outlier_detection_experimental": {"failurePercentageEjection": {"threshold": 150}, "childPolicy": [{"round_robin": {}}]}}]}`))
	fmt.Println(typedErr)
	fmt.Println(jsonErr)
	// Output:
	// conn: WithDefaultPolicy: service config: loadBalancingConfig[0].outlier_detection_experimental.failurePercentageEjection.threshold: must be <= 100, got 150
	// conn: WithDefaultServiceConfig: service config: loadBalancingConfig[0].outlier_detection_experimental.failurePercentageEjection.threshold: must be <= 100, got 150
}

// listeners starts n local TCP servers that accept connections and close
// them, and returns their addresses and a function that stops them.
func listeners(n int) (addrs []string, stop func()) {
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, func() {
		for _, l := range ls {
			l.Close()
		}
	}
}
