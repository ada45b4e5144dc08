package jsonx

import (
	"unicode/utf16"
	"unicode/utf8"
)

// appendString consumes the string at the current position, which starts
// with '"', and appends its unescaped bytes to dst.
func (d *Decoder) appendString(dst []byte) ([]byte, error) {
	data := d.data
	i := d.pos + 1
	for {
		// Copy the run of plain ASCII at once.
		start := i
		for i < len(data) {
			c := data[i]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			i++
		}
		dst = append(dst, data[start:i]...)
		if i >= len(data) {
			d.pos = i
			return dst, d.syntax("%v", errUnexpectedEnd)
		}
		switch c := data[i]; {
		case c == '"':
			d.pos = i + 1
			return dst, nil
		case c < 0x20:
			d.pos = i
			return dst, d.syntax("control character %q in a string", c)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				d.pos = i
				return dst, d.syntax("invalid UTF-8 in a string")
			}
			dst = append(dst, data[i:i+size]...)
			i += size
		default: // '\\'
			var err error
			if dst, i, err = d.unescape(dst, i); err != nil {
				return dst, err
			}
		}
	}
}

// unescape decodes the escape sequence at data[i] ('\\') onto dst and
// returns the index after it.
func (d *Decoder) unescape(dst []byte, i int) ([]byte, int, error) {
	data := d.data
	if i+1 >= len(data) {
		d.pos = len(data)
		return dst, i, d.syntax("%v", errUnexpectedEnd)
	}
	switch c := data[i+1]; c {
	case '"', '\\', '/':
		return append(dst, c), i + 2, nil
	case 'b':
		return append(dst, '\b'), i + 2, nil
	case 'f':
		return append(dst, '\f'), i + 2, nil
	case 'n':
		return append(dst, '\n'), i + 2, nil
	case 'r':
		return append(dst, '\r'), i + 2, nil
	case 't':
		return append(dst, '\t'), i + 2, nil
	case 'u':
		r, ok := hex4(data, i+2)
		if !ok {
			d.pos = i
			return dst, i, d.syntax(`invalid \u escape in a string`)
		}
		i += 6
		if utf16.IsSurrogate(r) {
			r2, ok := rune(-1), false
			if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
				r2, ok = hex4(data, i+2)
			}
			if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
				return utf8.AppendRune(dst, dec), i + 6, nil
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(dst, r), i, nil
	}
	d.pos = i
	return dst, i, d.syntax("invalid escape %q in a string", data[i:i+2])
}

// hex4 decodes the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
