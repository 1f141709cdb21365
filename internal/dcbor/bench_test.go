package dcbor

import "testing"

// BenchmarkNew is the cost of building a Codec, paid by every caller that
// does not keep one.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New()
	}
}

func BenchmarkMarshal(b *testing.B) {
	c := New()
	v := rec{A: 1 << 40, B: 7, H: [4]byte{1, 2, 3, 4}, L: []string{"a", "b"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Marshal(&v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	c := New()
	in, _ := c.Marshal(&rec{A: 1 << 40, B: 7, H: [4]byte{1, 2, 3, 4}, L: []string{"a", "b"}})
	b.ReportAllocs()
	for b.Loop() {
		var r rec
		if err := c.Unmarshal(in, &r); err != nil {
			b.Fatal(err)
		}
	}
}
