package xds

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest"
	"pgregory.net/rapid"
)

// logWatcher appends "name:event" to a log the test reads inside the
// client's serializer.
type logWatcher struct {
	name string
	log  *[]string
}

func (w logWatcher) update(any)   { *w.log = append(*w.log, w.name+":update") }
func (w logWatcher) failed(error) { *w.log = append(*w.log, w.name+":failed") }
func (w logWatcher) missing()     { *w.log = append(*w.log, w.name+":missing") }

// fallbackMachine drives a client with one to three servers whose streams
// the test plays (no network): it makes them up, fail, end after
// responses and answer, and lets backoffs pass, and checks after every
// step what gRFC A71 says of fallback.
type fallbackMachine struct {
	c       *client
	clk     *clock.Mock
	subs    []*subscription
	log     []string // watcher callbacks, owned by the serializer
	version int
	watched bool // something was watched: the first stream started
}

func (m *fallbackMachine) do(t *rapid.T, f func()) { t.Helper(); runInClient(t, m.c, f) }

// inUse returns the indexes of the servers in use.
func (m *fallbackMachine) inUse() []int {
	var out []int
	for _, sc := range m.c.conns {
		if sc.inUse() {
			out = append(out, sc.index)
		}
	}
	return out
}

// step runs f, a server's or a watcher's event, inside the serializer
// and checks what it may have done: a server after the first comes into
// use only as a fallback (every server before it unreachable and a
// watched resource not cached), and when the stream of server ended (-1:
// none) ends, watchers hear of it only if no other server in use may
// serve (a new watcher is told the last failure at once, as before).
func (m *fallbackMachine) step(t *rapid.T, what string, ended int, f func()) {
	t.Helper()
	var problems []string
	m.do(t, func() {
		before, uncached := m.inUse(), m.c.uncached()
		m.log = m.log[:0]
		f()
		for _, i := range m.inUse() {
			if i > 0 && !slices.Contains(before, i) && !uncached {
				problems = append(problems, fmt.Sprintf("server %d came into use with every watched resource cached", i))
			}
		}
		if ended < 0 {
			return
		}
		for _, e := range m.log {
			if strings.HasSuffix(e, ":failed") && slices.ContainsFunc(m.c.conns, func(sc *serverConn) bool { return sc.index != ended && sc.inUse() && !sc.down }) {
				problems = append(problems, fmt.Sprintf("a watcher heard %q while a server in use may serve", e))
			}
		}
	})
	t.Log(what)
	if len(problems) > 0 {
		t.Fatalf("%s: %s", what, strings.Join(problems, "; "))
	}
}

// Check holds after every step.
func (m *fallbackMachine) Check(t *rapid.T) { checkClient(t, m.c, m.invariants) }

func (m *fallbackMachine) invariants() []string {
	c := m.c
	var problems []string
	// The first server, once a watch started it, is never given up
	// ("connecting to the
	// lower-priority servers does not close gRPC connections to the
	// higher-priority servers").
	if !c.conns[0].inUse() && m.watched {
		problems = append(problems, fmt.Sprintf("the first server is not in use: %v", m.inUse()))
	}
	// A later server is in use only while every one before it is
	// unreachable: the first answer of an earlier one closes it.
	for _, sc := range c.conns[1:] {
		if !sc.inUse() {
			continue
		}
		for _, before := range c.conns[:sc.index] {
			if !before.down {
				problems = append(problems, fmt.Sprintf("server %d in use while server %d, before it, is not known unreachable", sc.index, before.index))
			}
		}
	}
	if !c.conns[c.source].inUse() && m.watched {
		problems = append(problems, fmt.Sprintf("the source, server %d, is not in use", c.source))
	}
	// Every live stream asks for everything watched.
	watched := slices.Sorted(maps.Keys(c.types[ClusterType].resources))
	for _, sc := range c.conns {
		if !sc.live {
			continue
		}
		for _, req := range c.requests(sc.stream) {
			if req.TypeUrl == ClusterType && !slices.Equal(req.ResourceNames, watched) {
				problems = append(problems, fmt.Sprintf("server %d was asked for %v, want %v", sc.index, req.ResourceNames, watched))
			}
		}
	}
	return problems
}

// stream returns server i's current stream, or nil.
func (m *fallbackMachine) stream(t *rapid.T, i int) (s *adsStream, live bool) {
	m.do(t, func() { s, live = m.c.conns[i].stream, m.c.conns[i].live })
	return s, live
}

func TestPropertyFallback(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		servers := rapid.IntRange(1, 3).Draw(t, "servers")
		var scs []serverConfig
		for i := range servers {
			scs = append(scs, serverConfig{Server{URI: "server-" + strconv.Itoa(i)}, insecureDial})
		}
		clk := clock.NewMock()
		c, err := newClient(clientConfig{
			servers:         scs,
			node:            &corev3.Node{Id: "n"},
			clock:           clk,
			logger:          slog.New(slog.DiscardHandler),
			backoff:         backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, MaxDelay: 10 * time.Second},
			resourceTimeout: time.Hour, // the model leaves the does-not-exist timer out
			runStream:       func(*adsStream) {},
		}, clusterResource)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		m := &fallbackMachine{c: c, clk: clk}
		names := []string{"a", "b", "c"}
		server := rapid.IntRange(0, servers-1)
		t.Repeat(map[string]func(*rapid.T){
			"": m.Check,
			"watch": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				m.step(t, "watch "+name, -1, func() {
					m.subs = append(m.subs, c.watch(ClusterType, name, logWatcher{name, &m.log}, nil))
					m.watched = true
				})
			},
			"cancel": func(t *rapid.T) {
				if len(m.subs) == 0 {
					t.Skip("no subscription")
				}
				i := rapid.IntRange(0, len(m.subs)-1).Draw(t, "sub")
				sub := m.subs[i]
				m.subs = slices.Delete(m.subs, i, i+1)
				m.step(t, "cancel "+sub.name, -1, sub.cancel)
			},
			"up": func(t *rapid.T) {
				i := server.Draw(t, "server")
				s, live := m.stream(t, i)
				if s == nil || live {
					t.Skip("no stream being made")
				}
				m.step(t, fmt.Sprintf("server %d: stream up", i), -1, func() { c.streamUp(s) })
			},
			"end": func(t *rapid.T) {
				i := server.Draw(t, "server")
				s, _ := m.stream(t, i)
				if s == nil {
					t.Skip("no stream")
				}
				m.step(t, fmt.Sprintf("server %d (received %v): stream ends", i, s.received), i, func() {
					c.streamEnded(s, errors.New("unreachable"))
				})
			},
			"respond": func(t *rapid.T) {
				i := server.Draw(t, "server")
				s, live := m.stream(t, i)
				if !live {
					t.Skip("no live stream")
				}
				sent := rapid.SliceOfDistinct(rapid.SampledFrom(names), func(s string) string { return s }).Draw(t, "clusters")
				m.version++
				resp := clusterResponse(t, strconv.Itoa(m.version), sent...)
				m.step(t, fmt.Sprintf("server %d: responds %v", i, sent), -1, func() { c.received(s, resp) })
			},
			"backoff passes": func(t *rapid.T) {
				next, ok := c.ser.NextDeadline()
				if !ok {
					t.Skip("no timer")
				}
				t.Log("backoff passes")
				lbtest.AdvanceSerializers(t, clk, next.Sub(clk.Now()), c.ser)
			},
		})
	})
}
