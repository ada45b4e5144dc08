// Package option applies functional options, checking that none is nil:
// a nil option names its position instead of dereferencing nil.
package option

import "fmt"

// Apply applies opts to cfg in order, each with apply (the option type's
// own method, as a method expression such as Option.apply), and returns
// the first refusal, or nil. A nil option is refused before any is
// applied ([CheckNil]).
func Apply[C, O any](cfg *C, opts []O, apply func(O, *C) error) error {
	if err := CheckNil(opts); err != nil {
		return err
	}
	for _, o := range opts {
		if err := apply(o, cfg); err != nil {
			return err
		}
	}
	return nil
}

// CheckNil returns an error naming the first nil option of opts ("option
// 2 of 3 is nil"), or nil when there is none. O is an interface type: a
// nil option is one whose interface value is nil.
func CheckNil[O any](opts []O) error {
	for i, o := range opts {
		if any(o) == nil {
			return fmt.Errorf("option %d of %d is nil", i+1, len(opts))
		}
	}
	return nil
}

// MustNotBeNil panics, naming fn (such as "priority.NewBuilder") and the
// position, if an option of opts is nil: for constructors that return no
// error, where a nil option is a programming mistake like a registration's.
func MustNotBeNil[O any](fn string, opts []O) {
	if err := CheckNil(opts); err != nil {
		panic(fn + ": " + err.Error())
	}
}
