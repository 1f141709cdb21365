package node

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
)

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// FuzzDecodeSnapshotMeta: no offered snapshot panics decodeMeta, and an
// accepted metadata re-encodes to bytes that decode to the same meta.
func FuzzDecodeSnapshotMeta(f *testing.F) {
	m := SnapshotMeta{Format: SnapshotFormat, Height: 64, Base: 0, Size: 5000, ChunkSize: 4096, ChunkHashes: make([]cip11.Hash, 2)}
	good, _ := json.Marshal(m)
	f.Add(uint64(64), uint32(1), uint32(2), good)
	f.Add(uint64(64), uint32(1), uint32(3), good)
	f.Add(uint64(65), uint32(1), uint32(2), good)
	f.Add(uint64(64), uint32(2), uint32(2), good)
	f.Add(uint64(64), uint32(1), uint32(2), []byte(`{"format":1}`))
	f.Fuzz(func(t *testing.T, h uint64, format, chunks uint32, meta []byte) {
		sum := sha256Sum(meta)
		info := SnapshotInfo{Height: h, Format: format, Chunks: chunks, Hash: sum, Metadata: meta}
		got, err := decodeMeta(info)
		if err != nil {
			return
		}
		if got.Height != h || got.Format != format || len(got.ChunkHashes) != int(chunks) || got.Base >= got.Height {
			t.Fatalf("accepted %+v for %+v", got, info)
		}
		enc, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeMeta(SnapshotInfo{Height: h, Format: format, Chunks: chunks, Hash: sha256Sum(enc), Metadata: enc})
		if err != nil || !slices.Equal(again.ChunkHashes, got.ChunkHashes) || again.Size != got.Size {
			t.Fatalf("re-encoded meta %q: %+v, %v", enc, again, err)
		}
	})
}

// FuzzReadSnapCore: no stream panics the node-section reader, and a
// section it accepts is read whole (the reader stops where the store's
// export begins).
func FuzzReadSnapCore(f *testing.F) {
	c := snapCore{Height: 3, Base: 0, Reconfigurations: []chainlog.Reconfigure{}, Specs: [][]byte{{1, 2}}, Blocks: nil}
	core, _ := json.Marshal(c)
	good := append(binary.AppendUvarint(slices.Clone(snapMagic), uint64(len(core))), core...)
	f.Add(append(slices.Clone(good), "CIP11SNP"...))
	f.Add(good[:len(good)-3])
	f.Add([]byte("CIP11SS\x02\x00"))
	f.Add(append(binary.AppendUvarint(slices.Clone(snapMagic), 1<<40), '{'))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bufio.NewReader(bytes.NewReader(stream))
		got, err := readSnapCore(r, uint64(len(stream)))
		if err != nil {
			return
		}
		enc, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var back snapCore
		if err := json.Unmarshal(enc, &back); err != nil || back.Height != got.Height || len(back.Blocks) != len(got.Blocks) {
			t.Fatalf("accepted section does not round-trip: %v", err)
		}
	})
}
