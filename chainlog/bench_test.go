package chainlog

import "testing"

// BenchmarkDecodeBlock measures the strict decoder on a typical block line.
func BenchmarkDecodeBlock(b *testing.B) {
	blk := sampleBlock(9)
	line, err := EncodeBlock(&blk)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := DecodeBlock(line); err != nil {
			b.Fatal(err)
		}
	}
}
