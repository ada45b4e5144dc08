// Package option applies the functional options of the resolvers'
// builders, which may refuse their values.
package option

// Apply applies opts to cfg in order, each with apply (the option type's
// own method, as a method expression such as Option.apply), and returns
// the first refusal, or nil.
func Apply[C, O any](cfg *C, opts []O, apply func(O, *C) error) error {
	for _, o := range opts {
		if err := apply(o, cfg); err != nil {
			return err
		}
	}
	return nil
}
