package node

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/chainlog"
)

// snapValidator is a single validator with snapshots every interval
// blocks, small chunks and retention keep (0: none).
func snapValidator(t *testing.T, d *GeneratedGenesis, dir string, interval, keep uint64) *Validator {
	t.Helper()
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true,
		SnapshotInterval: interval, SnapshotChunkSize: 4096, KeepBlocks: keep})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// produce makes n blocks on v, submitting one job before each (submitter
// tag·n+i, so two chains with other tags differ).
func produce(t *testing.T, v *Validator, n int, tag byte) {
	t.Helper()
	for i := range n {
		h := v.Height()
		spec := &JobSpec{Submitter: cip11.Address{tag, byte(h >> 8), byte(h)}, Runners: 1, TimeoutBlocks: 3, Payload: []byte{byte(i)}}
		if _, err := v.SubmitJob(spec); err != nil {
			t.Fatal(err)
		}
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		waitSnapshots(t, v)
	}
}

// waitSnapshots waits until every snapshot due at v's height is written
// (the writer is asynchronous).
func waitSnapshots(t *testing.T, v *Validator) {
	t.Helper()
	k := v.cfg.SnapshotInterval
	if k == 0 {
		return
	}
	want := v.Height() / k * k
	deadline := time.Now().Add(10 * time.Second)
	for want > 0 {
		s := v.Snapshots()
		if len(s) > 0 && s[0].Height >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at %d (have %v)", want, s)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func digestOf(t *testing.T, v *Validator) cip11.Hash {
	t.Helper()
	var d cip11.Hash
	var err error
	if derr := v.do(func(*chain.Core) { d, err = v.x.Digest() }); derr != nil || err != nil {
		t.Fatal(derr, err)
	}
	if b := v.LastBlock(); b == nil || b.Out.StateDigest != d {
		t.Fatalf("the store's digest %s is not the last block's", d)
	}
	return d
}

// logLines are the block log's lines after the header.
func logLines(t *testing.T, dir string) (base *logBase, heights []uint64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "blocks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	for i, l := range lines[1:] {
		if i == 0 && bytes.HasPrefix(l, []byte(baseLinePrefix)) {
			lb, err := decodeBase(l)
			if err != nil {
				t.Fatal(err)
			}
			base = &lb
			continue
		}
		blk, err := chainlog.DecodeBlock(l)
		if err != nil {
			t.Fatal(err)
		}
		heights = append(heights, uint64(blk.Height))
	}
	return base, heights
}

// TestRetainPrunesBlockLog (docs/storage.md "Retention"): with KeepBlocks
// 256 and a snapshot every 64 blocks, after 420 blocks the block log
// holds a base line and only the blocks above it (at least 256 of them),
// the engine is told the same retain height, a restart recovers the same
// state from the pruned log, and the chain goes on.
func TestRetainPrunesBlockLog(t *testing.T) {
	d := testDevnet(t, 4, nil)
	dir := t.TempDir()
	v := snapValidator(t, d, dir, 64, 256)
	var retains []uint64
	for range 420 {
		h := v.Height()
		spec := &JobSpec{Submitter: cip11.Address{1, byte(h >> 8), byte(h)}, Runners: 1, TimeoutBlocks: 3}
		if _, err := v.SubmitJob(spec); err != nil {
			t.Fatal(err)
		}
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		waitSnapshots(t, v)
		retains = append(retains, v.lastRetain.Load())
	}
	h := v.Height()
	base, heights := logLines(t, dir)
	if base == nil {
		t.Fatalf("no base line after %d blocks", h)
	}
	// the newest snapshot at least 256 below 420 is 128: its window base
	if base.Height < 64 || base.Height > h-256 {
		t.Fatalf("base %d at height %d (keep 256)", base.Height, h)
	}
	if heights[0] != base.Height+1 || heights[len(heights)-1] != h || uint64(len(heights)) != h-base.Height {
		t.Fatalf("log holds %d … %d (%d lines) behind base %d", heights[0], heights[len(heights)-1], len(heights), base.Height)
	}
	if got := v.EarliestHeight(); got != base.Height+1 {
		t.Fatalf("EarliestHeight %d, base %d", got, base.Height)
	}
	if st := v.Status(); st.EarliestBlockHeight != base.Height+1 || st.LatestBlockHeight != h {
		t.Fatalf("/status earliest_block_height %d, latest %d; base %d", st.EarliestBlockHeight, st.LatestBlockHeight, base.Height)
	}
	if r := retains[len(retains)-1]; r != base.Height+1 {
		t.Fatalf("retain height %d, want %d", r, base.Height+1)
	}
	if retains[200] != 0 {
		t.Fatalf("retain height %d at 201, before any snapshot is 256 old", retains[200])
	}
	times, _ := os.ReadFile(filepath.Join(dir, "blocks.times"))
	if n := bytes.Count(times, []byte("\n")); uint64(n) > h-base.Height {
		t.Fatalf("blocks.times keeps %d lines for %d blocks", n, h-base.Height)
	}
	if s := v.Snapshots(); len(s) != DefaultSnapshotKeep || s[0].Height != 384 || s[1].Height != 320 {
		t.Fatalf("snapshots %+v", s)
	}
	// the archive dropped the jobs submitted at or below the base; a job of
	// the kept blocks is still served
	old := (&JobSpec{Submitter: cip11.Address{1, 0, 5}, Runners: 1, TimeoutBlocks: 3}).ID()
	if jv, ok := v.Job(old); ok {
		t.Fatalf("a job of block 6 (base %d) is still served: %+v", base.Height, jv)
	}
	kept := (&JobSpec{Submitter: cip11.Address{1, byte((h - 100) >> 8), byte(h - 100)}, Runners: 1, TimeoutBlocks: 3}).ID()
	if _, ok := v.Job(kept); !ok {
		t.Fatalf("a job of block %d is not served", h-99)
	}
	// upkeep flushed the state store after each of the 6 snapshots
	if f := v.ps.Load().Stats().Flushes; f < 6 {
		t.Fatalf("the state store flushed %d times", f)
	}
	want := digestOf(t, v)
	v.Close()

	v = snapValidator(t, d, dir, 64, 256)
	if v.Height() != h || digestOf(t, v) != want {
		t.Fatalf("restart from the pruned log: height %d, want %d", v.Height(), h)
	}
	if got := v.EarliestHeight(); got != base.Height+1 {
		t.Fatalf("EarliestHeight after restart %d", got)
	}
	// the marks of pruned-away snapshots are not kept across a restart:
	// pruning goes on once a kept snapshot (320) is 256 blocks old
	produce(t, v, 160, 3)
	b2, _ := logLines(t, dir)
	if b2.Height <= base.Height {
		t.Fatalf("no further pruning: base %d then %d", base.Height, b2.Height)
	}
	v.Close()
}

// snapshotStream reads snapshot h of v's directory whole.
func snapshotStream(t *testing.T, v *Validator, s SnapshotInfo) []byte {
	t.Helper()
	var all []byte
	for i := range s.Chunks {
		c := v.SnapshotChunk(s.Height, s.Format, i)
		if c == nil {
			t.Fatalf("chunk %d of %d missing", i, s.Chunks)
		}
		all = append(all, c...)
	}
	return all
}

// restoreFrom offers s to w and applies every chunk from src.
func restoreFrom(t *testing.T, src, w *Validator, s SnapshotInfo, app []byte) error {
	t.Helper()
	r, err := w.OfferSnapshot(s, app)
	if err != nil {
		return err
	}
	for i := range s.Chunks {
		done, err := r.Apply(i, src.SnapshotChunk(s.Height, s.Format, i))
		if err != nil {
			return err
		}
		if done != (i == s.Chunks-1) {
			t.Fatalf("chunk %d: done %v", i, done)
		}
	}
	return w.InstallSnapshot(r)
}

// TestStateSyncRestoresEmptyValidator: an empty validator restores a
// peer's snapshot (offer, chunks, install), reaches the same height and
// state digest, holds the live jobs, and produces the same next block as
// the peer; the snapshot it installed is one it serves.
func TestStateSyncRestoresEmptyValidator(t *testing.T) {
	d := testDevnet(t, 4, nil)
	a := snapValidator(t, d, t.TempDir(), 64, 0)
	defer a.Close()
	produce(t, a, 64, 1)
	// a job submitted in block 62 with a 3-block timeout is live at 64
	s := a.Snapshots()
	if len(s) != 1 || s[0].Height != 64 || s[0].Chunks < 2 {
		t.Fatalf("snapshots %+v", s)
	}
	app := a.LastBlock().Out.StateDigest
	b := snapValidator(t, d, t.TempDir(), 64, 0)
	defer b.Close()
	if err := restoreFrom(t, a, b, s[0], app[:]); err != nil {
		t.Fatal(err)
	}
	if b.Height() != 64 || digestOf(t, b) != app {
		t.Fatalf("restored to %d", b.Height())
	}
	// the jobs submitted before blocks 63 and 64 (3-block timeouts) are live at 64
	for _, h := range []uint64{62, 63} {
		id := (&JobSpec{Submitter: cip11.Address{1, byte(h >> 8), byte(h)}, Runners: 1, TimeoutBlocks: 3, Payload: []byte{byte(h)}}).ID()
		ja, ok := a.Job(id)
		if !ok || ja.State.Terminal() {
			t.Fatalf("job of block %d on the source: %v %+v", h+1, ok, ja)
		}
		jb, ok := b.Job(id)
		if !ok || jb.State != ja.State || jb.SubmittedAt != ja.SubmittedAt || !bytes.Equal(jb.Payload, ja.Payload) {
			t.Fatalf("job of block %d: %+v after restore, %+v on the source", h+1, jb, ja)
		}
	}
	if bs := b.Snapshots(); len(bs) != 1 || !bytes.Equal(bs[0].Hash, s[0].Hash) {
		t.Fatalf("the restored validator serves %+v", bs)
	}
	// both go on identically: the same jobs, the same blocks
	produce(t, a, 3, 2)
	produce(t, b, 3, 2)
	if digestOf(t, a) != digestOf(t, b) {
		t.Fatalf("after 3 more blocks the digests differ")
	}
	// a second restore is refused: b holds blocks
	if _, err := b.OfferSnapshot(s[0], app[:]); !errors.Is(err, ErrSnapshotState) {
		t.Fatalf("offer to a validator with blocks: %v", err)
	}
}

// TestStateSyncRefusesCorruptChunk: a chunk with one flipped byte is
// refused (ErrSnapshotChunk) and the good chunk then accepted; an offer
// whose metadata or AppHash does not hold is refused (ErrSnapshot).
func TestStateSyncRefusesCorruptChunk(t *testing.T) {
	d := testDevnet(t, 4, nil)
	a := snapValidator(t, d, t.TempDir(), 32, 0)
	defer a.Close()
	produce(t, a, 32, 1)
	s := a.Snapshots()[0]
	app := a.LastBlock().Out.StateDigest
	b := snapValidator(t, d, t.TempDir(), 32, 0)
	defer b.Close()

	wrong := app
	wrong[0] ^= 1
	if _, err := b.OfferSnapshot(s, wrong[:]); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("offer under another AppHash: %v", err)
	}
	bad := s
	bad.Metadata = bytes.Replace(bytes.Clone(s.Metadata), []byte(`"height":32`), []byte(`"height":33`), 1)
	if _, err := b.OfferSnapshot(bad, app[:]); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("offer with metadata that is not its hash's: %v", err)
	}
	bad.Format = 7
	if _, err := b.OfferSnapshot(bad, app[:]); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("offer of format 7: %v", err)
	}

	r, err := b.OfferSnapshot(s, app[:])
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Chunks {
		c := a.SnapshotChunk(s.Height, s.Format, i)
		if i == 1 {
			evil := bytes.Clone(c)
			evil[len(evil)/2] ^= 0x40
			if _, err := r.Apply(i, evil); !errors.Is(err, ErrSnapshotChunk) {
				t.Fatalf("corrupt chunk %d: %v", i, err)
			}
		}
		if _, err := r.Apply(i, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Apply(s.Chunks, nil); !errors.Is(err, ErrSnapshotChunk) {
		t.Fatalf("chunk past the end: %v", err)
	}
	if err := b.InstallSnapshot(r); err != nil {
		t.Fatal(err)
	}
	if b.Height() != 32 || digestOf(t, b) != app {
		t.Fatalf("restored to %d", b.Height())
	}
}

// rechunk deflates raw (a format-2 stream after its magic) and cuts it
// into a snapshot at height h claiming appHash and base, written into v's
// snapshots directory so v serves it.
func rechunk(t *testing.T, v *Validator, raw []byte, h, base uint64, app cip11.Hash) SnapshotInfo {
	t.Helper()
	return rechunkAs(t, v, SnapshotFormat, raw, h, base, app)
}

// rechunkAs is rechunk in format f: 2 deflated, 1 plain.
func rechunkAs(t *testing.T, v *Validator, f uint32, raw []byte, h, base uint64, app cip11.Hash) SnapshotInfo {
	t.Helper()
	var zb bytes.Buffer
	rawSize := uint64(len(raw))
	if f == snapshotFormatPlain {
		zb.Write(snapMagicPlain)
		zb.Write(raw)
		rawSize = 0
	} else {
		zb.Write(snapMagic)
		zw, _ := flate.NewWriter(&zb, snapDeflateLevel)
		zw.Write(raw)
		zw.Close()
	}
	stream := zb.Bytes()
	dir := filepath.Join(v.dir, "snapshots", snapDirName(h))
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cw := &chunkWriter{dir: dir, size: 4096}
	cw.Write(stream)
	if err := cw.close(); err != nil {
		t.Fatal(err)
	}
	m := SnapshotMeta{Format: f, Height: h, AppHash: app, Base: base, Size: cw.total, RawSize: rawSize, ChunkSize: 4096, ChunkHashes: cw.hashes}
	mb, _ := json.Marshal(m)
	sum := sha256.Sum256(mb)
	info := SnapshotInfo{Height: h, Format: f, Chunks: uint32(len(cw.hashes)), Hash: sum[:], Metadata: mb}
	v.addSnapshot(snapEntry{info, m})
	return info
}

// splitStream inflates a format-2 snapshot stream and splits it into its
// node section and the store's export.
func splitStream(t *testing.T, s []byte) (core, store []byte) {
	t.Helper()
	if !bytes.HasPrefix(s, snapMagic) {
		t.Fatalf("not a format-%d stream: %q", SnapshotFormat, s[:min(len(s), 8)])
	}
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(s[len(snapMagic):])))
	if err != nil {
		t.Fatal(err)
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 {
		t.Fatal("no node section length")
	}
	return raw[k : k+int(n)], raw[k+int(n):]
}

// TestStateSyncRefusesLyingSnapshot: a snapshot whose chunks all hash to
// its metadata and whose node section names the trusted AppHash, but
// whose state store is another chain's state at that height, is refused
// after the install (ErrSnapshot: the restored state's digest is not the
// AppHash); the validator is left empty, and an honest snapshot then
// restores it.
func TestStateSyncRefusesLyingSnapshot(t *testing.T) {
	d := testDevnet(t, 4, nil)
	a := snapValidator(t, d, t.TempDir(), 32, 0)
	defer a.Close()
	produce(t, a, 32, 1)
	liar := snapValidator(t, d, t.TempDir(), 32, 0)
	defer liar.Close()
	produce(t, liar, 32, 2) // other jobs: another state at 32
	sa, sl := a.Snapshots()[0], liar.Snapshots()[0]
	app := a.LastBlock().Out.StateDigest
	if liar.LastBlock().Out.StateDigest == app {
		t.Fatal("the two chains agree: no lie to tell")
	}
	coreA, _ := splitStream(t, snapshotStream(t, a, sa))
	_, storeL := splitStream(t, snapshotStream(t, liar, sl))
	lie := binary.AppendUvarint(nil, uint64(len(coreA)))
	lie = append(append(lie, coreA...), storeL...)
	var ma SnapshotMeta
	if err := json.Unmarshal(sa.Metadata, &ma); err != nil {
		t.Fatal(err)
	}
	li := rechunk(t, liar, lie, 32, ma.Base, app)

	b := snapValidator(t, d, t.TempDir(), 32, 0)
	defer b.Close()
	if err := restoreFrom(t, liar, b, li, app[:]); !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), "restores to state digest") {
		t.Fatalf("lying snapshot: %v", err)
	}
	if b.Height() != 0 || b.LastBlock() != nil {
		t.Fatalf("after the refused install the validator is at %d", b.Height())
	}
	if len(b.Snapshots()) != 0 {
		t.Fatal("the refused snapshot is kept")
	}
	if err := restoreFrom(t, a, b, sa, app[:]); err != nil {
		t.Fatalf("honest snapshot after the lie: %v", err)
	}
	if b.Height() != 32 || digestOf(t, b) != app {
		t.Fatalf("restored to %d", b.Height())
	}
}

// TestStateSyncRestoresFormat1: a node writes format 2 (the stream
// deflated, raw_size in the metadata) and still restores from a format-1
// snapshot, the plain stream of the nodes before it; a format-1 stream
// offered as format 2, or format 2's metadata without raw_size, is
// refused.
func TestStateSyncRestoresFormat1(t *testing.T) {
	d := testDevnet(t, 4, nil)
	a := snapValidator(t, d, t.TempDir(), 32, 0)
	defer a.Close()
	produce(t, a, 32, 1)
	sa := a.Snapshots()[0]
	if sa.Format != 2 || SnapshotFormat != 2 {
		t.Fatalf("written in format %d", sa.Format)
	}
	var ma SnapshotMeta
	if err := json.Unmarshal(sa.Metadata, &ma); err != nil || ma.RawSize == 0 || ma.RawSize <= ma.Size {
		t.Fatalf("format-2 meta %+v (%v): raw_size must exceed size", ma, err)
	}
	core, store := splitStream(t, snapshotStream(t, a, sa))
	raw := append(append(binary.AppendUvarint(nil, uint64(len(core))), core...), store...)
	app := a.LastBlock().Out.StateDigest
	src := snapValidator(t, d, t.TempDir(), 32, 0)
	defer src.Close()
	plain := rechunkAs(t, src, snapshotFormatPlain, raw, 32, ma.Base, app)
	b := snapValidator(t, d, t.TempDir(), 32, 0)
	defer b.Close()
	if err := restoreFrom(t, src, b, plain, app[:]); err != nil {
		t.Fatalf("format-1 snapshot: %v", err)
	}
	if b.Height() != 32 || digestOf(t, b) != app {
		t.Fatalf("restored to %d", b.Height())
	}
	var mp SnapshotMeta
	_ = json.Unmarshal(plain.Metadata, &mp)
	for name, m := range map[string]SnapshotMeta{
		"format 1 with raw_size": func() SnapshotMeta { m := mp; m.RawSize = 10; return m }(),
		"format 2 without":       func() SnapshotMeta { m := mp; m.Format = 2; return m }(),
	} {
		mb, _ := json.Marshal(m)
		sum := sha256.Sum256(mb)
		if _, err := decodeMeta(SnapshotInfo{Height: m.Height, Format: m.Format, Chunks: uint32(len(m.ChunkHashes)), Hash: sum[:], Metadata: mb}); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, _, err := readSnapCore(bufio.NewReader(bytes.NewReader(append(slices.Clone(snapMagicPlain), raw...))), SnapshotMeta{Format: 2, Size: 1 << 20, RawSize: 1 << 20}); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("a plain stream read as format 2: %v", err)
	}
}
