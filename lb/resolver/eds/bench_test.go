package eds_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// largeAssignment returns a ClusterLoadAssignment of n endpoints spread over
// localities of 1,000 endpoints each, in two priorities, every endpoint
// with a weight and a health status: about 110 bytes per endpoint.
func largeAssignment(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"cluster_name":"bench","endpoints":[`)
	perLocality := 1000
	for l := 0; l*perLocality < n; l++ {
		if l > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"locality":{"region":"r","zone":"z%d"},"load_balancing_weight":%d,"priority":%d,"lb_endpoints":[`, l, l%7+1, l%2)
		for e := 0; e < perLocality && l*perLocality+e < n; e++ {
			if e > 0 {
				b.WriteByte(',')
			}
			i := l*perLocality + e
			fmt.Fprintf(&b, `{"endpoint":{"address":{"socket_address":{"address":"10.%d.%d.%d","port_value":8080}}},"load_balancing_weight":%d,"health_status":"HEALTHY"}`,
				i>>16, i>>8&255, i&255, i%5+1)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkParse100k parses a 100,000-endpoint assignment (about 11 MB)
// with Parse and, as the baseline on the same bytes in the same run, with
// encoding/json into an any. allocB/fileB is the bytes allocated per parse
// divided by the file's size.
func BenchmarkParse100k(b *testing.B) {
	data := largeAssignment(100_000)
	b.Run("eds.Parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := eds.Parse(data); err != nil {
				b.Fatal(err)
			}
		}
		reportAllocRatio(b, len(data), func() {
			if _, err := eds.Parse(data); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("encoding_json_any", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
		reportAllocRatio(b, len(data), func() {
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// reportAllocRatio reports the bytes one call of f allocates divided by
// size.
func reportAllocRatio(b *testing.B, size int, f func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(size), "allocB/fileB")
}

func TestAssignmentIsValid(t *testing.T) {
	data := largeAssignment(2500)
	cla, err := eds.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range cla.Endpoints {
		n += len(l.LbEndpoints)
	}
	if n != 2500 {
		t.Fatalf("got %d endpoints, want 2500", n)
	}
}
