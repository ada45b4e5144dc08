package main

import (
	"fmt"
	"strings"
	"time"
)

// outlierMonitor is the demo's [demo.Monitor]: it follows the backend
// the script makes fail through its ejection and return, the health
// checks' verdicts, and whether priority 0's shares are off. The script's
// steps and the runner call it on one goroutine.
type outlierMonitor struct {
	log    *odLog
	nameOf map[string]string // address → backend name; read-only
	ow     *outlierWatch     // nil until a backend fails
	// disturbed is whether the current second's shares are off; hanging,
	// whether a backend hangs; calming, the seconds left to settle after
	// it answers again.
	disturbed, hanging bool
	calming            int
}

// failing starts following name, which begins answering 503.
func (m *outlierMonitor) failing(name string) {
	m.ow = &outlierWatch{name: name, start: time.Now()}
	m.disturbed = true
}

// recovered notes that the failing backend answers 200 again.
func (m *outlierMonitor) recovered() {
	if m.ow != nil {
		m.ow.healthy = true
	}
}

// hangs notes that a backend hangs; answers, that it answers again.
func (m *outlierMonitor) hangs()   { m.hanging, m.disturbed = true, true }
func (m *outlierMonitor) answers() { m.hanging, m.calming = false, 2 }

// Tick takes the events logged since the last call and says whether the
// second that ends was disturbed.
func (m *outlierMonitor) Tick() (string, bool) {
	events := m.events()
	disturbed := m.disturbed
	m.disturbed = m.ow.disturbed() || m.hanging || m.calming > 0
	m.calming = max(m.calming-1, 0)
	return events, disturbed
}

// Notes says what became of the failing backend.
func (m *outlierMonitor) Notes() []string {
	o := m.result()
	switch {
	case o.Backend == "":
		return nil
	case !o.Ejected:
		return []string{fmt.Sprintf("outlier detection: %s answered 503 but was not ejected", o.Backend)}
	case o.Back:
		return []string{fmt.Sprintf("outlier detection: %s ejected %v after it began answering 503, back in service %v later",
			o.Backend, o.EjectedAfter.Round(time.Millisecond), o.OutFor.Round(time.Millisecond))}
	default:
		return []string{fmt.Sprintf("outlier detection: %s ejected %v after it began answering 503, not back by the end",
			o.Backend, o.EjectedAfter.Round(time.Millisecond))}
	}
}

// result is what became of the failing backend; zero for a nil monitor.
func (m *outlierMonitor) result() outlierResult {
	if m == nil {
		return outlierResult{}
	}
	return m.ow.result()
}

// events takes the ejections and returns logged since the last call,
// updates the failing backend's watch, and describes them for the table
// ("outlier detection ejects primary-b2"), each naming the mechanism that
// speaks, so that a row never seems to say one thing twice.
func (m *outlierMonitor) events() string {
	var labels []string
	for _, ev := range m.log.take() {
		name := m.nameOf[ev.addr]
		if name == "" {
			name = ev.addr
		}
		switch {
		case ev.health == "unhealthy":
			labels = append(labels, "health check drains "+name)
			continue
		case ev.health == "healthy":
			labels = append(labels, "health check returns "+name)
			continue
		case ev.ejected:
			labels = append(labels, "outlier detection ejects "+name)
		default:
			labels = append(labels, "outlier detection returns "+name)
		}
		w := m.ow
		if w == nil || name != w.name {
			continue
		}
		w.ejected = ev.ejected
		switch {
		case ev.ejected && w.firstEjection.IsZero():
			w.firstEjection = ev.at
		case !ev.ejected:
			w.lastReturn = ev.at
		}
	}
	return strings.Join(labels, "; ")
}
