package pebble_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/synth"
)

// sampleBlocks is the sample chain's header and its first n blocks.
func sampleBlocks(t testing.TB, n int) (chainlog.Header, []*chainlog.Block) {
	t.Helper()
	zr, err := gzip.NewReader(synth.Sample())
	if err != nil {
		t.Fatal(err)
	}
	r, err := chainlog.NewReader(zr)
	if err != nil {
		t.Fatal(err)
	}
	var bs []*chainlog.Block
	for len(bs) < n {
		b, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, &b)
	}
	return r.Header(), bs
}

// chainOpts keeps a short history window, so the exported store has a
// moving floor, pruned versions and pending gc entries.
func chainOpts(h chainlog.Header) pebble.Options {
	return pebble.Options{Sync: pebble.SyncNever, ReputationConfig: repCfg(h), Logger: slog.New(slog.DiscardHandler)}
}

func executor(t testing.TB, hdr chainlog.Header, reconfs []chainlog.Reconfigure, open func(chainlog.Header) (store.Store, error)) *blockexec.Executor {
	t.Helper()
	x, err := blockexec.New(hdr, blockexec.Options{OpenStore: open, Reconfigurations: reconfs})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// step executes b and checks the digest against the sample's.
func step(t testing.TB, x *blockexec.Executor, b *chainlog.Block) cip11.Hash {
	t.Helper()
	out, err := x.Step(b)
	if err != nil {
		t.Fatalf("block %d: %v", b.Height, err)
	}
	if out.StateDigest != b.Out.StateDigest {
		t.Fatalf("block %d: digest %s, the sample records %s", b.Height, out.StateDigest, b.Out.StateDigest)
	}
	return out.StateDigest
}

func snapshotOf(t testing.TB, x *blockexec.Executor) []byte {
	t.Helper()
	e, err := x.Store().(*pebble.Store).Export()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var buf bytes.Buffer
	if _, err := e.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// views is every registry view the store serves at or below h, dumped,
// from the highest down to the first height that fails
// (state.ErrUnknownHeight: the retention floor).
func views(t testing.TB, s *pebble.Store, h uint64) []string {
	t.Helper()
	var out []string
	for ; ; h-- {
		v, err := s.At(h)
		if errors.Is(err, state.ErrUnknownHeight) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		fmt.Fprintln(&b, v.Height(), len(v.ActiveRunners()), v.ActiveRunners(), v.ReputationConfig())
		for r := range v.ByAddress() {
			fmt.Fprintf(&b, "%+v\n", r)
		}
		if err := v.Err(); err != nil {
			t.Fatalf("view %d: %v", h, err)
		}
		out = append(out, b.String())
		if h == 0 {
			return out
		}
	}
}

// TestSnapshotChainRoundTrip replays the sample over pebble to height H,
// exports there, and goes on committing to H+K before streaming the
// export (snapshot isolation). The stream imports into a store at H with
// the same state digest and the same registry views from the retention
// floor to H, whose re-export is byte-identical to the stream; then both
// stores execute blocks H+1..H+K with equal digests (the sample's) at every
// height and end byte-identical.
func TestSnapshotChainRoundTrip(t *testing.T) {
	H, K := 100, 30
	if raceOn || testing.Short() {
		H, K = 40, 10 // the race detector makes each block ~20× slower
	}
	hdr, blocks := sampleBlocks(t, H+K)
	if len(blocks) != H+K {
		t.Fatalf("sample has %d blocks", len(blocks))
	}
	srcDir := t.TempDir()
	src := executor(t, hdr, nil, func(h chainlog.Header) (store.Store, error) { return pebble.Open(srcDir, chainOpts(h)) })
	defer src.Close()
	for _, b := range blocks[:H] {
		step(t, src, b)
	}
	srcStore := src.Store().(*pebble.Store)
	e, err := srcStore.Export()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Height() != uint64(H) {
		t.Fatalf("export height %d", e.Height())
	}
	wantDigest, err := src.Digest()
	if err != nil {
		t.Fatal(err)
	}
	wantViews := views(t, srcStore, uint64(H))
	if len(wantViews) < 2 {
		t.Fatalf("only %d views at or below %d", len(wantViews), H)
	}
	reconfs := src.Reconfigurations()
	digests := map[uint64]cip11.Hash{}
	for _, b := range blocks[H:] {
		digests[uint64(b.Height)] = step(t, src, b)
	}
	var stream bytes.Buffer
	if _, err := e.WriteTo(&stream); err != nil {
		t.Fatal(err)
	}

	dstDir := filepath.Join(t.TempDir(), "imported")
	imported, err := pebble.Import(dstDir, bytes.NewReader(stream.Bytes()), chainOpts(hdr))
	if err != nil {
		t.Fatal(err)
	}
	dst := executor(t, hdr, reconfs, func(chainlog.Header) (store.Store, error) { return imported, nil })
	defer dst.Close()
	if h, ok := dst.LastCommitted(); h != uint64(H) || !ok {
		t.Fatalf("imported store at %d (%v)", h, ok)
	}
	if d, err := dst.Digest(); err != nil || d != wantDigest {
		t.Fatalf("imported digest %s (%v), exported at %s", d, err, wantDigest)
	}
	gotViews := views(t, imported, uint64(H))
	if len(gotViews) != len(wantViews) {
		t.Fatalf("imported store serves %d views, the source served %d", len(gotViews), len(wantViews))
	}
	for i := range gotViews {
		if gotViews[i] != wantViews[i] {
			t.Fatalf("view %d differs", H-i)
		}
	}
	t.Logf("stream %d bytes at height %d; views %d..%d equal", stream.Len(), H, H-len(wantViews)+1, H)
	if !bytes.Equal(snapshotOf(t, dst), stream.Bytes()) {
		t.Fatal("re-export of the imported store differs from the stream")
	}
	for _, b := range blocks[H:] {
		if d := step(t, dst, b); d != digests[uint64(b.Height)] {
			t.Fatalf("block %d: imported digest %s, source %s", b.Height, d, digests[uint64(b.Height)])
		}
	}
	if !bytes.Equal(snapshotOf(t, dst), snapshotOf(t, src)) {
		t.Fatalf("after blocks %d..%d the stores' snapshots differ", H+1, H+K)
	}
}
