package demo_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lbkit/lbkit/demo"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

// A one-second demo: traffic to two backends through a static:/// channel;
// at 0.5 s the script makes blue fail, and a watch times the last request
// blue served. The table and the summary go to out (here discarded).
func Example() {
	blue, err := httpbackend.Start("blue")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer blue.Stop()
	green, err := httpbackend.Start("green")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer green.Stop()
	s := &demo.Scenario{
		Name:     "example",
		Options:  demo.Options{Duration: time.Second, Rate: 100, SVGPath: "/dev/null"},
		Target:   "static:///" + blue.Addr() + "," + green.Addr(),
		Backends: []string{"blue", "green"},
		NameOf:   map[string]string{blue.Addr(): "blue", green.Addr(): "green"},
		Script: []demo.Step{{
			At:    500 * time.Millisecond,
			Label: "blue fails",
			Do:    func() error { blue.Stop(); return nil },
			Watches: []*demo.Watch{{
				Name: "blue's last request", Until: demo.LastRequestTo("blue"),
				Report: "blue served its last request %v after the step", Missing: "blue served none after the step",
			}},
		}},
	}
	sum, err := s.Run(context.Background(), io.Discard)
	if err != nil {
		fmt.Println(err)
		return
	}
	// How many requests a one-second run sends depends on the machine's
	// load; the watches it reports do not.
	fmt.Println(len(sum.Watches), "watch:", sum.Watches[0].Name)
	// Output:
	// 1 watch: blue's last request
}
