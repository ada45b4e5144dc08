package option_test

import (
	"strings"
	"testing"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

// wantPanic calls f and checks that it panics with want.
func wantPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r != want {
			t.Errorf("panic %v, want %q", r, want)
		}
	}()
	f()
}

// A nil option is the constructor's error, or its panic when it returns
// no error, naming the option's position: never a nil-pointer
// dereference (issue 28).
func TestNilOptionsNameTheirPosition(t *testing.T) {
	if _, err := dns.NewBuilder(dns.WithDefaultPort(80), nil); err == nil || err.Error() != "dns: NewBuilder: option 2 of 2 is nil" {
		t.Errorf("dns.NewBuilder: %v", err)
	}
	if _, err := eds.NewBuilder(nil); err == nil || err.Error() != "eds: NewBuilder: option 1 of 1 is nil" {
		t.Errorf("eds.NewBuilder: %v", err)
	}
	if _, err := edf.New([]edf.Entry[int]{{Item: 1, Weight: 1}}, nil); err == nil || err.Error() != "edf: option 1 of 1 is nil" {
		t.Errorf("edf.New: %v", err)
	}
	wantPanic(t, "priority.NewBuilder: option 1 of 1 is nil", func() { priority.NewBuilder(nil) })
	wantPanic(t, "manual.NewBuilder: option 1 of 1 is nil", func() { manual.NewBuilder("m", nil) })
	var set []string
	if err := option.Apply(&set, []func(*[]string) error{func(s *[]string) error { *s = append(*s, "a"); return nil }},
		func(o func(*[]string) error, s *[]string) error { return o(s) }); err != nil || strings.Join(set, "") != "a" {
		t.Errorf("Apply = %v, %v; want a applied", set, err)
	}
}

// Registering nil panics with a message that names the mistake, at the
// registration, not a nil-pointer dereference when the builder is first
// used (issue 28).
func TestRegisterNilNamesTheMistake(t *testing.T) {
	wantPanic(t, "lb: Register: nil Builder", func() { lb.Register(nil) })
	wantPanic(t, "lb: Register: nil Builder", func() { lb.NewRegistry().Register(nil) })
	wantPanic(t, "lb: NewRegistry: builder 1 of 1 is nil", func() { lb.NewRegistry(nil) })
	wantPanic(t, "resolver: Register: nil Builder", func() { resolver.Register(nil) })
}
