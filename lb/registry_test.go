package lb_test

import (
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// wantPanic calls f and checks that it panics with a message containing
// want.
func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Errorf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

// Registering nil panics with a message that names the mistake, at the
// registration, not a nil-pointer dereference (issue 28).
func TestRegisterNilNamesTheMistake(t *testing.T) {
	wantPanic(t, "lb: Register: nil Builder", func() { lb.Register(nil) })
	wantPanic(t, "lb: Register: nil Builder", func() { lb.NewRegistry().Register(nil) })
	wantPanic(t, "lb: NewRegistry: builder 1 of 1 is nil", func() { lb.NewRegistry(nil) })
}
