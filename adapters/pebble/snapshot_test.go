package pebble

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// snapRec is one record of a snapshot stream.
type snapRec struct{ k, v []byte }

// encodeSnap is the stream format built independently of WriteTo (the
// negative tests forge streams with it): header, records as given, the
// trailer with count and a correct checksum.
func encodeSnap(height uint64, recs []snapRec, count uint64) []byte {
	b := append([]byte(SnapshotMagic), 0, 0, 0, SnapshotVersion)
	b = binary.BigEndian.AppendUint64(b, height)
	for _, r := range recs {
		b = append(b, 1)
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.k)))
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.v)))
		b = append(append(b, r.k...), r.v...)
	}
	b = binary.BigEndian.AppendUint64(append(b, 0), count)
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// decodeSnap is the records of a valid stream.
func decodeSnap(t testing.TB, b []byte) (uint64, []snapRec) {
	t.Helper()
	var recs []snapRec
	h, err := decodeSnapshot(bytes.NewReader(b), func(k, v []byte) error {
		recs = append(recs, snapRec{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	must(t, err)
	return h, recs
}

// snapStore builds a small store with every kind of family: registry
// history with pruning (Retention 4, so gc entries and a floor exist),
// a reputation configuration change, jobs, a pending record, an mru_key
// record, a presence-free chain identity. It returns the store at its
// last committed height.
func snapStore(t testing.TB, dir string, o Options, runners int) *Store {
	t.Helper()
	s := mustOpen(t, dir, o)
	must(t, s.SetChainIdentity([]byte(`chain "snap-test"`)))
	must(t, s.Begin(1))
	for i := range runners {
		must(t, s.Registrar().Register(state.Runner{Address: addr(i), LastHeartbeat: 1, Stake: cip11.U128From64(uint64(100 + i))}))
	}
	must(t, s.Commit())
	for h := uint64(2); h <= 12; h++ {
		must(t, s.Begin(h))
		must(t, s.Registrar().Update(state.Runner{Address: addr(int(h) % runners), LastHeartbeat: h}))
		if h == 5 {
			must(t, s.SetReputationConfig(state.ReputationConfig{Normalizer: 5, WMinFloorX1e6: 2}))
		}
		r := engine.JobRecord{Status: engine.StatusAssigned, DeadlineBlock: h + 20}
		r.JobID[0] = byte(h)
		must(t, s.Jobs().Insert(r))
		if h == 9 {
			p := engine.PendingSelectionV1{Version: 1, SubmittedAt: 9, SelectionStateHeight: 9, CommitteeSize: 2, SeedEpoch: 1, SeedView: 20}
			p.JobID[1] = 9
			must(t, s.Pending().Put(p))
			must(t, s.MRU().Put(addr(1), 1, mru.Record{Runner: addr(2), SetAt: h}))
		}
		must(t, s.Commit())
	}
	return s
}

func exportBytes(t testing.TB, s *Store) []byte {
	t.Helper()
	e, err := s.Export()
	must(t, err)
	defer e.Close()
	var buf bytes.Buffer
	n, err := e.WriteTo(&buf)
	must(t, err)
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reports %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func opts() Options {
	return Options{Sync: SyncNever, Retention: 4, Logger: slog.New(slog.DiscardHandler)}
}

// TestSnapshotSmallRoundTrip: a store with every family exports, imports
// into an identical database (re-export byte-identical), keeps its
// height, floor, views and chain identity, and both stores go on
// identically.
func TestSnapshotSmallRoundTrip(t *testing.T) {
	src := snapStore(t, t.TempDir(), opts(), 5)
	defer src.Close()
	stream := exportBytes(t, src)
	h, recs := decodeSnap(t, stream)
	if h != 12 || !bytes.Equal(encodeSnap(h, recs, uint64(len(recs))), stream) {
		t.Fatalf("stream height %d, or encodeSnap differs from WriteTo", h)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		for _, p := range []string{keyFormat, keyHeight, keyChain, pfxActive, pfxRunner, pfxCur, pfxRepCfg, pfxGC, pfxJob, pfxDeadline, pfxLive, pendingDueDomain, mru.KeyPrefix} {
			if bytes.HasPrefix(r.k, []byte(p)) {
				seen[p] = true
			}
		}
	}
	if len(seen) != 13 {
		t.Fatalf("stream covers families %v", seen)
	}
	dir := filepath.Join(t.TempDir(), "imported")
	dst, err := Import(dir, bytes.NewReader(stream), opts())
	must(t, err)
	defer dst.Close()
	if got := exportBytes(t, dst); !bytes.Equal(got, stream) {
		t.Fatal("re-export of the imported store differs")
	}
	if h, ok, err := dst.LastCommitted(); h != 12 || !ok || err != nil {
		t.Fatal(h, ok, err)
	}
	if id, ok, err := dst.ChainIdentity(); !ok || err != nil || string(id) != `chain "snap-test"` {
		t.Fatal(string(id), ok, err)
	}
	for h := uint64(0); h <= 13; h++ {
		a, errA := src.At(h)
		b, errB := dst.At(h)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("At(%d): %v vs %v", h, errA, errB)
		}
		if errA == nil && viewDump(a) != viewDump(b) {
			t.Fatalf("At(%d) differs:\n%s\n%s", h, viewDump(a), viewDump(b))
		}
	}
	for h := uint64(13); h <= 20; h++ {
		for _, s := range []*Store{src, dst} {
			must(t, s.Begin(h))
			must(t, s.Registrar().Update(state.Runner{Address: addr(int(h) % 5), LastHeartbeat: h}))
			must(t, s.Commit())
		}
	}
	if !bytes.Equal(exportBytes(t, src), exportBytes(t, dst)) {
		t.Fatal("the stores diverge after the same blocks")
	}
}

func viewDump(v *View) string {
	var b bytes.Buffer
	fmt.Fprintln(&b, v.Height(), v.ActiveRunners(), v.ReputationConfig())
	for r := range v.ByAddress() {
		fmt.Fprintf(&b, "%+v\n", r)
	}
	fmt.Fprintln(&b, v.Err())
	return b.String()
}

// TestSnapshotIsolationAndClose: WriteTo on another goroutine while the
// store commits shows the export's height; Export with an open batch is
// ErrBatchOpen; Store.Close stops a WriteTo in progress (store.ErrClosed)
// and waits for it; WriteTo after Close is store.ErrClosed.
func TestSnapshotIsolationAndClose(t *testing.T) {
	src := snapStore(t, t.TempDir(), opts(), 2000)
	want := exportBytes(t, src)
	e, err := src.Export()
	must(t, err)
	var got bytes.Buffer
	done := make(chan error)
	go func() { _, err := e.WriteTo(&got); done <- err }()
	for h := uint64(13); h <= 30; h++ {
		must(t, src.Begin(h))
		must(t, src.Registrar().Update(state.Runner{Address: addr(int(h)), LastHeartbeat: h}))
		if h == 20 {
			if _, err := src.Export(); !errors.Is(err, ErrBatchOpen) || !errors.Is(err, store.ErrBatchOpen) {
				t.Fatalf("Export with an open batch: %v", err)
			}
		}
		must(t, src.Commit())
	}
	must(t, <-done)
	must(t, e.Close())
	must(t, e.Close())
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("an export taken at 12 streamed later commits")
	}
	if _, err := e.WriteTo(io.Discard); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("WriteTo after Close: %v", err)
	}

	// Store.Close while a WriteTo is blocked in its writer.
	e, err = src.Export()
	must(t, err)
	bw := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	go func() { _, err := e.WriteTo(bw); done <- err }()
	<-bw.started
	closed := make(chan error)
	go func() { closed <- src.Close() }()
	for !e.stop.Load() {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-closed:
		t.Fatalf("Store.Close returned (%v) while WriteTo runs", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(bw.release)
	if err := <-done; !errors.Is(err, store.ErrClosed) {
		t.Fatalf("WriteTo across Store.Close: %v", err)
	}
	must(t, <-closed)
	must(t, e.Close())
	if _, err := e.WriteTo(io.Discard); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("WriteTo after Store.Close: %v", err)
	}
	if _, err := src.Export(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Export of a closed store: %v", err)
	}
}

// blockingWriter blocks its first Write until release.
type blockingWriter struct {
	once             sync.Once
	started, release chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started); <-w.release })
	return len(p), nil
}

// importFails imports b into a new directory and checks that it fails
// with ErrSnapshotCorrupt (and also, if non-nil) and leaves nothing.
func importFails(t *testing.T, name string, b []byte, also error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "imp")
	s, err := Import(dir, bytes.NewReader(b), opts())
	if err == nil {
		s.Close()
		t.Fatalf("%s: imported", name)
	}
	if !errors.Is(err, ErrSnapshotCorrupt) || (also != nil && !errors.Is(err, also)) {
		t.Fatalf("%s: %v", name, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: directory left behind: %v", name, err)
	}
}

// TestImportRejects: every kind of broken stream is ErrSnapshotCorrupt and
// leaves no directory.
func TestImportRejects(t *testing.T) {
	s := snapStore(t, t.TempDir(), opts(), 5)
	good := exportBytes(t, s)
	must(t, s.Close())
	h, recs := decodeSnap(t, good)
	n := uint64(len(recs))
	// Flipped bytes: a spread of positions, every byte of the trailer.
	for i := 0; i < len(good); i += 1 + i/8 {
		bad := bytes.Clone(good)
		bad[i] ^= 0x04
		importFails(t, "flip "+strconv.Itoa(i), bad, nil)
	}
	for i := len(good) - 41; i < len(good); i++ {
		bad := bytes.Clone(good)
		bad[i] ^= 0x80
		importFails(t, "flip "+strconv.Itoa(i), bad, nil)
	}
	for _, l := range []int{0, 1, 7, snapHeaderLen - 1, snapHeaderLen, snapHeaderLen + 3, len(good) / 2, len(good) - 33, len(good) - 1} {
		importFails(t, "truncated to "+strconv.Itoa(l), good[:l], io.ErrUnexpectedEOF)
	}
	badMagic := bytes.Clone(good)
	copy(badMagic, "CIP11SNQ")
	importFails(t, "magic", badMagic, nil)
	v2 := bytes.Clone(good)
	v2[len(SnapshotMagic)+3] = 2
	importFails(t, "version", v2, nil)
	importFails(t, "trailing byte", append(bytes.Clone(good), 0), nil)
	importFails(t, "trailing stream", append(bytes.Clone(good), good...), nil)
	swapped := append([]snapRec(nil), recs...)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	importFails(t, "keys out of order", encodeSnap(h, swapped, n), nil)
	dup := append(append([]snapRec(nil), recs[:5]...), recs[4:]...)
	importFails(t, "duplicate key", encodeSnap(h, dup, n+1), nil)
	importFails(t, "count", encodeSnap(h, recs, n-1), nil)
	importFails(t, "height", encodeSnap(h+1, recs, n), nil)
	importFails(t, "no records", encodeSnap(0, nil, 0), nil)
	importFails(t, "empty key", encodeSnap(h, append([]snapRec{{nil, nil}}, recs...), n+1), nil)
	noFormat := recs[:0:0]
	for _, r := range recs {
		if string(r.k) != keyFormat {
			noFormat = append(noFormat, r)
		}
	}
	importFails(t, "no format key", encodeSnap(h, noFormat, n-1), nil)
	// A framing-valid stream whose height marker fails its crc: Open's
	// ErrCorrupt, under ErrSnapshotCorrupt.
	marker := append([]snapRec(nil), recs...)
	for i := range marker {
		if string(marker[i].k) == keyHeight {
			marker[i].v = bytes.Clone(marker[i].v)
			marker[i].v[3] ^= 1
		}
	}
	importFails(t, "height marker crc", encodeSnap(h, marker, n), ErrCorrupt)

	// Oversize lengths, backed by nothing: refused before any allocation.
	hdr := good[:snapHeaderLen]
	for _, c := range []struct {
		name string
		kl   uint16
		vl   uint32
	}{{"key", MaxSnapshotKey + 1, 0}, {"key max16", 0xffff, 1}, {"value", 10, MaxSnapshotValue + 1}, {"value max32", 10, 0xffffffff}} {
		b := append(bytes.Clone(hdr), 1)
		b = binary.BigEndian.AppendUint16(b, c.kl)
		b = binary.BigEndian.AppendUint32(b, c.vl)
		importFails(t, "oversize "+c.name, append(b, make([]byte, 64)...), nil)
	}
	// A 16 MiB value the stream does not back allocates what was read,
	// not the length.
	b := append(bytes.Clone(hdr), 1, 0, 1) // a record, a 1-byte key
	b = binary.BigEndian.AppendUint32(b, MaxSnapshotValue)
	b = append(append(b, 'x'), make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decodeSnapshot(bytes.NewReader(b), func(_, _ []byte) error { return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("a 100-byte stream claiming a 16 MiB value allocated %d bytes", d)
	}
}

// TestImportTarget: a directory with content is ErrImportTarget and kept
// as it was; an existing empty directory is used, and emptied (not
// removed) when the import fails.
func TestImportTarget(t *testing.T) {
	s := snapStore(t, t.TempDir(), opts(), 3)
	good := exportBytes(t, s)
	must(t, s.Close())
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o600))
	if _, err := Import(dir, bytes.NewReader(good), opts()); !errors.Is(err, ErrImportTarget) || errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "keep")); err != nil || string(b) != "x" {
		t.Fatal("target content touched", err)
	}
	if _, err := Import("", bytes.NewReader(good), opts()); !errors.Is(err, ErrImportTarget) {
		t.Fatal(err)
	}
	empty := t.TempDir()
	if _, err := Import(empty, bytes.NewReader(good[:len(good)-1]), opts()); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Fatal("failed import into an empty directory left", ents, err)
	}
	d, err := Import(empty, bytes.NewReader(good), opts())
	must(t, err)
	defer d.Close()
	if _, err := Import(empty, bytes.NewReader(good), opts()); !errors.Is(err, ErrImportTarget) {
		t.Fatal("import into an open store:", err)
	}
}

// FuzzImport: no input panics, every refusal is ErrSnapshotCorrupt and
// leaves nothing, and a stream Import accepts re-exports to the same
// bytes. The store lives on pebble's in-memory file system (throughput).
func FuzzImport(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzImport(t, b)
		// The same bytes with the checksum made to match, so that mutated
		// records get past it to the framing checks and to Open.
		if len(b) > sha256.Size {
			body := b[:len(b)-sha256.Size]
			sum := sha256.Sum256(body)
			fuzzImport(t, append(bytes.Clone(body), sum[:]...))
		}
	})
}

func fuzzImport(t *testing.T, b []byte) {
	mem := vfs.NewMem()
	o := opts()
	o.fs = mem
	s, err := Import("db", bytes.NewReader(b), o)
	if err != nil {
		if !errors.Is(err, ErrSnapshotCorrupt) {
			t.Fatalf("refusal without ErrSnapshotCorrupt: %v", err)
		}
		if _, err := mem.Stat("db"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("directory left behind: %v", err)
		}
		return
	}
	defer s.Close()
	if got := exportBytes(t, s); !bytes.Equal(got, b) {
		t.Fatalf("accepted stream re-exports differently (%d vs %d bytes)", len(got), len(b))
	}
}

// fuzzSeeds are small valid and invalid streams (also the committed
// corpus in testdata/fuzz/FuzzImport, written by TestWriteFuzzCorpus).
func fuzzSeeds(t testing.TB) [][]byte {
	mem := vfs.NewMem()
	o := opts()
	o.fs = mem
	s := mustOpen(t, "a", o)
	empty := exportBytes(t, s) // format and configuration only
	must(t, s.Register(1, addr(1)))
	one := exportBytes(t, s)
	must(t, s.Close())
	o.fs = vfs.NewMem()
	s = snapStore(t, "b", o, 3)
	full := exportBytes(t, s)
	must(t, s.Close())
	truncated := full[:len(full)/2]
	flipped := bytes.Clone(full)
	flipped[len(flipped)/3] ^= 1
	return [][]byte{empty, one, full, truncated, flipped, append(bytes.Clone(one), 0)}
}

// TestWriteFuzzCorpus rewrites testdata/fuzz/FuzzImport from fuzzSeeds
// when CIP11_WRITE_FUZZ_CORPUS is set.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("CIP11_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set CIP11_WRITE_FUZZ_CORPUS=1 to rewrite the corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzImport")
	must(t, os.MkdirAll(dir, 0o755))
	for i, b := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(body), 0o644))
	}
}

// BenchmarkExportImport: one export (WriteTo to io.Discard) and one import
// (into a new directory, opened) of a 5,000-runner store per iteration;
// bytes/op is the stream, export/scan the export's time over a plain
// iteration of every key and value of the database in the same run.
func BenchmarkExportImport(b *testing.B) {
	s := snapStore(b, b.TempDir(), opts(), 5000)
	defer s.Close()
	stream := exportBytes(b, s)
	b.SetBytes(int64(len(stream)))
	var scanT, exportT, importT time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		sz := 0
		must(b, scan(s.db, nil, nil, func(k, v []byte) (bool, error) { sz += len(k) + len(v); return true, nil }))
		t1 := time.Now()
		e, err := s.Export()
		must(b, err)
		_, err = e.WriteTo(io.Discard)
		must(b, errors.Join(err, e.Close()))
		t2 := time.Now()
		d, err := Import(filepath.Join(b.TempDir(), strconv.Itoa(n)), bytes.NewReader(stream), opts())
		must(b, err)
		must(b, d.Close())
		scanT, exportT, importT = scanT+t1.Sub(t0), exportT+t2.Sub(t1), importT+time.Since(t2)
		n++
	}
	b.ReportMetric(float64(exportT)/float64(scanT), "export/scan")
	b.ReportMetric(float64(exportT.Nanoseconds())/float64(n), "export-ns/op")
	b.ReportMetric(float64(importT.Nanoseconds())/float64(n), "import-ns/op")
}
