package blockheader

import (
	"testing"

	"github.com/cip11/cip11/seed"
)

// benchHeader is a block with a 5,000-runner bitmap (§6.6) and 4 consumed seeds.
func benchHeader() *Header {
	h := block2()
	h.Presence = make([]byte, 2+625)
	h.Presence[0] = 0x01
	h.ConsumedSeeds = seed.ConsumedSeedsV1{}
	for v := range uint64(4) {
		h.ConsumedSeeds = append(h.ConsumedSeeds, seed.ConsumedSeed{Round: seed.Round{View: v}})
	}
	return h
}

func BenchmarkEncode(b *testing.B) {
	h := benchHeader()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	in, err := Encode(benchHeader())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
