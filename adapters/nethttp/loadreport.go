package nethttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/lbkit/lbkit/lb"
)

// loadHeaderKey is LoadReportHeader in canonical form: looking it up in an
// http.Header directly allocates nothing.
var loadHeaderKey = http.CanonicalHeaderKey(LoadReportHeader)

// reports holds the reports passed to Done: each is valid only during the
// call, then reused.
var reports = sync.Pool{New: func() any { return new(lb.LoadReport) }}

// doneWithLoad calls done with info, whose Metadata is the response's
// header, carrying the load report of the header's first
// endpoint-load-metrics value, if there is one and it parses. A malformed
// report is left out and counted on the channel
// ([conn.Channel.CountMalformedLoadReport]).
func (t *Transport) doneWithLoad(done func(lb.DoneInfo), info lb.DoneInfo) {
	h, _ := info.Metadata.(http.Header)
	vals := h[loadHeaderKey]
	if len(vals) == 0 {
		done(info)
		return
	}
	r := reports.Get().(*lb.LoadReport)
	if err := ParseLoadReportWith(vals[0], r, t.DecodeBinLoadReport); err != nil {
		t.Channel.CountMalformedLoadReport()
	} else {
		info.Load = r
	}
	done(info)
	clear(r.Named) // drop the references to this response's strings
	r.Named = r.Named[:0]
	reports.Put(r)
}

// LoadReportHeader is the response header that carries a backend's ORCA
// load report (gRFC A51's per-request report, in the forms Envoy
// documents): "TEXT " followed by comma-separated name:value (or
// name=value) pairs, "JSON " followed by the OrcaLoadReport in proto3 JSON,
// or "BIN " followed by the base64 of its binary encoding.
const LoadReportHeader = "endpoint-load-metrics"

// MaxLoadReportLen is the longest header value [ParseLoadReportWith] reads;
// a longer one is refused without being looked at.
const MaxLoadReportLen = 16 << 10

// ErrLoadReport is wrapped by every error of [ParseLoadReportWith] (and so of
// [ParseLoadReport]).
var ErrLoadReport = errors.New("nethttp: malformed endpoint-load-metrics")

// BinLoadReportDecoder decodes the payload of the BIN form of
// [LoadReportHeader], the serialized xds.data.orca.v3.OrcaLoadReport
// (after base64 decoding), into dst, which it resets first; an error means
// the report is malformed, and dst is then unspecified. It must not keep
// payload or dst after it returns, must not panic, and is called
// concurrently, once per response that carries such a report. The core
// module has no protobuf: adapters/grpcgo's ParseLoadReport is one.
type BinLoadReportDecoder func(payload []byte, dst *lb.LoadReport) error

// ParseLoadReport parses the value of the [LoadReportHeader] header into
// dst, which it resets first, without a BIN decoder:
// ParseLoadReportWith(value, dst, nil).
func ParseLoadReport(value string, dst *lb.LoadReport) error {
	return ParseLoadReportWith(value, dst, nil)
}

// ParseLoadReportWith parses the value of the [LoadReportHeader] header into
// dst, which it resets first. It accepts the TEXT and JSON forms, and the
// BIN form when bin is not nil:
//
//   - TEXT: entries separated by commas, each a name and a value separated
//     by ':' or '=', with optional spaces around both; names are
//     cpu_utilization, mem_utilization, application_utilization,
//     rps_fractional, eps, and named_metrics.NAME, utilization.NAME or
//     request_cost.NAME; a name may appear once; empty entries are
//     skipped. Values are decimal numbers.
//   - JSON: an object with OrcaLoadReport's fields, by their proto or JSON
//     names (cpu_utilization or cpuUtilization), numbers either bare or
//     quoted; rps, the older integer rate, is used when rps_fractional is
//     absent; unknown fields are ignored, as proto3 JSON readers may.
//   - BIN: the standard base64 of a serialized OrcaLoadReport (padded, or
//     unpadded), whose bytes bin decodes.
//
// Any other form (BIN without a decoder; an unknown prefix; an empty
// value), base64 that does not decode, an error of bin, a value longer
// than [MaxLoadReportLen], a
// number that does not parse, NaN or infinity, a negative utilization or
// rate, an unknown TEXT name or a repeated one is an error wrapping
// [ErrLoadReport] that says which, and leaves dst unspecified. It never
// panics (unless bin does). Named metrics are appended to dst.Named's
// backing array, so a caller that reuses dst reuses it. It is safe for
// concurrent use with distinct dst.
func ParseLoadReportWith(value string, dst *lb.LoadReport, bin BinLoadReportDecoder) error {
	named := dst.Named[:0]
	*dst = lb.LoadReport{Named: named}
	if len(value) > MaxLoadReportLen {
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrLoadReport, len(value), MaxLoadReportLen)
	}
	var err error
	switch {
	case strings.HasPrefix(value, "TEXT "):
		err = parseTextReport(value[len("TEXT "):], dst)
	case strings.HasPrefix(value, "JSON "):
		err = parseJSONReport(value[len("JSON "):], dst)
	case strings.HasPrefix(value, "BIN "):
		err = parseBinReport(value[len("BIN "):], dst, bin)
	default:
		form, _, _ := strings.Cut(value[:min(len(value), 5)], " ")
		err = fmt.Errorf("unknown form %q, want TEXT, JSON or BIN", form)
	}
	if err == nil && !dst.Valid() {
		err = errors.New("a value is negative or not finite")
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLoadReport, err)
	}
	return nil
}

// parseBinReport decodes the BIN form's base64 and gives its bytes to bin.
func parseBinReport(s string, dst *lb.LoadReport, bin BinLoadReportDecoder) error {
	if bin == nil {
		return errors.New("the BIN form needs a decoder (Transport.DecodeBinLoadReport; adapters/grpcgo's ParseLoadReport is one): the core module has no protobuf")
	}
	s = strings.TrimSpace(s)
	enc := base64.StdEncoding
	if len(s)%4 != 0 && !strings.HasSuffix(s, "=") {
		enc = base64.RawStdEncoding
	}
	payload, err := enc.DecodeString(s)
	if err != nil {
		return fmt.Errorf("BIN: base64: %w", err)
	}
	named := dst.Named[:0]
	*dst = lb.LoadReport{Named: named}
	if err := bin(payload, dst); err != nil {
		return fmt.Errorf("BIN: %w", err)
	}
	return nil
}

// parseTextReport parses the TEXT form's entries into dst.
func parseTextReport(s string, dst *lb.LoadReport) error {
	var seen uint8 // bits of the fixed fields seen
	for s != "" {
		var entry string
		entry, s, _ = strings.Cut(s, ",")
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		i := strings.IndexAny(entry, ":=")
		if i < 0 {
			return fmt.Errorf("entry %q has no ':' or '='", entry)
		}
		name, text := strings.TrimSpace(entry[:i]), strings.TrimSpace(entry[i+1:])
		v, err := parseReportNumber(text)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := setTextField(dst, &seen, name, v); err != nil {
			return err
		}
	}
	return nil
}

// setTextField sets the field called name to v, refusing a repeated name.
func setTextField(dst *lb.LoadReport, seen *uint8, name string, v float64) error {
	if kind, key, ok := namedKind(name); ok {
		if key == "" {
			return fmt.Errorf("%s: empty metric name", name)
		}
		if _, dup := dst.Metric(kind, key); dup {
			return fmt.Errorf("%s appears twice", name)
		}
		dst.Named = append(dst.Named, lb.NamedMetric{Kind: kind, Name: key, Value: v})
		return nil
	}
	f, bit := reportField(dst, name)
	if f == nil {
		return fmt.Errorf("unknown metric %q", name)
	}
	if *seen&bit != 0 {
		return fmt.Errorf("%s appears twice", name)
	}
	*seen |= bit
	*f = v
	return nil
}

// namedKind splits a TEXT name of a map entry into its map and key.
func namedKind(name string) (lb.NamedMetricKind, string, bool) {
	for _, k := range [...]lb.NamedMetricKind{lb.NamedMetricNamed, lb.NamedMetricUtilization, lb.NamedMetricRequestCost} {
		if key, ok := strings.CutPrefix(name, k.String()+"."); ok {
			return k, key, true
		}
	}
	return 0, "", false
}

// reportField returns the field of dst called name (by its proto or JSON
// name) and a bit of its own, or nil.
func reportField(dst *lb.LoadReport, name string) (*float64, uint8) {
	switch name {
	case "cpu_utilization", "cpuUtilization":
		return &dst.CPUUtilization, 1
	case "mem_utilization", "memUtilization":
		return &dst.MemUtilization, 2
	case "application_utilization", "applicationUtilization":
		return &dst.ApplicationUtilization, 4
	case "rps_fractional", "rpsFractional":
		return &dst.QPS, 8
	case "eps":
		return &dst.EPS, 16
	}
	return nil, 0
}

// parseReportNumber parses a finite decimal number.
func parseReportNumber(s string) (float64, error) {
	if s == "" {
		return 0, errors.New("empty value")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not finite", s)
	}
	return v, nil
}

// parseJSONReport parses the JSON form into dst.
func parseJSONReport(s string, dst *lb.LoadReport) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return fmt.Errorf("JSON: %w", err)
	}
	var rps float64
	var haveQPS bool
	for name, raw := range obj {
		if bytes.Equal(raw, []byte("null")) {
			continue
		}
		if kind, ok := jsonMapKind(name); ok {
			if err := parseJSONMap(raw, kind, dst); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			continue
		}
		f, _ := reportField(dst, name)
		if name == "rps" {
			f = &rps
		}
		if f == nil {
			continue // an unknown field
		}
		v, err := jsonNumber(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		*f = v
		haveQPS = haveQPS || f == &dst.QPS
	}
	if !haveQPS {
		dst.QPS = rps
	}
	return nil
}

// jsonMapKind returns the map kind of a JSON field name.
func jsonMapKind(name string) (lb.NamedMetricKind, bool) {
	switch name {
	case "named_metrics", "namedMetrics":
		return lb.NamedMetricNamed, true
	case "utilization":
		return lb.NamedMetricUtilization, true
	case "request_cost", "requestCost":
		return lb.NamedMetricRequestCost, true
	}
	return 0, false
}

// parseJSONMap appends the entries of a JSON object of numbers to dst.Named.
func parseJSONMap(raw json.RawMessage, kind lb.NamedMetricKind, dst *lb.LoadReport) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return errors.New("want an object of numbers")
	}
	for key, v := range m {
		f, err := jsonNumber(v)
		if err != nil {
			return fmt.Errorf("%q: %w", key, err)
		}
		dst.Named = append(dst.Named, lb.NamedMetric{Kind: kind, Name: key, Value: f})
	}
	return nil
}

// jsonNumber reads a JSON number, bare or quoted (proto3 JSON), that is
// finite.
func jsonNumber(raw json.RawMessage) (float64, error) {
	var text string
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, err
		}
	} else {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, fmt.Errorf("%s is not a number", raw)
		}
		text = n.String()
	}
	return parseReportNumber(text)
}
