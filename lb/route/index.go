package route

import "strings"

// hostIndex finds, for a request path, the routes of one virtual host
// whose path specifier can match it, so that Find tests only those
// (in configuration order) instead of every route:
//   - exact paths (case-sensitive) in a map from the path;
//   - prefixes (case-sensitive) at the nodes of a byte trie, which the
//     request path walks;
//   - every other route (a regex, a case-insensitive path) in a list
//     always tested.
//
// A route is in exactly one list. Within a list of the map or the trie
// (whose routes' paths all match once the list is reached), a run of four
// or more routes that each match one header exactly (and nothing else) is
// a group, answered with one lookup of the header's value in a map.
type hostIndex struct {
	routes []compiledRoute
	exact  map[string]*candList
	nodes  []trieNode // nodes[0] is the root (the empty prefix)
	always candList
}

// trieNode is a node of the prefix trie: the prefixes that end at it, and
// its children by next byte (keys[i] leads to nodes[next[i]]).
type trieNode struct {
	routes candList
	keys   string
	next   []int32
}

// candList is a list of candidate routes: positions in the virtual host's
// routes, increasing, and its groups.
type candList struct {
	pos    []int32
	groups []group // by start, increasing
}

// group is the run pos[start:end] of a candList whose routes each match
// one header (h's name) exactly: first maps a value to the first of them
// that takes it.
type group struct {
	start, end int
	h          *headerMatcher
	first      map[string]int32
}

// minGroup is the shortest run made a group.
const minGroup = 4

// maxLists bounds the candidate lists one request gathers on Find's stack;
// a request that would gather more (a path that passes more than
// maxLists-2 prefixes that end routes) is matched against every route.
const maxLists = 8

func newHostIndex(routes []compiledRoute) *hostIndex {
	x := &hostIndex{routes: routes, nodes: []trieNode{{}}}
	for i := range routes {
		r := &routes[i]
		pos := int32(i)
		switch {
		case r.fold || r.kind == pathRegex:
			x.always.pos = append(x.always.pos, pos)
		case r.kind == pathExact:
			if x.exact == nil {
				x.exact = map[string]*candList{}
			}
			l := x.exact[r.pattern]
			if l == nil {
				l = &candList{}
				x.exact[r.pattern] = l
			}
			l.pos = append(l.pos, pos)
		default:
			n := x.node(r.pattern)
			x.nodes[n].routes.pos = append(x.nodes[n].routes.pos, pos)
		}
	}
	for _, l := range x.exact {
		l.group(routes)
	}
	for i := range x.nodes {
		x.nodes[i].routes.group(routes)
	}
	return x
}

// node returns the index of prefix's node, adding the nodes on its way.
func (x *hostIndex) node(prefix string) int {
	n := 0
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		j := strings.IndexByte(x.nodes[n].keys, c)
		if j < 0 {
			x.nodes = append(x.nodes, trieNode{})
			x.nodes[n].keys += string(c)
			x.nodes[n].next = append(x.nodes[n].next, int32(len(x.nodes)-1))
			j = len(x.nodes[n].next) - 1
		}
		n = int(x.nodes[n].next[j])
	}
	return n
}

// exactOnly returns the route's one header matcher if that is all the
// route matches besides its path (one exact, case-sensitive, not inverted
// header matcher and no runtime fraction), else nil.
func exactOnly(r *compiledRoute) *headerMatcher {
	if len(r.headers) != 1 || r.hasFrac || r.never {
		return nil
	}
	h := &r.headers[0]
	if h.kind != headerExact || h.invert || h.fold {
		return nil
	}
	return h
}

// group finds l's groups.
func (l *candList) group(routes []compiledRoute) {
	for i := 0; i < len(l.pos); {
		h := exactOnly(&routes[l.pos[i]])
		j := i + 1
		for h != nil && j < len(l.pos) {
			if o := exactOnly(&routes[l.pos[j]]); o == nil || o.lower != h.lower {
				break
			}
			j++
		}
		if h != nil && j-i >= minGroup {
			g := group{start: i, end: j, h: h, first: make(map[string]int32, j-i)}
			for _, p := range l.pos[i:j] {
				v := routes[p].headers[0].value
				if _, dup := g.first[v]; !dup {
					g.first[v] = p
				}
			}
			l.groups = append(l.groups, g)
		}
		i = j
	}
}

// cursor walks a candList for one request. head is the next candidate
// (-1 when none is left); sure says it is a group's answer, known to
// match.
type cursor struct {
	l     *candList
	i, gi int
	head  int32
	sure  bool
}

// advance moves to the next candidate, answering a group on its way.
// Answering a group early is safe: it reads only headers, which has no
// effect (no random number is drawn).
func (c *cursor) advance(req *Request, hc *headerCache) {
	for c.i < len(c.l.pos) {
		if c.gi < len(c.l.groups) && c.l.groups[c.gi].start == c.i {
			g := &c.l.groups[c.gi]
			c.gi++
			c.i = g.end
			if v, ok := g.h.lookup(req, hc); ok {
				if p, ok := g.first[v]; ok {
					c.head, c.sure = p, true
					return
				}
			}
			continue
		}
		c.head, c.sure = c.l.pos[c.i], false
		c.i++
		return
	}
	c.head = -1
}

// find returns the position of the first route that takes req, or -1.
func (x *hostIndex) find(req *Request, rnd Source) int {
	var hc headerCache
	var cur [maxLists]cursor
	n := 0
	add := func(l *candList) bool {
		if l == nil || len(l.pos) == 0 {
			return true
		}
		if n == maxLists {
			return false
		}
		cur[n] = cursor{l: l}
		cur[n].advance(req, &hc)
		n++
		return true
	}
	add(&x.always)
	add(x.exact[req.Path])
	node := &x.nodes[0]
	ok := add(&node.routes)
	for i := 0; ok && i < len(req.Path); i++ {
		j := strings.IndexByte(node.keys, req.Path[i])
		if j < 0 {
			break
		}
		node = &x.nodes[node.next[j]]
		ok = add(&node.routes)
	}
	if !ok {
		return x.scan(req, rnd, &hc)
	}
	for {
		best := -1
		for k := 0; k < n; k++ {
			if h := cur[k].head; h >= 0 && (best < 0 || h < cur[best].head) {
				best = k
			}
		}
		if best < 0 {
			return -1
		}
		c := &cur[best]
		p, sure := c.head, c.sure
		if sure {
			return int(p)
		}
		c.advance(req, &hc)
		if r := &x.routes[p]; (r.kind != pathRegex && !r.fold || r.matchPath(req.Path)) && r.matchRest(req, rnd, &hc) {
			return int(p)
		}
	}
}

// scan returns the position of the first route that takes req, or -1,
// testing every route in turn: for the requests the index cannot take.
func (x *hostIndex) scan(req *Request, rnd Source, hc *headerCache) int {
	for i := range x.routes {
		if x.routes[i].match(req, rnd, hc) {
			return i
		}
	}
	return -1
}
