package node

import (
	"bufio"
	"bytes"
	"compress/flate"
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

// FuzzReadSnapCore: no stream panics the node-section reader, in either
// format, and a section it accepts is read whole (the reader it returns
// starts where the store's export begins).
func FuzzReadSnapCore(f *testing.F) {
	c := snapCore{Height: 3, Base: 0, Reconfigurations: []chainlog.Reconfigure{}, Specs: [][]byte{{1, 2}}, Blocks: nil}
	core, _ := json.Marshal(c)
	body := append(binary.AppendUvarint(nil, uint64(len(core))), core...)
	plain := append(slices.Clone(snapMagicPlain), body...)
	f.Add(append(slices.Clone(plain), "CIP11SNP"...), uint32(1), uint64(0))
	f.Add(plain[:len(plain)-3], uint32(1), uint64(0))
	f.Add([]byte("CIP11SS\x02\x00"), uint32(2), uint64(1))
	f.Add(append(binary.AppendUvarint(slices.Clone(snapMagicPlain), 1<<40), '{'), uint32(1), uint64(0))
	deflated := func(b []byte) []byte {
		var buf bytes.Buffer
		buf.Write(snapMagic)
		zw, _ := flate.NewWriter(&buf, snapDeflateLevel)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	withExport := append(slices.Clone(body), "CIP11SNP"...)
	f.Add(deflated(withExport), uint32(2), uint64(len(withExport)))
	f.Add(deflated(withExport), uint32(2), uint64(len(body)-1))
	f.Add(deflated(binary.AppendUvarint(nil, 1<<40)), uint32(2), uint64(1<<41))
	f.Fuzz(func(t *testing.T, stream []byte, format uint32, raw uint64) {
		m := SnapshotMeta{Format: format, Size: uint64(len(stream)), RawSize: raw}
		got, rest, err := readSnapCore(bufio.NewReader(bytes.NewReader(stream)), m)
		if err != nil {
			return
		}
		if rest == nil || !SnapshotFormatKnown(format) {
			t.Fatalf("accepted format %d with reader %v", format, rest)
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
