package resolver_test

import (
	"testing"

	"github.com/lbkit/lbkit/lb/resolver"
)

// Registering nil panics with a message that names the mistake, not a
// nil-pointer dereference (issue 28).
func TestRegisterNilNamesTheMistake(t *testing.T) {
	defer func() {
		if r := recover(); r != "resolver: Register: nil Builder" {
			t.Errorf("panic %v, want \"resolver: Register: nil Builder\"", r)
		}
	}()
	resolver.Register(nil)
}
