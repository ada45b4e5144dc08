package outlierdetection

import "github.com/lbkit/lbkit/lb"

// picker delegates to the child's picker, hands the channel the real SubConn
// behind the child's wrapper, and, when counting, has the request's outcome
// counted for the wrapper's address.
//
// Pick is safe for concurrent use. When the child's result has no Done, a
// counting pick returns the wrapper's pre-built Done and allocates nothing;
// when the child has its own Done, the two are chained in one closure.
type picker struct {
	child    lb.Picker
	counting bool
}

// Pick calls the child's picker. Its errors are returned as they are.
func (p *picker) Pick(info lb.PickInfo) (lb.PickResult, error) {
	r, err := p.child.Pick(info)
	if err != nil {
		return r, err
	}
	w, ok := r.SubConn.(*subConn)
	if !ok {
		return r, nil // not one of ours: nothing to unwrap or count
	}
	r.SubConn = w.SubConn
	if p.counting {
		if childDone := r.Done; childDone != nil {
			r.Done = func(di lb.DoneInfo) {
				w.record(di)
				childDone(di)
			}
		} else {
			r.Done = w.record
		}
	}
	return r, nil
}
