package edf_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/lbkit/lbkit/lb/edf"
)

func Example() {
	s, err := edf.New([]edf.Entry[string]{
		{Item: "a", Weight: 3},
		{Item: "b", Weight: 2},
		{Item: "c", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	// Deadlines: a at 1/3 2/3 1, b at 1/2 1, c at 1; ties go to the
	// earlier entry. The pattern repeats every Period() = 6 picks.
	for range 2 * s.Period() {
		fmt.Print(s.Pick(), " ")
	}
	fmt.Println()
	// Output: a b a a b c a b a a b c
}

// A policy keeps the schedule going across updates with NewFrom. Here c's
// weight goes from 1 to 3 after a (deadline 1/3) and b (1/2) were picked:
// the schedule continues after 1/2 on the new grids (a and c at 2/3, then
// a, b, c at 1) instead of restarting at the heaviest entry.
func ExampleNewFrom() {
	s, _ := edf.New([]edf.Entry[string]{{Item: "a", Weight: 3}, {Item: "b", Weight: 2}, {Item: "c", Weight: 1}})
	fmt.Print(s.Pick(), " ", s.Pick(), " | ")
	s, _ = edf.NewFrom(s, []edf.Entry[string]{{Item: "a", Weight: 3}, {Item: "b", Weight: 2}, {Item: "c", Weight: 3}})
	for range 2 * s.Period() {
		fmt.Print(s.Pick(), " ")
	}
	fmt.Println()
	// Output: a b | a c a b c a c b a c a b c a c b
}

func ExampleWithRandomStart() {
	entries := []edf.Entry[string]{{Item: "a", Weight: 3}, {Item: "b", Weight: 1}}
	s, _ := edf.New(entries, edf.WithRandomStart(rand.New(rand.NewPCG(1, 2))))
	// The first pick is a with probability 3/4; the order is the usual
	// a a a b, started somewhere in the middle.
	for range 8 {
		fmt.Print(s.Pick(), " ")
	}
	fmt.Println()
}

func ExampleScheduler_String() {
	s, _ := edf.New([]edf.Entry[string]{{Item: "a", Weight: 20}, {Item: "b", Weight: 10}})
	s.Pick()
	fmt.Println(s)
	// Output: edf(n=2 period=3 pos=1 table)[a:20 b:10]
}
