package wire

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// CBOR major types used by the §12.6 deterministic profile as applied to
// frames (DECISIONS D7–D9). Nothing else is ever valid in a frame payload.
const (
	majUint  = 0
	majBytes = 2
	majText  = 3
	majArray = 4
	majMap   = 5
	majOther = 7

	cborFalse = 0xf4
	cborTrue  = 0xf5
	cborNull  = 0xf6
)

// appendHead appends a CBOR head with the shortest argument encoding
// (RFC 8949 §4.2.1).
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return append(b, m|25, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(b, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func appendUint(b []byte, n uint64) []byte { return appendHead(b, majUint, n) }
func appendBytes(b, v []byte) []byte       { return append(appendHead(b, majBytes, uint64(len(v))), v...) }
func appendText(b []byte, s string) []byte {
	return append(appendHead(b, majText, uint64(len(s))), s...)
}
func appendKey(b []byte, k int) []byte       { return append(b, byte(k)) } // keys are < 24
func appendMapHead(b []byte, n int) []byte   { return appendHead(b, majMap, uint64(n)) }
func appendArrayHead(b []byte, n int) []byte { return appendHead(b, majArray, uint64(n)) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, cborTrue)
	}
	return append(b, cborFalse)
}

func appendOptText(b []byte, s *string) []byte {
	if s == nil {
		return append(b, cborNull)
	}
	return appendText(b, *s)
}

// decoder is a strict reader of the profile: it accepts exactly what the
// encoder above produces and names the first defect it meets (D9).
type decoder struct {
	b   []byte
	off int
}

// head reads one CBOR head, rejecting indefinite lengths, reserved
// additional-information values and non-shortest arguments.
func (d *decoder) head() (major byte, n uint64, err error) {
	if d.off >= len(d.b) {
		return 0, 0, ErrCBORTruncated
	}
	ib := d.b[d.off]
	d.off++
	major, ai := ib>>5, ib&0x1f
	switch {
	case ai < 24:
		return major, uint64(ai), nil
	case ai == 31:
		return major, 0, ErrCBORIndefinite
	case ai > 27:
		return major, 0, fmt.Errorf("%w: reserved additional information %d", ErrCBORMalformed, ai)
	}
	size := 1 << (ai - 24)
	if len(d.b)-d.off < size {
		return major, 0, ErrCBORTruncated
	}
	for _, c := range d.b[d.off : d.off+size] {
		n = n<<8 | uint64(c)
	}
	d.off += size
	if major == majOther {
		return major, n, nil // floats and simple values: rejected by the caller
	}
	if (ai == 24 && n < 24) || (ai == 25 && n <= 0xff) || (ai == 26 && n <= 0xffff) || (ai == 27 && n <= 0xffffffff) {
		return major, n, ErrCBORNonCanonical
	}
	return major, n, nil
}

// expect reads a head and requires the given major type.
func (d *decoder) expect(major byte) (uint64, error) {
	start := d.off
	m, n, err := d.head()
	if err != nil {
		return 0, err
	}
	if m != major {
		return 0, fmt.Errorf("%w: major type %d (initial byte 0x%02x), want %d", ErrCBORType, m, d.b[start], major)
	}
	return n, nil
}

func (d *decoder) uint(max uint64) (uint64, error) {
	n, err := d.expect(majUint)
	if err != nil {
		return 0, err
	}
	if n > max {
		return 0, fmt.Errorf("%w: %d > %d", ErrFieldRange, n, max)
	}
	return n, nil
}

// bytes returns a view of the next byte string (not a copy).
func (d *decoder) bytes() ([]byte, error) {
	n, err := d.expect(majBytes)
	if err != nil {
		return nil, err
	}
	if uint64(len(d.b)-d.off) < n {
		return nil, ErrCBORTruncated
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return v, nil
}

func (d *decoder) fixed(dst []byte) error {
	v, err := d.bytes()
	if err != nil {
		return err
	}
	if len(v) != len(dst) {
		return fmt.Errorf("%w: %d bytes, want %d", ErrFieldLength, len(v), len(dst))
	}
	copy(dst, v)
	return nil
}

func (d *decoder) text() (string, error) {
	n, err := d.expect(majText)
	if err != nil {
		return "", err
	}
	if uint64(len(d.b)-d.off) < n {
		return "", ErrCBORTruncated
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	if !utf8.Valid(v) {
		return "", ErrCBORInvalidUTF8
	}
	return string(v), nil
}

func (d *decoder) bool() (bool, error) {
	if d.off >= len(d.b) {
		return false, ErrCBORTruncated
	}
	switch d.b[d.off] {
	case cborFalse:
		d.off++
		return false, nil
	case cborTrue:
		d.off++
		return true, nil
	}
	return false, fmt.Errorf("%w: initial byte 0x%02x, want a bool", ErrCBORType, d.b[d.off])
}

// null consumes a CBOR null if one is next.
func (d *decoder) null() bool {
	if d.off < len(d.b) && d.b[d.off] == cborNull {
		d.off++
		return true
	}
	return false
}

func (d *decoder) optText() (*string, error) {
	if d.null() {
		return nil, nil
	}
	s, err := d.text()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// mapHead requires a definite map of exactly n entries.
func (d *decoder) mapHead(n int) error {
	got, err := d.expect(majMap)
	if err != nil {
		return err
	}
	if got != uint64(n) {
		return fmt.Errorf("%w: %d keys, want %d", ErrFrameFieldCount, got, n)
	}
	return nil
}

// key requires the next map key to be the unsigned integer k: with every
// field present, canonical order means key i is exactly i (D7).
func (d *decoder) key(k int) error {
	got, err := d.expect(majUint)
	if err != nil {
		return err
	}
	if got != uint64(k) {
		return fmt.Errorf("%w: key %d at position %d", ErrFrameKeyOrder, got, k)
	}
	return nil
}

func (d *decoder) arrayHead() (int, error) {
	n, err := d.expect(majArray)
	if err != nil {
		return 0, err
	}
	// Every element takes at least one byte, so a count beyond the remaining
	// input is truncation; checking first bounds any allocation by the input.
	if n > uint64(len(d.b)-d.off) {
		return 0, ErrCBORTruncated
	}
	return int(n), nil
}

func (d *decoder) end() error {
	if d.off != len(d.b) {
		return fmt.Errorf("%w: %d bytes after the payload", ErrFrameTrailingBytes, len(d.b)-d.off)
	}
	return nil
}
