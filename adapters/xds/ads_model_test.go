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
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest"
	"google.golang.org/protobuf/types/known/anypb"
	"pgregory.net/rapid"
)

// The ADS model's resources are "name=value" (valid) or "name!why"
// (invalid because of why): the model is about the protocol's state
// machine, not about reading clusters, so its types decode these.
func decodeModelResource(raw []byte) (string, any, error) {
	if name, v, ok := strings.Cut(string(raw), "="); ok {
		return name, v, nil
	}
	name, why, _ := strings.Cut(string(raw), "!")
	return name, nil, errors.New(why)
}

var (
	modelCDS = &resourceType{url: ClusterType, kind: "cluster", wholeSet: true, decode: decodeModelResource}
	modelEDS = &resourceType{url: EndpointType, kind: "endpoints", decode: decodeModelResource}
)

// The model, written from the xDS protocol's text (state of the world
// over ADS) and gRFCs A27, A46, A53 and A57: what the client must have
// subscribed, accepted and told its watchers.

// mResource is a subscribed resource.
type mResource struct {
	watchers map[int]bool
	has      bool   // a valid value was received
	value    string // that value
	missing  bool   // known not to exist
	errWhy   string // why the last copy received was refused; "" if it was not
	timing   bool   // the does-not-exist timer runs
	deadline time.Time
}

func (r *mResource) unknown() bool { return !r.has && !r.missing && r.errWhy == "" }

// mType is one resource type's subscriptions and what the stream said.
type mType struct {
	url      string
	wholeSet bool
	res      map[string]*mResource
	version  string // the last version accepted
	nonce    string // the nonce of the last response on this stream
	nack     string // the error detail of the NACK due; "" for an ACK
	dirty    bool   // a request is due
	sent     bool   // a request of this type went on this stream
}

type mSub struct {
	url, name string
}

// adsModel is the expected state of the client and of its one stream.
type adsModel struct {
	types    map[string]*mType
	subs     map[int]mSub
	nextSub  int
	exists   bool // a stream is being made or is up
	live     bool // the stream is up
	received bool // the stream received a response
	retry    bool // a backoff is pending
	nodeSent bool
	connErr  bool
	ignore   bool // the server's ignore_resource_deletion
	expect   []string
}

func (m *adsModel) tell(r *mResource, event string) {
	for _, id := range slices.Sorted(maps.Keys(r.watchers)) {
		m.expect = append(m.expect, fmt.Sprintf("w%d:%s", id, event))
	}
}

// adsMachine drives a real client whose one stream the test plays, as
// TestPropertyFallback does: it calls the client's stream callbacks
// (streamUp, received, streamEnded) inside its serializer, runs its
// sender's part (requests, then startTimers once "sent") and checks every
// request against the model.
type adsMachine struct {
	c        *client
	clk      *clock.Mock
	m        *adsModel
	log      []string                        // watcher callbacks, owned by the serializer
	last     map[int]string                  // each watcher's last event compared
	inflight []*discoveryv3.DiscoveryRequest // built, not yet sent
	subs     map[int]*subscription           // by watcher id
	n        int                             // responses sent
}

type modelWatcher struct {
	id  int
	log *[]string
}

func (w modelWatcher) update(v any) {
	*w.log = append(*w.log, fmt.Sprintf("w%d:update=%v", w.id, v))
}
func (w modelWatcher) failed(error) { *w.log = append(*w.log, fmt.Sprintf("w%d:failed", w.id)) }
func (w modelWatcher) missing()     { *w.log = append(*w.log, fmt.Sprintf("w%d:missing", w.id)) }

func (a *adsMachine) do(t *rapid.T, f func()) { t.Helper(); runInClient(t, a.c, f) }

// step runs f inside the serializer, then what it scheduled, and compares
// what the watchers heard with what the model expects. An update that
// repeats a watcher's last event may be left out: a client need not tell
// a watcher of an unchanged resource.
func (a *adsMachine) step(t *rapid.T, what string, f func()) {
	t.Helper()
	t.Log(what)
	a.m.expect = nil
	a.do(t, func() { a.log = a.log[:0]; f() })
	a.do(t, func() {}) // the callbacks f scheduled
	var got []string
	a.do(t, func() { got = slices.Clone(a.log) })
	a.compare(t, what, got)
}

func (a *adsMachine) compare(t *rapid.T, what string, got []string) {
	t.Helper()
	want := slices.Clone(a.m.expect)
	// Drop the updates that repeat the watcher's last event, on both
	// sides, replaying each in order.
	filter := func(events []string, last map[int]string) []string {
		var out []string
		for _, e := range events {
			id, _ := strconv.Atoi(strings.TrimPrefix(e[:strings.Index(e, ":")], "w"))
			if strings.Contains(e, ":update=") && last[id] == e {
				continue
			}
			last[id] = e
			out = append(out, e)
		}
		return out
	}
	wl, gl := maps.Clone(a.last), maps.Clone(a.last)
	want, got = filter(want, wl), filter(got, gl)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Fatalf("%s: watchers heard %v, want %v", what, got, want)
	}
	a.last = wl
}

// Check holds after every step: the client's subscriptions, cache and
// timers are the model's, and a request due has woken the sender.
func (a *adsMachine) Check(t *rapid.T) { checkClient(t, a.c, a.invariants) }

func (a *adsMachine) invariants() []string {
	c, m := a.c, a.m
	var p []string
	sc := c.conns[0]
	if got := sc.stream != nil; got != m.exists {
		p = append(p, fmt.Sprintf("stream exists %v, want %v", got, m.exists))
	}
	if sc.live != m.live || (sc.retry != nil) != m.retry {
		p = append(p, fmt.Sprintf("live %v retry %v, want %v %v", sc.live, sc.retry != nil, m.live, m.retry))
	}
	for url, mt := range m.types {
		ts, w := c.types[url], sc.wire[url]
		if got, want := slices.Sorted(maps.Keys(ts.resources)), slices.Sorted(maps.Keys(mt.res)); !slices.Equal(got, want) {
			p = append(p, fmt.Sprintf("%s: subscribed %v, want %v", ts.rt.kind, got, want))
			continue
		}
		if w.version != mt.version {
			p = append(p, fmt.Sprintf("%s: accepted version %q, want %q", ts.rt.kind, w.version, mt.version))
		}
		if mt.dirty && m.live && len(sc.stream.wake) == 0 {
			p = append(p, fmt.Sprintf("%s: a request is due but the sender was not woken", ts.rt.kind))
		}
		for name, mr := range mt.res {
			r := ts.resources[name]
			got := fmt.Sprintf("has=%v value=%v missing=%v refused=%v timer=%v watchers=%d", r.has, r.value, r.missing, r.err != nil, r.timer != nil, len(r.watchers))
			var v any
			if mr.has {
				v = mr.value
			}
			want := fmt.Sprintf("has=%v value=%v missing=%v refused=%v timer=%v watchers=%d", mr.has, v, mr.missing, mr.errWhy != "", mr.timing, len(mr.watchers))
			if got != want {
				p = append(p, fmt.Sprintf("%s %q: %s, want %s", ts.rt.kind, name, got, want))
			}
			if mr.timing && !m.live {
				p = append(p, fmt.Sprintf("model: %s %q times while the stream is down", ts.rt.kind, name))
			}
		}
	}
	return p
}

func (m *adsModel) watch(id int, url, name string, now time.Time, timeout time.Duration) {
	mt := m.types[url]
	r := mt.res[name]
	if r == nil {
		// A resource kept subscribed without watchers gives way.
		for n, old := range mt.res {
			if len(old.watchers) == 0 {
				delete(mt.res, n)
			}
		}
		r = &mResource{watchers: map[int]bool{}}
		mt.res[name] = r
		mt.dirty = true
	} else if !mt.dirty && r.unknown() && !r.timing && m.live {
		// Its request went already: it is waited for from now.
		r.timing, r.deadline = true, now.Add(timeout)
	}
	r.watchers[id] = true
	m.subs[id] = mSub{url, name}
	if !m.exists && !m.retry {
		m.exists = true // the first watch starts the stream
	}
	event := ""
	switch {
	case r.has:
		event = "update=" + r.value
	case r.missing:
		event = "missing"
	case r.errWhy != "" || m.connErr:
		event = "failed"
	}
	if event != "" {
		m.expect = append(m.expect, fmt.Sprintf("w%d:%s", id, event))
	}
}

func (m *adsModel) cancel(id int) {
	s := m.subs[id]
	delete(m.subs, id)
	mt := m.types[s.url]
	r := mt.res[s.name]
	delete(r.watchers, id)
	if len(r.watchers) > 0 {
		return
	}
	r.timing = false
	if len(mt.res) == 1 && mt.sent {
		return // lbkit keeps the last one subscribed (no wildcard request)
	}
	delete(mt.res, s.name)
	mt.dirty = true
}

func (m *adsModel) up() {
	m.live, m.nodeSent = true, false
	for _, mt := range m.types {
		mt.nonce, mt.sent, mt.nack = "", false, ""
		mt.dirty = len(mt.res) > 0
	}
}

// request returns the request the model expects for mt, if one is due,
// and counts it as sent.
func (m *adsModel) request(mt *mType) (want *discoveryv3.DiscoveryRequest, node bool) {
	if !mt.dirty {
		return nil, false
	}
	mt.dirty = false
	if len(mt.res) == 0 && !mt.sent {
		return nil, false
	}
	want = &discoveryv3.DiscoveryRequest{TypeUrl: mt.url, VersionInfo: mt.version, ResponseNonce: mt.nonce, ResourceNames: slices.Sorted(maps.Keys(mt.res))}
	node = !m.nodeSent
	m.nodeSent, mt.sent = true, true
	return want, node
}

// sentRequest starts the does-not-exist timer of every resource req names
// that is not known yet, if the stream is up.
func (m *adsModel) sentRequest(req *discoveryv3.DiscoveryRequest, now time.Time, timeout time.Duration) {
	mt := m.types[req.TypeUrl]
	for _, name := range req.ResourceNames {
		r := mt.res[name]
		if r == nil || !r.unknown() || r.timing || !m.live {
			continue
		}
		r.timing, r.deadline = true, now.Add(timeout)
	}
}

// item is one resource of a response.
type item struct {
	name, value string // value "" when invalid
	why         string
	alien       bool // an Any of the other type: refused, its name unread
}

func (m *adsModel) respond(url, version, nonce string, items []item) {
	m.received, m.connErr = true, false
	mt := m.types[url]
	mt.nonce = nonce
	var problems []string
	seen := map[string]bool{}
	for _, it := range items {
		if it.alien {
			problems = append(problems, "a resource of another type")
			continue
		}
		why := it.why
		if it.value != "" && seen[it.name] {
			why = "the response has it twice"
		}
		seen[it.name] = true
		r := mt.res[it.name]
		if why != "" || it.value == "" {
			problems = append(problems, it.name+": "+why)
			if r != nil {
				r.timing, r.missing = false, false
				if r.errWhy != why {
					r.errWhy = why
					m.tell(r, "failed")
				}
			}
			continue
		}
		if r == nil {
			continue
		}
		r.timing = false
		r.has, r.value, r.missing, r.errWhy = true, it.value, false, ""
		m.tell(r, "update="+it.value)
	}
	if mt.wholeSet && !m.ignore {
		for _, name := range slices.Sorted(maps.Keys(mt.res)) {
			r := mt.res[name]
			if seen[name] || !r.has {
				continue
			}
			r.timing = false
			r.has, r.value, r.missing, r.errWhy = false, "", true, ""
			m.tell(r, "missing")
		}
	}
	if len(problems) > 0 {
		mt.nack = strings.Join(problems, "; ")
	} else {
		mt.version, mt.nack = version, ""
	}
	mt.dirty = true
}

// ended: the stream closed. Its timers stop (the stream is down). gRFC
// A57: closed without a response, it is a connectivity error, reported to
// every watcher (their resources keep their values), and the next stream
// waits for a backoff; closed after a response, it is no error, and the
// next stream starts at once.
func (m *adsModel) ended() {
	m.live, m.exists = false, false
	for _, mt := range m.types {
		for _, r := range mt.res {
			r.timing = false
		}
	}
	if m.received {
		m.exists, m.received = true, false
		return
	}
	m.connErr, m.retry = true, true
	for _, mt := range m.types {
		for _, r := range mt.res {
			m.tell(r, "failed")
		}
	}
}

func (m *adsModel) advance(to time.Time) {
	type due struct {
		at time.Time
		r  *mResource
	}
	var fired []due
	for _, mt := range m.types {
		for _, r := range mt.res {
			if r.timing && !r.deadline.After(to) {
				fired = append(fired, due{r.deadline, r})
			}
		}
	}
	for _, d := range fired {
		d.r.timing = false
		d.r.has, d.r.value, d.r.missing, d.r.errWhy = false, "", true, ""
		m.tell(d.r, "missing")
	}
}

func TestPropertyADS(t *testing.T) {
	rapid.Check(t, testPropertyADS)
}

func testPropertyADS(t *rapid.T) {
	ignore := rapid.Bool().Draw(t, "ignore_resource_deletion")
	clk := clock.NewMock()
	timeout := DefaultResourceTimeout
	c, err := newClient(clientConfig{
		servers:         []serverConfig{{Server{URI: "server-0", IgnoreResourceDeletion: ignore}, insecureDial}},
		node:            &corev3.Node{Id: "n"},
		clock:           clk,
		logger:          slog.New(slog.DiscardHandler),
		backoff:         backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, MaxDelay: 10 * time.Second},
		resourceTimeout: timeout,
		runStream:       func(*adsStream) {},
	}, modelCDS, modelEDS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	m := &adsModel{types: map[string]*mType{}, subs: map[int]mSub{}, ignore: ignore}
	for _, rt := range []*resourceType{modelCDS, modelEDS} {
		m.types[rt.url] = &mType{url: rt.url, wholeSet: rt.wholeSet, res: map[string]*mResource{}}
	}
	a := &adsMachine{c: c, clk: clk, m: m, last: map[int]string{}, subs: map[int]*subscription{}}
	urls := []string{ClusterType, EndpointType}
	names := []string{"a", "b", "c"}
	stream := func(t *rapid.T) *adsStream {
		var s *adsStream
		a.do(t, func() { s = c.conns[0].stream })
		return s
	}
	t.Repeat(map[string]func(*rapid.T){
		"": a.Check,
		"watch": func(t *rapid.T) {
			url, name := rapid.SampledFrom(urls).Draw(t, "type"), rapid.SampledFrom(names).Draw(t, "name")
			id := m.nextSub
			m.nextSub++
			a.step(t, fmt.Sprintf("w%d watches %s %s", id, url[strings.LastIndex(url, ".")+1:], name), func() {
				sub := c.watch(url, name, modelWatcher{id, &a.log}, nil)
				a.subs[id] = sub
				m.watch(id, url, name, clk.Now(), timeout)
			})
		},
		"cancel": func(t *rapid.T) {
			if len(m.subs) == 0 {
				t.Skip("no subscription")
			}
			id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.subs))).Draw(t, "sub")
			a.step(t, fmt.Sprintf("w%d cancels", id), func() {
				a.subs[id].cancel()
				delete(a.subs, id)
				m.cancel(id)
			})
		},
		"stream up": func(t *rapid.T) {
			s := stream(t)
			if s == nil || m.live {
				t.Skip("no stream being made")
			}
			a.step(t, "stream up", func() { c.streamUp(s); m.up() })
		},
		"sender builds requests": func(t *rapid.T) {
			s := stream(t)
			if !m.live || len(s.wake) == 0 {
				t.Skip("the sender sleeps")
			}
			<-s.wake
			var problems []string
			a.step(t, "sender builds requests", func() {
				got := c.requests(s)
				for _, url := range slices.Sorted(maps.Keys(m.types)) {
					mt := m.types[url]
					nack := mt.nack
					want, node := m.request(mt)
					if want == nil {
						continue
					}
					mt.nack = ""
					if len(got) == 0 || got[0].TypeUrl != url {
						problems = append(problems, fmt.Sprintf("no request of %s, want %v", url, want))
						continue
					}
					req := got[0]
					got = got[1:]
					if req.VersionInfo != want.VersionInfo || req.ResponseNonce != want.ResponseNonce || !slices.Equal(req.ResourceNames, want.ResourceNames) {
						problems = append(problems, fmt.Sprintf("%s: version %q nonce %q names %v, want %q %q %v", url, req.VersionInfo, req.ResponseNonce, req.ResourceNames, want.VersionInfo, want.ResponseNonce, want.ResourceNames))
					}
					if (req.GetErrorDetail().GetMessage() != "") != (nack != "") {
						problems = append(problems, fmt.Sprintf("%s: error_detail %q, want a NACK %v", url, req.GetErrorDetail().GetMessage(), nack != ""))
					}
					if (req.Node != nil) != node {
						problems = append(problems, fmt.Sprintf("%s: node %v, want it %v", url, req.Node, node))
					}
					a.inflight = append(a.inflight, req)
				}
				if len(got) > 0 {
					problems = append(problems, fmt.Sprintf("unexpected requests %v", got))
				}
			})
			if len(problems) > 0 {
				t.Fatalf("%s", strings.Join(problems, "; "))
			}
		},
		"request sent": func(t *rapid.T) {
			if len(a.inflight) == 0 {
				t.Skip("nothing in flight")
			}
			req := a.inflight[0]
			a.inflight = a.inflight[1:]
			a.step(t, fmt.Sprintf("sent %s %v", req.TypeUrl[strings.LastIndex(req.TypeUrl, ".")+1:], req.ResourceNames), func() {
				c.startTimers(req)
				m.sentRequest(req, clk.Now(), timeout)
			})
		},
		"server responds": func(t *rapid.T) {
			s := stream(t)
			if !m.live {
				t.Skip("no live stream")
			}
			url := rapid.SampledFrom(urls).Draw(t, "type")
			items := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) item {
				it := item{name: rapid.SampledFrom(names).Draw(t, "name")}
				switch rapid.IntRange(0, 7).Draw(t, "kind") {
				case 0:
					it.alien, it.value = true, "1"
				case 1, 2:
					it.why = rapid.SampledFrom([]string{"bad", "worse"}).Draw(t, "why")
				default:
					it.value = strconv.Itoa(rapid.IntRange(1, 3).Draw(t, "value"))
				}
				return it
			}), 0, 4).Draw(t, "resources")
			a.n++
			version, nonce := "v"+strconv.Itoa(a.n), "n"+strconv.Itoa(a.n)
			resp := &discoveryv3.DiscoveryResponse{TypeUrl: url, VersionInfo: version, Nonce: nonce}
			for _, it := range items {
				raw := it.name + "=" + it.value
				if it.value == "" {
					raw = it.name + "!" + it.why
				}
				typ := url
				if it.alien { // the other type
					typ = urls[0]
					if url == urls[0] {
						typ = urls[1]
					}
				}
				resp.Resources = append(resp.Resources, &anypb.Any{TypeUrl: typ, Value: []byte(raw)})
			}
			a.step(t, fmt.Sprintf("server responds %s %s %+v", url[strings.LastIndex(url, ".")+1:], version, items), func() {
				c.received(s, resp)
				m.respond(url, version, nonce, items)
			})
		},
		"stream fails": func(t *rapid.T) {
			s := stream(t)
			if s == nil {
				t.Skip("no stream")
			}
			a.inflight = nil // their Send failed
			a.step(t, "stream fails", func() {
				c.streamEnded(s, errors.New("stream reset"))
				m.ended()
			})
		},
		"time passes": func(t *rapid.T) {
			var d time.Duration
			next, ok := c.ser.NextDeadline()
			switch choice := rapid.IntRange(0, 2).Draw(t, "how"); {
			case ok && choice == 0:
				d = next.Sub(clk.Now()) // exactly to the next deadline
			case ok && choice == 1:
				d = max(next.Sub(clk.Now())-1, 0) // 1 ns before it
			default:
				d = time.Duration(rapid.IntRange(0, 20).Draw(t, "seconds")) * time.Second
			}
			t.Logf("%v passes", d)
			m.expect = nil
			a.do(t, func() { a.log = a.log[:0] })
			to := clk.Now().Add(d)
			lbtest.AdvanceSerializers(t, clk, d, c.ser)
			m.advance(to)
			var got []string
			a.do(t, func() {
				got = slices.Clone(a.log)
				if m.retry && c.conns[0].stream != nil {
					m.retry, m.exists = false, true // the backoff passed
				}
			})
			a.compare(t, fmt.Sprintf("%v passes", d), got)
		},
	})
}
