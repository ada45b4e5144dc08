package conn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// BenchmarkEDSFileToFirstPick: from conn.New on an "eds:///" file of
// 100,000 endpoints (100 localities over two priorities) to the first
// wait-for-ready pick, through the whole tree (priority, weighted_target,
// weighted_round_robin) on the "check" connection model (no sockets); the
// channel is closed outside the timed part. file-MB is the file's size.
func BenchmarkEDSFileToFirstPick(b *testing.B) {
	const n, perLocality = 100_000, 1_000
	var sb strings.Builder
	sb.WriteString(`{"cluster_name":"bench","endpoints":[`)
	for l := range n / perLocality {
		if l > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"locality":{"zone":"z%d"},"load_balancing_weight":1,"priority":%d,"lb_endpoints":[`, l, l%2)
		for e := range perLocality {
			if e > 0 {
				sb.WriteByte(',')
			}
			i := l*perLocality + e
			fmt.Fprintf(&sb, `{"endpoint":{"address":{"socket_address":{"address":"10.%d.%d.%d","port_value":80}}}}`, i>>16, i>>8&255, i&255)
		}
		sb.WriteString(`]}`)
	}
	sb.WriteString(`]}`)
	file := filepath.Join(b.TempDir(), "cla.json")
	if err := os.WriteFile(file, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := New("eds://"+file, WithResolver(&eds.Builder{}), WithDialer(modelDialer{}))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Pick(context.Background(), PickOptions{WaitForReady: true}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(sb.Len())/(1<<20), "file-MB")
}
