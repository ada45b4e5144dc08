package pickfirst

import (
	"github.com/lbkit/lbkit/lb"
)

// readyPicker returns one READY SubConn. Its result is built once, so Pick
// neither allocates nor blocks.
type readyPicker struct {
	result lb.PickResult
}

func newReadyPicker(sc lb.SubConn) *readyPicker {
	return &readyPicker{result: lb.PickResult{SubConn: sc}}
}

// Pick returns the READY SubConn.
func (p *readyPicker) Pick(lb.PickInfo) (lb.PickResult, error) { return p.result, nil }
