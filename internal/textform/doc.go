// Package textform is the one strict implementation of the text form of
// DECISIONS D18, shared by the conformance vectors and the chain log:
//
//   - a byte string is lowercase hex without 0x, two digits per byte; the
//     empty string is the empty byte string;
//   - a u64 or u128 is a decimal string of ASCII digits with no sign, no
//     whitespace, no leading zeros (except "0" itself) and a value in range.
//
// Every accepted string has exactly one form, so parse → format reproduces
// the input byte for byte. Each kind of malformation wraps its own exported
// sentinel error. The parsers accept a string or a byte slice, so a type's
// UnmarshalText can pass its argument straight through without copying:
//
//	func (a *Address) UnmarshalText(b []byte) error { return textform.ParseHexInto(a[:], b) }
//	func (a Address) MarshalText() ([]byte, error) { return textform.AppendHex(nil, a[:]), nil }
//
// A parser that fails leaves its destination untouched.
package textform
