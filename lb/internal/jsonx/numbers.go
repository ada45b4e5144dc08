package jsonx

import (
	"errors"
	"strconv"
	"strings"
)

// The reasons [ParseIntegral] gives.
var (
	ErrNotIntegral = errors.New("not an integer")
	ErrNegative    = errors.New("negative")
	ErrTooLarge    = errors.New("too large")
)

// IsNumber reports whether s is exactly one JSON number, with no space
// around it.
func IsNumber(s string) bool {
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return false
	}
	d := Decoder{data: []byte(s)}
	return d.Peek() == Number && d.scanNumber() == nil && d.pos == len(s)
}

// ParseIntegral parses lit, a JSON number, exactly, as proto3 JSON reads an
// integer field: a fraction or an exponent is accepted only when the value
// is still an integer ("1e2" is 100, "3.0" is 3, "2.5" is [ErrNotIntegral]).
// The value must be from 0 to max ([ErrNegative], [ErrTooLarge]); "-0" is
// 0. lit must satisfy [IsNumber].
func ParseIntegral(lit string, max uint64) (uint64, error) {
	if v, err := strconv.ParseUint(lit, 10, 64); err == nil { // the common case
		if v > max {
			return 0, ErrTooLarge
		}
		return v, nil
	}
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(lit), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, nil // zero, whatever the exponent and sign
	}
	// value = digits × 10^(e - len(frac) + trailing zeros stripped)
	shift := -len(frac)
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	digits = trimmed
	if hasExp {
		e, err := strconv.Atoi(exp)
		if err != nil {
			// Only an exponent too large for an int gets here.
			if strings.HasPrefix(exp, "-") {
				return 0, ErrNotIntegral
			}
			return 0, ErrTooLarge
		}
		shift += e
	}
	switch {
	case shift < 0:
		return 0, ErrNotIntegral
	case neg:
		return 0, ErrNegative
	case len(digits)+shift > 20:
		return 0, ErrTooLarge
	}
	v, err := strconv.ParseUint(digits+strings.Repeat("0", shift), 10, 64)
	if err != nil || v > max {
		return 0, ErrTooLarge
	}
	return v, nil
}
