package lb

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxProtoDurationSeconds is the largest number of seconds a
// google.protobuf.Duration may hold (about 10,000 years).
const maxProtoDurationSeconds = 315_576_000_000

// ParseDuration parses a proto3 JSON google.protobuf.Duration: a JSON string
// of a decimal number of seconds with the suffix "s", with up to nine
// fractional digits and an optional leading minus, such as "10s", "0.5s" or
// "-1.000000001s". Null or an empty raw is the zero duration. Errors, each a
// [*ConfigError] with an empty path for the caller to prefix:
//   - not a string, or a string not in that form;
//   - more than 315,576,000,000 seconds either way, the range of
//     google.protobuf.Duration;
//   - a value that fits that range but not a [time.Duration] (about 292
//     years either way).
//
// A sign is accepted here; callers that need a non-negative duration check
// the result.
func ParseDuration(raw json.RawMessage) (time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil
	}
	text, err := decodeString(raw)
	if err != nil {
		return 0, ConfigErrorf("", `want a duration string such as "10s", got %s`, jsonKind(raw))
	}
	neg, secs, nanos, ok := splitDuration(text)
	if !ok {
		return 0, ConfigErrorf("", `want a duration such as "10s" or "0.5s", got %q`, text)
	}
	if secs > maxProtoDurationSeconds {
		return 0, ConfigErrorf("", "duration %q is outside the range of google.protobuf.Duration (±%d s)", text, maxProtoDurationSeconds)
	}
	const maxSecs = math.MaxInt64 / int64(time.Second)
	if secs > maxSecs || (secs == maxSecs && nanos > math.MaxInt64%int64(time.Second)) {
		return 0, ConfigErrorf("", "duration %q overflows a Go time.Duration (at most about 292 years)", text)
	}
	d := time.Duration(secs)*time.Second + time.Duration(nanos)
	if neg {
		d = -d
	}
	return d, nil
}

// splitDuration splits a proto3 JSON duration "[-]S[.F]s" into its sign,
// whole seconds and nanoseconds; ok is false when text is not in that form
// or the seconds do not fit an int64.
func splitDuration(text string) (neg bool, secs, nanos int64, ok bool) {
	body, found := strings.CutSuffix(text, "s")
	if !found {
		return false, 0, 0, false
	}
	body, neg = strings.CutPrefix(body, "-")
	whole, frac, hasFrac := strings.Cut(body, ".")
	if !allDigits(whole) || (hasFrac && (!allDigits(frac) || len(frac) > 9)) {
		return false, 0, 0, false
	}
	secs, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return false, 0, 0, false
	}
	if hasFrac {
		n, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64) // at most nine digits
		nanos = n
	}
	return neg, secs, nanos, true
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
