// Package jsonscan reads JSON documents of a known, usual shape without reflection and
// without a separate validation pass. encoding/json cost the broker about 2 µs of CPU
// per acknowledged message and the load tool 5-6 µs per popped message (reflection, a
// validation pass, one allocation per string field); a Scanner walks the document once,
// checking its syntax as it goes, and hands the caller the bounds of what it reads.
//
// A Scanner decides only what it can decide exactly as encoding/json would: strings
// with escape sequences, keys in another letter case, numbers where a string is wanted
// and the like make a read report false, and the caller then decodes the document with
// encoding/json, which owns every error message. So a caller never refuses a document
// because of a Scanner; it only accepts, faster, documents encoding/json would accept
// identically (differential tests and fuzz corpora hold each caller to that).
package jsonscan

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of the containers SkipValue walks. encoding/json refuses
// documents nested more than 10000 deep; past maxDepth the read reports false and
// encoding/json decides, so the limit only bounds the recursion.
const maxDepth = 1000

// Scanner walks one JSON document.
type Scanner struct {
	b     []byte
	i     int
	depth int // containers SkipValue is inside
}

// New returns a Scanner at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Bytes returns the document.
func (s *Scanner) Bytes() []byte { return s.b }

// Offset returns how far the Scanner has read, in bytes.
func (s *Scanner) Offset() int { return s.i }

// ws skips insignificant whitespace.
func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume skips whitespace and then c; false when the next byte is not c.
func (s *Scanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// Null reads null if it is the next value and reports whether it did.
func (s *Scanner) Null() bool {
	s.ws()
	return s.i < len(s.b) && s.b[s.i] == 'n' && s.literal("null")
}

// PlainString reads a string without escapes or control characters and returns its
// contents' bounds; ok is false for anything else.
func (s *Scanner) PlainString() (start, end int, ok bool) {
	if !s.consume('"') {
		return 0, 0, false
	}
	start = s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return start, s.i - 1, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		}
		s.i++
	}
	return 0, 0, false
}

// skipString skips a string, escapes included.
func (s *Scanner) skipString() bool {
	if !s.consume('"') {
		return false
	}
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if !s.escape() {
				return false
			}
			continue
		case c < 0x20:
			return false
		}
		s.i++
	}
	return false
}

// escape skips the escape sequence at s.i.
func (s *Scanner) escape() bool {
	if s.i+1 >= len(s.b) {
		return false
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return true
	case 'u':
		if s.i+6 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 6
		return true
	}
	return false
}

// SkipValue skips one value of any kind, checking its syntax, and returns its bounds
// (without the whitespace around it).
func (s *Scanner) SkipValue() (start, end int, ok bool) {
	s.ws()
	start = s.i
	if s.i >= len(s.b) {
		return 0, 0, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		ok = s.skipString()
	case c == '{':
		ok = s.skipContainer('}', true)
	case c == '[':
		ok = s.skipContainer(']', false)
	case c == 't':
		ok = s.literal("true")
	case c == 'f':
		ok = s.literal("false")
	case c == 'n':
		ok = s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		ok = s.number()
	}
	return start, s.i, ok
}

func (s *Scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// number skips a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() bool {
	s.skip('-')
	switch {
	case s.skip('0'):
	case s.digits() == 0:
		return false
	}
	if s.skip('.') && s.digits() == 0 {
		return false
	}
	if s.skip('e') || s.skip('E') {
		_ = s.skip('+') || s.skip('-')
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

// skip consumes c if it is next (no whitespace first).
func (s *Scanner) skip(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// digits consumes a run of digits and returns its length.
func (s *Scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// skipContainer skips an object (keyed) or an array whose opening byte is next.
func (s *Scanner) skipContainer(closing byte, keyed bool) bool {
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.i++
	if s.consume(closing) {
		s.depth--
		return true
	}
	for {
		if keyed {
			if !s.skipString() || !s.consume(':') {
				return false
			}
		}
		if _, _, ok := s.SkipValue(); !ok {
			return false
		}
		if s.consume(closing) {
			s.depth--
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// Object calls field with each key of the object that is next; field reads or skips
// the value. A key with escapes, or one field refuses, ends the walk with false.
func (s *Scanner) Object(field func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		ks, ke, ok := s.PlainString()
		if !ok || !s.consume(':') || !field(s.b[ks:ke]) {
			return false
		}
		if s.consume('}') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// Array calls elem for each element of the array that is next; elem reads it.
func (s *Scanner) Array(elem func() bool) bool {
	if !s.consume('[') {
		return false
	}
	if s.consume(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.consume(']') {
			return true
		}
		if !s.consume(',') {
			return false
		}
	}
}

// End reports whether only whitespace is left.
func (s *Scanner) End() bool {
	s.ws()
	return s.i == len(s.b)
}

// SkipField skips the value of key unless encoding/json would store it in a field
// tagged with one of names (it matches keys without regard to case): false then, so
// the caller falls back.
func (s *Scanner) SkipField(key []byte, names ...string) bool {
	if FoldsTo(key, names...) {
		return false
	}
	_, _, ok := s.SkipValue()
	return ok
}

// FoldsTo reports whether key equals one of names without regard to letter case, as
// encoding/json matches keys to field tags.
func FoldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// Name reads a non-empty string without escapes or control characters, valid UTF-8,
// and returns its bytes (a window on the document); ok is false for anything else.
func (s *Scanner) Name() ([]byte, bool) {
	start, end, ok := s.PlainString()
	if !ok || start == end || !utf8.Valid(s.b[start:end]) {
		return nil, false
	}
	return s.b[start:end], true
}

// StringInto reads a string (or null, which leaves dst alone as encoding/json does)
// into dst as a substring of text, the document as one string: one allocation for all
// the strings of a document instead of one each.
func (s *Scanner) StringInto(text string, dst *string) bool {
	if s.Null() {
		return true
	}
	start, end, ok := s.PlainString()
	if !ok || !utf8.Valid(s.b[start:end]) { // encoding/json would replace invalid bytes
		return false
	}
	*dst = text[start:end]
	return true
}

// IntInto reads an integer (or null, which leaves dst alone) into dst.
func (s *Scanner) IntInto(dst *int) bool {
	start, end, ok := s.SkipValue()
	if !ok || string(s.b[start:end]) == "null" {
		return ok
	}
	n, err := strconv.Atoi(string(s.b[start:end]))
	if err != nil {
		return false
	}
	*dst = n
	return true
}
