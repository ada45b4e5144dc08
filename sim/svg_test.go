package sim

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// The SVG is well-formed XML with one latency line per policy and one heat
// map per policy, names escaped.
func TestSVGDrawsEveryPolicy(t *testing.T) {
	rep := run1(t, strings.Replace(shortS1, `"name": "od"`, `"name": "od <&>"`, 1))
	var b strings.Builder
	if err := WriteSVG(&b, rep); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	lines, maps := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "polyline" {
				lines++
			}
		case xml.CharData:
			if strings.Contains(string(el), "requests in flight at each backend") {
				maps++
			}
		}
	}
	if lines != len(rep.Policies) || maps != len(rep.Policies) {
		t.Errorf("%d latency lines and %d heat maps for %d policies", lines, maps, len(rep.Policies))
	}
}
