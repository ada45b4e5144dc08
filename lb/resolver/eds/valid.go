package eds

import "errors"

// Valid is an assignment that [ClusterLoadAssignment.Validate] accepted,
// made by [Check], for [Namer.ConvertValid], which converts it without
// checking it again: a source that must check each assignment as it
// arrives, to accept or refuse it (an xDS client ACKs or NACKs it), and
// converts it later, pays for the check once. For an assignment of 10,000
// endpoints the check costs about 1 to 2 ms and 0.8 MB, the conversion's
// own work about 3 ms.
//
// A Valid shares its assignment with the caller of Check, which must not
// change it afterwards; this package only reads it. The zero Valid holds
// no assignment. A Valid is safe for concurrent use.
type Valid struct{ cla *ClusterLoadAssignment }

// Check checks cla with [ClusterLoadAssignment.Validate] and, when it is
// valid, returns it as a [Valid]; the error is Validate's (or one saying
// that cla is nil). cla must not change after Check accepts it.
func Check(cla *ClusterLoadAssignment) (Valid, error) {
	if cla == nil {
		return Valid{}, errors.New("eds: no assignment (nil)")
	}
	if err := cla.Validate(); err != nil {
		return Valid{}, err
	}
	return Valid{cla}, nil
}

// Assignment returns the assignment v holds, nil for the zero Valid. It
// must not be changed.
func (v Valid) Assignment() *ClusterLoadAssignment { return v.cla }

// ConvertValid is [Namer.Convert] for an assignment that [Check] accepted:
// the same result, without checking the assignment again. The zero Valid
// is an error, and leaves n unchanged.
func (n *Namer) ConvertValid(v Valid, p Policies) (Conversion, error) {
	if v.cla == nil {
		return Conversion{}, errors.New("eds: ConvertValid: the zero Valid holds no assignment")
	}
	st, d, err := n.stateOfValid(v.cla, p)
	return conversion(st, d, err)
}
