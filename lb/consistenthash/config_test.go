package consistenthash

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// parseCase is one input of a parser table: the config wanted, or a
// substring of the error wanted (its path and reason).
type parseCase[C comparable] struct {
	js      string
	b       lb.Builder // nil: the zero builder of the table
	want    C
	wantErr string
}

// checkParses runs def (or a case's own builder) on every case.
func checkParses[C comparable](t *testing.T, def lb.Builder, cases []parseCase[C]) {
	t.Helper()
	for _, tc := range cases {
		b := tc.b
		if b == nil {
			b = def
		}
		c, _, err := lb.ParseConfig(b, json.RawMessage(tc.js))
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.js, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.js, err)
		case c != lb.Config(tc.want):
			t.Errorf("%s: %+v, want %+v", tc.js, c, tc.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	checkParses(t, RingHashBuilder{}, []parseCase[RingHashConfig]{
		{js: ``, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096}},
		{js: `{}`, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096}},
		{js: `{"minRingSize": "10", "max_ring_size": 20}`, want: RingHashConfig{MinRingSize: 10, MaxRingSize: 20}},
		{js: `{"minRingSize": 5000}`, wantErr: "minRingSize: must be <= maxRingSize (4096), got 5000"},
		{js: `{"maxRingSize": 8388608}`, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096}},
		{js: `{"maxRingSize": 8388608}`, b: RingHashBuilder{}.WithRingSizeCap(100000), want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 100000}},
		{js: `{"maxRingSize": 8388609}`, wantErr: "maxRingSize: must be <= 8388608, got 8388609"},
		{js: `{"minRingSize": 0}`, wantErr: "minRingSize: must be >= 1, got 0"},
		{js: `{"minRingSize": -1}`, wantErr: "minRingSize: must be >= 1"},
		{js: `{"minRingSize": 1.5}`, wantErr: "minRingSize: want an integer"},
		{js: `{"minRingSize": 100, "maxRingSize": 10}`, wantErr: "minRingSize: must be <= maxRingSize (10), got 100"},
		// Found by FuzzParseConfig: the error names the field the config set.
		{js: `{"maxRingSize": 1}`, wantErr: "maxRingSize: must be >= minRingSize (1024 by default), got 1"},
		{js: `{"minRingSize": null, "max_ring_size": 1}`, wantErr: "minRingSize: must be <= maxRingSize (1), got 1024"},
		{js: `{"requestHashHeader": "X-Session"}`, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096, RequestHashHeader: "x-session"}},
		{js: `{"requestHashHeader": "x-trace-bin"}`, wantErr: `requestHashHeader: "x-trace-bin" is a binary header`},
		{js: `{"requestHashHeader": "x session"}`, wantErr: `requestHashHeader: "x session" is not a valid header name: byte ' ' at 1`},
		{js: `{"requestHashHeader": 7}`, wantErr: "requestHashHeader: want string, got number"},
		{js: `{"entriesPerWeight": 100}`, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096, EntriesPerWeight: 100}},
		{js: `{"entries_per_weight": "4096"}`, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096, EntriesPerWeight: 4096}},
		{js: `{"entriesPerWeight": null}`, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096}},
		{js: `{"entriesPerWeight": 4097}`, wantErr: "entriesPerWeight: must be <= maxRingSize (4096), got 4097"},
		{js: `{"maxRingSize": 100000, "entriesPerWeight": 5000}`, want: RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096, EntriesPerWeight: 5000}},
		{js: `{"entriesPerWeight": 0}`, wantErr: "entriesPerWeight: must be >= 1, got 0"},
		{js: `{"entriesPerWeight": 8388609}`, wantErr: "entriesPerWeight: must be <= 8388608, got 8388609"},
		{js: `{"entriesPerWeight": true}`, wantErr: "entriesPerWeight: "},
		{js: `[]`, wantErr: "want a JSON object"},
	})
}

func TestUnknownFieldsAreListed(t *testing.T) {
	_, unknown, err := lb.ParseConfig(RingHashBuilder{}, json.RawMessage(`{"minRingSize": 10, "ringSize": 3}`))
	if err != nil || len(unknown) != 1 || unknown[0] != "ringSize" {
		t.Fatalf("unknown %v, err %v; want [ringSize]", unknown, err)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{}`, `{"minRingSize": 1, "maxRingSize": 8388608}`, `{"requestHashHeader": "a-b.c_d"}`, `{"min_ring_size": "1e3"}`, `{"entriesPerWeight": 64, "maxRingSize": 100000}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, _, ok := lbtest.CheckConfigParse(t, RingHashBuilder{}, raw)
		if !ok {
			return
		}
		cfg := c.(RingHashConfig)
		if cfg.MinRingSize < 1 || cfg.MinRingSize > cfg.MaxRingSize || cfg.MaxRingSize > DefaultRingSizeCap {
			t.Fatalf("parsed %+v from %q", cfg, raw)
		}
		if cfg.EntriesPerWeight > RingSizeLimit {
			t.Fatalf("entriesPerWeight %d accepted from %q", cfg.EntriesPerWeight, raw)
		}
		if validHeader(cfg.RequestHashHeader) != nil || strings.ToLower(cfg.RequestHashHeader) != cfg.RequestHashHeader {
			t.Fatalf("header %q accepted", cfg.RequestHashHeader)
		}
	})
}

// The bad input, through a service config's loadBalancingConfig
// as a channel parses it: each is a *lb.ConfigError whose path runs from
// the list to the field, and whose reason names the limit.
func TestBadConfigNamesItsJSONPath(t *testing.T) {
	r := lbtest.NewRegistry(RingHashBuilder{}, MaglevBuilder{})
	for _, tc := range []struct{ js, path, reason string }{
		{`[{"ring_hash_experimental": {"maxRingSize": 8388609}}]`, "loadBalancingConfig[0].ring_hash_experimental.maxRingSize", "must be <= 8388608, got 8388609"},
		{`[{"ring_hash_experimental": {"minRingSize": 9000000}}]`, "loadBalancingConfig[0].ring_hash_experimental.minRingSize", "must be <= 8388608, got 9000000"},
		{`[{"ring_hash_experimental": {"minRingSize": 100, "maxRingSize": 10}}]`, "loadBalancingConfig[0].ring_hash_experimental.minRingSize", "must be <= maxRingSize (10), got 100"},
		{`[{"maglev_experimental": {"tableSize": 65536}}]`, "loadBalancingConfig[0].maglev_experimental.tableSize", "must be a prime, got 65536"},
		{`[{"maglev_experimental": {"tableSize": 5000012}}]`, "loadBalancingConfig[0].maglev_experimental.tableSize", "must be <= 5000011, got 5000012"},
	} {
		_, err := r.ParseLoadBalancingConfig([]byte(tc.js))
		var ce *lb.ConfigError
		if !errors.As(err, &ce) || ce.Path != tc.path || !strings.Contains(ce.Err.Error(), tc.reason) {
			t.Errorf("%s: error %v, want a *lb.ConfigError at %s saying %q", tc.js, err, tc.path, tc.reason)
		}
	}
}
