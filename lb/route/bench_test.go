package route

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// hundredRoutes is a 100-route configuration shaped like a mesh's: one
// virtual host among ten, routes by path prefix, exact path and regex,
// a third of them with a header matcher; the request matches the last.
func hundredRoutes(b *testing.B) (*Table, *Request) {
	var vhs []string
	for v := range 9 {
		vhs = append(vhs, fmt.Sprintf(`{"domains":["svc%d.example.com","svc%d.example.com:80"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"c"}}]}`, v, v))
	}
	var routes []string
	for i := range 99 {
		var m string
		switch i % 3 {
		case 0:
			m = fmt.Sprintf(`"prefix":"/api/v%d/"`, i)
		case 1:
			m = fmt.Sprintf(`"path":"/api/items/%d"`, i)
		case 2:
			m = fmt.Sprintf(`"prefix":"/api/","headers":[{"name":"x-tenant","exactMatch":"t%d"}]`, i)
		}
		routes = append(routes, fmt.Sprintf(`{"match":{%s},"route":{"cluster":"c%d"}}`, m, i))
	}
	routes = append(routes, `{"match":{"prefix":"/api/","headers":[{"name":"x-tenant","exactMatch":"gold"}]},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":9},{"name":"b","weight":1}]}}}`)
	vhs = append(vhs, `{"domains":["*.internal","shop.example.com"],"routes":[`+strings.Join(routes, ",")+`]}`)
	tab, _, err := Parse([]byte(`{"virtualHosts":[` + strings.Join(vhs, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	req := &Request{Authority: "shop.example.com", Method: "GET", Path: "/api/cart",
		Headers: http.Header{"X-Tenant": {"gold"}, "Accept": {"*/*"}, "User-Agent": {"bench"}}}
	if i, err := tab.Find(req, nil); err != nil || i != tab.Len()-1 {
		b.Fatalf("Find = %d, %v; want the last route", i, err)
	}
	return tab, req
}

// BenchmarkFind100Routes matches a request against a 100-route virtual
// host, through all 100 routes; BenchmarkFirstRoute is the baseline of
// the same table with a request the first route takes.
func BenchmarkFind100Routes(b *testing.B) {
	tab, req := hundredRoutes(b)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tab.Find(req, nil)
	}
}

// BenchmarkScan100Routes is the baseline: the same request matched by
// testing every route in turn, as without the index.
func BenchmarkScan100Routes(b *testing.B) {
	tab, req := hundredRoutes(b)
	x := tab.hosts[len(tab.hosts)-1]
	b.ReportAllocs()
	for b.Loop() {
		var hc headerCache
		_ = x.scan(req, nil, &hc)
	}
}

func BenchmarkFindFirstRoute(b *testing.B) {
	tab, _ := hundredRoutes(b)
	req := &Request{Authority: "shop.example.com", Method: "GET", Path: "/api/v0/x"}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = tab.Find(req, nil)
	}
}

// The matching path does not allocate.
func TestFindDoesNotAllocate(t *testing.T) {
	tab, req := hundredRoutes(&testing.B{})
	var rnd Source
	if n := testing.AllocsPerRun(100, func() { _, _ = tab.Find(req, rnd) }); n != 0 {
		t.Fatalf("Find allocates %v times per request", n)
	}
}

// BenchmarkCompile compiles configurations of 1,000 and 10,000 routes (the
// shapes of hundredRoutes, repeated): the cost of applying an RDS update,
// which should grow linearly with the routes.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		var routes []string
		for i := range n {
			switch i % 3 {
			case 0:
				routes = append(routes, fmt.Sprintf(`{"match":{"prefix":"/api/v%d/"},"route":{"cluster":"c%d"}}`, i, i%50))
			case 1:
				routes = append(routes, fmt.Sprintf(`{"match":{"path":"/api/items/%d"},"route":{"cluster":"c%d"}}`, i, i%50))
			case 2:
				routes = append(routes, fmt.Sprintf(`{"match":{"prefix":"/api/","headers":[{"name":"x-tenant","exactMatch":"t%d"}]},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":9},{"name":"b","weight":1}]}}}`, i))
			}
		}
		obj, err := lb.ParseConfigObject([]byte(`{"virtualHosts":[{"domains":["*"],"routes":[` + strings.Join(routes, ",") + `]}]}`))
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := Read(obj)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
