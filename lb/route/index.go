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
// Each list holds positions in the virtual host's routes, in increasing
// order; a route is in exactly one list.
type hostIndex struct {
	routes []compiledRoute
	exact  map[string][]int32
	nodes  []trieNode // nodes[0] is the root (the empty prefix)
	always []int32
}

// trieNode is a node of the prefix trie: the prefixes that end at it, and
// its children by next byte (keys[i] leads to nodes[next[i]]).
type trieNode struct {
	routes []int32
	keys   string
	next   []int32
}

// maxLists bounds the candidate lists one request gathers on Find's stack;
// a request that would gather more (a path that passes more than
// maxLists-2 prefixes that end routes) is matched against every route.
const maxLists = 16

func newHostIndex(routes []compiledRoute) *hostIndex {
	x := &hostIndex{routes: routes, nodes: []trieNode{{}}}
	for i := range routes {
		r := &routes[i]
		pos := int32(i)
		switch {
		case r.fold || r.kind == pathRegex:
			x.always = append(x.always, pos)
		case r.kind == pathExact:
			if x.exact == nil {
				x.exact = map[string][]int32{}
			}
			x.exact[r.pattern] = append(x.exact[r.pattern], pos)
		default:
			n := x.node(r.pattern)
			x.nodes[n].routes = append(x.nodes[n].routes, pos)
		}
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

// find returns the position of the first route that takes req, or -1.
func (x *hostIndex) find(req *Request, rnd Source) int {
	var lists [maxLists][]int32
	n := 0
	add := func(l []int32) bool {
		if len(l) == 0 {
			return true
		}
		if n == maxLists {
			return false
		}
		lists[n] = l
		n++
		return true
	}
	add(x.always)
	add(x.exact[req.Path])
	node := &x.nodes[0]
	ok := add(node.routes)
	for i := 0; ok && i < len(req.Path); i++ {
		j := strings.IndexByte(node.keys, req.Path[i])
		if j < 0 {
			break
		}
		node = &x.nodes[node.next[j]]
		ok = add(node.routes)
	}
	var hc headerCache
	if !ok {
		for i := range x.routes {
			if x.routes[i].match(req, rnd, &hc) {
				return i
			}
		}
		return -1
	}
	switch n {
	case 0:
		return -1
	case 1: // the common case: no merge
		for _, pos := range lists[0] {
			if r := &x.routes[pos]; x.pathMatches(r, req) && r.matchRest(req, rnd, &hc) {
				return int(pos)
			}
		}
		return -1
	}
	// Merge the lists in route order.
	var heads [maxLists]int
	for {
		best, bestPos := -1, int32(0)
		for k := 0; k < n; k++ {
			if heads[k] < len(lists[k]) {
				if p := lists[k][heads[k]]; best < 0 || p < bestPos {
					best, bestPos = k, p
				}
			}
		}
		if best < 0 {
			return -1
		}
		heads[best]++
		r := &x.routes[bestPos]
		if x.pathMatches(r, req) && r.matchRest(req, rnd, &hc) {
			return int(bestPos)
		}
	}
}

// pathMatches reports whether a candidate's path matches: the index
// already knows for a case-sensitive prefix or path; a route of the
// always list is checked.
func (x *hostIndex) pathMatches(r *compiledRoute, req *Request) bool {
	return r.kind != pathRegex && !r.fold || r.matchPath(req.Path)
}
