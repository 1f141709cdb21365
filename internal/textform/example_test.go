package textform_test

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11/internal/textform"
)

func ExampleParseHexInto() {
	var addr [4]byte
	fmt.Println(textform.ParseHexInto(addr[:], "c0ffee00"), textform.Hex(addr[:]))
	err := textform.ParseHexInto(addr[:], "C0FFEE00")
	fmt.Println(errors.Is(err, textform.ErrUppercaseHex))
	// Output:
	// <nil> c0ffee00
	// true
}

func ExampleParseU128() {
	hi, lo, err := textform.ParseU128("18446744073709551616")
	fmt.Println(hi, lo, err, textform.FormatU128(hi, lo))
	_, err = textform.ParseU64("007")
	fmt.Println(errors.Is(err, textform.ErrLeadingZero))
	// Output:
	// 1 0 <nil> 18446744073709551616
	// true
}
