package lbtest

import "fmt"

// ExampleTB is a [TB] for runnable examples (func ExampleXxx), which get no
// *testing.T: Errorf prints the message, Fatalf panics with it, and
// Cleanup functions run, last registered first, when Finish is called.
// The zero value is ready to use:
//
//	t := &lbtest.ExampleTB{}
//	defer t.Finish()
//	h := lbtest.New(t)
//
// It is not safe for concurrent use.
type ExampleTB struct{ cleanups []func() }

var _ TB = (*ExampleTB)(nil)

// Helper does nothing.
func (t *ExampleTB) Helper() {}

// Errorf prints "error: " and the message to standard output, where the
// example's Output comment will show it.
func (t *ExampleTB) Errorf(format string, args ...any) {
	fmt.Printf("error: "+format+"\n", args...)
}

// Fatalf panics with the message.
func (t *ExampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Cleanup registers f to run at Finish.
func (t *ExampleTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

// Finish runs the registered cleanups, last registered first, and forgets
// them.
func (t *ExampleTB) Finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	t.cleanups = nil
}
