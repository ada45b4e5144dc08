package outlierdetection

import (
	"fmt"
	"strings"
)

// The algorithms, as indexes of [odBalancer.cannotEject].
const (
	algSuccessRate = iota
	algFailurePercentage
	algCount
)

// algNames are the algorithms' config fields, by index.
var algNames = [algCount]string{"successRateEjection", "failurePercentageEjection"}

// Why an algorithm cannot eject, as kept in [odBalancer.cannotEject].
const (
	canEject      = iota // it can
	tooFewHosts          // minimumHosts above the number of addresses
	tooFewVolumes        // fewer than minimumHosts addresses reached requestVolume
)

// ejectBlock is why one algorithm cannot eject now: its kind and the
// message that says so, empty when it can.
type ejectBlock struct {
	kind int
	msg  string
}

// checkHosts records, after an update, which configured algorithms cannot
// eject because minimumHosts is above the number of addresses; the others
// wait for the next sweep to say whether they ran.
func (b *odBalancer) checkHosts() {
	hosts := [algCount]uint32{}
	on := [algCount]bool{}
	if sr := b.cfg.SuccessRateEjection; sr != nil {
		hosts[algSuccessRate], on[algSuccessRate] = sr.MinimumHosts, true
	}
	if fp := b.cfg.FailurePercentageEjection; fp != nil {
		hosts[algFailurePercentage], on[algFailurePercentage] = fp.MinimumHosts, true
	}
	for alg := range algCount {
		if on[alg] && int64(hosts[alg]) > int64(len(b.order)) {
			b.blocked(alg, tooFewHosts, fmt.Sprintf("outlierdetection: %s cannot eject: minimumHosts is %d, but the tree has %d address(es)",
				algNames[alg], hosts[alg], len(b.order)))
			continue
		}
		b.blocked(alg, canEject, "")
	}
}

// ran records whether alg could judge the addresses in the sweep that
// just ran: it found candidates addresses with requestVolume calls, and
// needs minimumHosts of them.
func (b *odBalancer) ran(alg int, candidates int, minimumHosts, requestVolume uint32) {
	switch {
	case int64(minimumHosts) > int64(len(b.order)):
		b.checkHosts()
	case int64(candidates) < int64(minimumHosts) || candidates == 0:
		b.blocked(alg, tooFewVolumes, fmt.Sprintf("outlierdetection: %s did not run in the last interval: %d of %d addresses had requestVolume (%d) calls, and minimumHosts is %d",
			algNames[alg], candidates, len(b.order), requestVolume, minimumHosts))
	default:
		b.blocked(alg, canEject, "")
	}
}

// blocked sets why alg cannot eject (kind canEject: it can), logging each
// kind of reason at WARN the first time an algorithm meets it, so that a
// quiet service is not warned at every interval.
func (b *odBalancer) blocked(alg, kind int, msg string) {
	b.cannotEject[alg] = ejectBlock{kind: kind, msg: msg}
	if kind == canEject || b.warnedEject[alg][kind] {
		return
	}
	b.warnedEject[alg][kind] = true
	b.logger.Warn(msg)
}

// ejectWarning is the node's [lb.Node.Warning]: why the algorithms
// cannot eject now, empty when they can.
func (b *odBalancer) ejectWarning() string {
	var msgs []string
	for _, blk := range b.cannotEject {
		if blk.msg != "" {
			msgs = append(msgs, blk.msg)
		}
	}
	return strings.Join(msgs, "; ")
}
