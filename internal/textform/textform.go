package textform

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
)

// Sentinel errors. Every parse failure wraps exactly one of them.
var (
	// ErrUppercaseHex: a hex digit is one of A–F (D18 hex is lowercase).
	ErrUppercaseHex = errors.New("textform: uppercase hex digit")
	// ErrBadHex: a character is not a hex digit (this includes a 0x prefix
	// and whitespace).
	ErrBadHex = errors.New("textform: not a hex digit")
	// ErrOddHex: the hex string has an odd number of digits.
	ErrOddHex = errors.New("textform: odd number of hex digits")
	// ErrHexLength: the hex string is well formed but not the required length.
	ErrHexLength = errors.New("textform: wrong hex length")
	// ErrBadDecimal: the decimal string is empty or has a character other
	// than 0–9 (a sign, whitespace, a point, an exponent, …).
	ErrBadDecimal = errors.New("textform: not a decimal string")
	// ErrLeadingZero: the decimal string has a leading zero.
	ErrLeadingZero = errors.New("textform: leading zero in decimal string")
	// ErrOutOfRange: the decimal string is canonical but its value does not
	// fit the type.
	ErrOutOfRange = errors.New("textform: decimal out of range")
)

// Text is what the parsers accept: a string or a byte slice.
type Text interface{ ~string | ~[]byte }

const hexDigits = "0123456789abcdef"

// AppendHex appends the lowercase hex form of b to dst.
func AppendHex(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return dst
}

// Hex returns the lowercase hex form of b.
func Hex(b []byte) string { return string(AppendHex(make([]byte, 0, 2*len(b)), b)) }

// ParseHex decodes a hex byte string of any even length. The empty string
// decodes to an empty, non-nil slice.
func ParseHex[T Text](s T) ([]byte, error) {
	if err := checkHex(s); err != nil {
		return nil, err
	}
	out := make([]byte, len(s)/2)
	decodeHex(out, s)
	return out, nil
}

// ParseHexInto decodes a hex byte string of exactly 2·len(dst) digits into
// dst. On error dst is unchanged.
func ParseHexInto[T Text](dst []byte, s T) error {
	if err := checkHex(s); err != nil {
		return err
	}
	if len(s) != 2*len(dst) {
		return fmt.Errorf("%w: want %d hex digits, got %d", ErrHexLength, 2*len(dst), len(s))
	}
	decodeHex(dst, s)
	return nil
}

func checkHex[T Text](s T) error {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			return fmt.Errorf("%w: %q at offset %d of %s", ErrUppercaseHex, c, i, excerpt(s))
		default:
			return fmt.Errorf("%w: %q at offset %d of %s", ErrBadHex, c, i, excerpt(s))
		}
	}
	if len(s)%2 != 0 {
		return fmt.Errorf("%w: %d digits in %s", ErrOddHex, len(s), excerpt(s))
	}
	return nil
}

// decodeHex decodes s, already checked by checkHex, into dst.
func decodeHex[T Text](dst []byte, s T) {
	for i := range dst {
		dst[i] = nibble(s[2*i])<<4 | nibble(s[2*i+1])
	}
}

func nibble(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// FormatU64 returns the decimal form of v.
func FormatU64(v uint64) string { return strconv.FormatUint(v, 10) }

// AppendU64 appends the decimal form of v to dst.
func AppendU64(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 10) }

// ParseU64 parses a canonical decimal u64.
func ParseU64[T Text](s T) (uint64, error) {
	hi, lo, err := parseDecimal(s, "u64")
	if err == nil && hi != 0 {
		err = fmt.Errorf("%w: %s is not a u64", ErrOutOfRange, excerpt(s))
	}
	if err != nil {
		return 0, err
	}
	return lo, nil
}

// ParseU128 parses a canonical decimal u128 into its high and low 64-bit
// halves (value = hi·2^64 + lo).
func ParseU128[T Text](s T) (hi, lo uint64, err error) { return parseDecimal(s, "u128") }

// parseDecimal parses a canonical decimal below 2^128; what names the
// target type in errors.
func parseDecimal[T Text](s T, what string) (hi, lo uint64, err error) {
	if len(s) == 0 {
		return 0, 0, fmt.Errorf("%w: empty %s", ErrBadDecimal, what)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			return 0, 0, fmt.Errorf("%w: %q at offset %d of %s %s", ErrBadDecimal, c, i, what, excerpt(s))
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, 0, fmt.Errorf("%w: %s %s", ErrLeadingZero, what, excerpt(s))
	}
	for i := 0; i < len(s); i++ {
		var ok bool
		if hi, lo, ok = mulAdd10(hi, lo, uint64(s[i]-'0')); !ok {
			return 0, 0, fmt.Errorf("%w: %s is not a u128", ErrOutOfRange, excerpt(s))
		}
	}
	return hi, lo, nil
}

// mulAdd10 returns (hi,lo)·10 + d and whether it fits in 128 bits.
func mulAdd10(hi, lo, d uint64) (uint64, uint64, bool) {
	hhi, hlo := bits.Mul64(hi, 10)
	lhi, llo := bits.Mul64(lo, 10)
	h, c1 := bits.Add64(hlo, lhi, 0)
	l, c2 := bits.Add64(llo, d, 0)
	h, c3 := bits.Add64(h, 0, c2)
	return h, l, hhi|c1|c3 == 0
}

// FormatU128 returns the decimal form of hi·2^64 + lo.
func FormatU128(hi, lo uint64) string { return string(AppendU128(nil, hi, lo)) }

// AppendU128 appends the decimal form of hi·2^64 + lo to dst.
func AppendU128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return strconv.AppendUint(dst, lo, 10)
	}
	// Split off the low 19 decimal digits, (hi,lo) = q·10^19 + r, and
	// format q (≥ 1, since hi ≠ 0 means the value exceeds 10^19) first.
	const e19 = 10_000_000_000_000_000_000
	qhi, rhi := hi/e19, hi%e19
	qlo, r := bits.Div64(rhi, lo, e19)
	dst = AppendU128(dst, qhi, qlo)
	var digits [19]byte
	for i := len(digits) - 1; i >= 0; i-- {
		digits[i] = byte('0' + r%10)
		r /= 10
	}
	return append(dst, digits[:]...)
}

// excerpt quotes s for an error message, eliding the middle of long strings.
func excerpt[T Text](s T) string {
	const max = 72
	if len(s) <= max {
		return strconv.Quote(string(s))
	}
	return strconv.Quote(string(s[:max/2])) + "…" + strconv.Quote(string(s[len(s)-max/2:])) +
		fmt.Sprintf(" (%d bytes)", len(s))
}
