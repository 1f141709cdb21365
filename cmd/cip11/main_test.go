package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/conformance"
	"github.com/cip11/cip11/seed"
)

func vectorFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../conformance/testdata/vectors/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vector files found: %v", err)
	}
	return files
}

func TestVectorsCheckAgree(t *testing.T) {
	files := vectorFiles(t)
	var out, errOut bytes.Buffer
	code := run(append([]string{"vectors", "check"}, files...), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", code, out.String(), errOut.String())
	}
	if n := strings.Count(out.String(), ": agree\n"); n == 0 || strings.Contains(out.String(), "disagree:") {
		t.Fatalf("want only agreeing vectors, got %d agree:\n%s", n, out.String())
	}
}

// tamper rewrites the first output field of the first positive vector of
// the vector file at src and returns the tampered file's bytes and the
// vector's name.
func tamper(t *testing.T, src string) ([]byte, string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var file conformance.File
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	fn, err := conformance.Lookup(file.Function)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range file.Vectors {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(v, &fields); err != nil {
			t.Fatal(err)
		}
		if _, neg := fields["error"]; neg {
			continue
		}
		outs, err := fn.Eval(v)
		if err != nil || len(outs) == 0 {
			continue
		}
		var key string
		for k := range outs {
			if key == "" || k < key {
				key = k
			}
		}
		fields[key] = json.RawMessage(`"tampered"`)
		if file.Vectors[i], err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
		var name string
		_ = json.Unmarshal(fields["name"], &name)
		b, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		return b, name
	}
	t.Fatalf("%s has no positive vector with outputs", src)
	return nil, ""
}

func TestVectorsCheckTampered(t *testing.T) {
	files := vectorFiles(t)
	b, name := tamper(t, files[0])
	dir := t.TempDir()
	bad := filepath.Join(dir, "tampered.json")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"vectors", "check", files[0], bad}, &out, &errOut); code == 0 {
		t.Fatalf("tampered file accepted:\n%s", out.String())
	}
	if !strings.Contains(out.String(), name+": disagree:") {
		t.Fatalf("vector %q not reported as disagreeing:\n%s", name, out.String())
	}

	unknown := filepath.Join(dir, "unknown.json")
	if err := os.WriteFile(unknown, []byte(`{"function":"no_such_function","vectors":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{unknown, filepath.Join(dir, "missing.json")} {
		out.Reset()
		if code := run([]string{"vectors", "check", f}, &out, &errOut); code != 1 {
			t.Errorf("%s: exit %d, want 1:\n%s", f, code, out.String())
		}
	}
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{nil, {"frobnicate"}, {"vectors"}, {"vectors", "check"}, {"gen", "-runners", "0"}, {"replay", "a", "b"}} {
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

func TestReplaySample(t *testing.T) {
	limit := 0
	if testing.Short() {
		limit = 150
	}
	s, err := replay(bytes.NewReader(sampleLog), nil, 0, limit)
	if err != nil {
		t.Fatal(err)
	}
	if limit > 0 && s.blocks != limit || s.assignments == 0 || s.pendingConsumed == 0 || s.mruWrites == 0 {
		t.Fatalf("sample replay saw too little: %+v", s)
	}
	t.Logf("%d blocks, %d assignments, %d pending consumed, %d MRU writes in %v", s.blocks, s.assignments, s.pendingConsumed, s.mruWrites, s.elapsed)
}

func TestReplayCLI(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"replay", "-blocks", "40", "-progress", "20"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"blocks:            40", "final state digest:", "blocks/s", "OK:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "replay: block 20") {
		t.Errorf("no progress on stderr:\n%s", errOut.String())
	}
}

// sampleLines returns the embedded sample's lines, decompressed.
func sampleLines(t *testing.T) [][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, chainlog.MaxLineBytes)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestReplayTamperedCommittee(t *testing.T) {
	lines := sampleLines(t)
	// The first block from height 30 on with an assignment beyond the first
	// whose committee is not empty: change committee[0] there.
	for i := 30; i < len(lines); i++ {
		b, err := chainlog.DecodeBlock(lines[i])
		if err != nil {
			t.Fatal(err)
		}
		for k := 1; k < len(b.Out.Assignments); k++ {
			c := b.Out.Assignments[k].Committee
			if len(c) == 0 {
				continue
			}
			orig := c[0]
			c[0][19] ^= 0xff
			tampered := c[0]
			line, err := chainlog.EncodeBlock(&b)
			if err != nil {
				t.Fatal(err)
			}
			log := bytes.Join(append(append([][]byte{}, lines[:i]...), line), []byte("\n"))
			path := filepath.Join(t.TempDir(), "tampered.jsonl")
			if err := os.WriteFile(path, log, 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			if code := run([]string{"replay", "-progress", "0", path}, &out, &errOut); code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, errOut.String())
			}
			want := "block " + strconv.FormatUint(uint64(b.Height), 10) + ": assignments[" + strconv.Itoa(k) + "].committee[0]: want " + hexOf(tampered) + " got " + hexOf(orig)
			if !strings.Contains(errOut.String(), want) {
				t.Fatalf("divergence not reported as\n  %s\ngot:\n%s", want, errOut.String())
			}
			_, err = replay(bytes.NewReader(log), nil, 0, 0)
			if !errors.Is(err, errDivergence) {
				t.Fatalf("replay error %v does not wrap errDivergence", err)
			}
			return
		}
	}
	t.Fatal("sample has no block to tamper")
}

func TestReplayRejectsMalformed(t *testing.T) {
	lines := sampleLines(t)
	bad := append(bytes.Clone(lines[0]), '\n')
	bad = append(bad, []byte(`{"height":"1"}`)...)
	_, err := replay(bytes.NewReader(bad), nil, 0, 0)
	if !errors.Is(err, chainlog.ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
}

func TestGenDeterministicAndReplays(t *testing.T) {
	cfg := genConfig{Seed: 7, Runners: 300, Blocks: 120}
	var a, b, c bytes.Buffer
	if err := generate(cfg, &a, nil); err != nil {
		t.Fatal(err)
	}
	if err := generate(cfg, &b, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed, different chain")
	}
	cfg.Seed = 8
	if err := generate(cfg, &c, nil); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds, same chain")
	}
	s, err := replay(bytes.NewReader(a.Bytes()), nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.blocks != cfg.Blocks || s.pendingConsumed == 0 || s.mruWrites == 0 {
		t.Fatalf("generated chain too thin: %+v", s)
	}
	if s.pendingConsumed > s.pendingWritten {
		t.Fatalf("consumed %d > written %d", s.pendingConsumed, s.pendingWritten)
	}
}

func TestGenMultiValidator(t *testing.T) {
	var buf bytes.Buffer
	if err := generate(genConfig{Seed: 2, Runners: 100, Blocks: 40, MultiValidator: true}, &buf, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := replay(bytes.NewReader(buf.Bytes()), nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"branch":"full_set"`)) || !bytes.Contains(buf.Bytes(), []byte(`"branch":"present_first"`)) {
		t.Fatal("multi-validator chain lacks full_set (M > 1) or present_first (M == 1) assignments")
	}
}

func TestGenWritesGzipFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl.gz")
	var out, errOut bytes.Buffer
	if code := run([]string{"gen", "-seed", "3", "-runners", "50", "-blocks", "30", "-o", path}, &out, &errOut); code != 0 {
		t.Fatalf("gen exit %d: %s", code, errOut.String())
	}
	out.Reset()
	if code := run([]string{"replay", path}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "blocks:            30") {
		t.Fatalf("replay exit %d:\n%s%s", code, out.String(), errOut.String())
	}
}

// BenchmarkReplaySample replays the whole embedded sample per iteration and
// reports blocks per second.
func BenchmarkReplaySample(b *testing.B) {
	blocks := 0
	for b.Loop() {
		s, err := replay(bytes.NewReader(sampleLog), nil, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		blocks += s.blocks
	}
	b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
}

func hexOf(a chainlog.Address) string {
	b, _ := a.MarshalText()
	return string(b)
}

// TestSampleShape checks that the sample exercises what it claims
// (docs/chainlog.md "The sample chain"): seeds of nullified views are
// consumed, MRU writes start at MRU_ACTIVATION_HEIGHT, every health state
// and stale heartbeats occur.
func TestSampleShape(t *testing.T) {
	lines := sampleLines(t)
	h, err := chainlog.DecodeHeader(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	blockRounds := make(map[seed.Round]bool)
	var nullified, firstMRU, multi int
	healths := make(map[chainlog.Health]bool)
	for _, line := range lines[1:] {
		b, err := chainlog.DecodeBlock(line)
		if err != nil {
			t.Fatal(err)
		}
		blockRounds[seed.Round{Epoch: uint64(b.Round.Epoch), View: uint64(b.Round.View)}] = true
		cs, err := seed.DecodeConsumedSeedsV1(b.ConsumedSeeds)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cs {
			if !blockRounds[e.Round] {
				nullified++
			}
		}
		if len(cs) > 1 {
			multi++
		}
		if len(b.Out.MRUWrites) > 0 && firstMRU == 0 {
			firstMRU = int(b.Height)
		}
		for _, op := range b.Registry {
			if op.Health != nil {
				healths[*op.Health] = true
			}
		}
	}
	if nullified == 0 {
		t.Error("no seed of a nullified view is consumed")
	}
	if act := int(h.Params.MRUActivationHeight); firstMRU < act || firstMRU > act+10 {
		t.Errorf("first MRU write at %d, want at or shortly after MRU_ACTIVATION_HEIGHT %d", firstMRU, act)
	}
	if len(healths) != 4 {
		t.Errorf("health states seen: %v", healths)
	}
	t.Logf("%d nullified-view seeds consumed, %d blocks consume several rounds", nullified, multi)
}

// TestReplayHostileBlocks replaces the last block of a small generated
// chain by hostile variants: each must be reported as an error naming the
// block, never a panic and never silently accepted.
func TestReplayHostileBlocks(t *testing.T) {
	var buf bytes.Buffer
	if err := generate(genConfig{Seed: 5, Runners: 60, Blocks: 25}, &buf, nil); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	prefix := lines[:len(lines)-1]
	last, err := chainlog.DecodeBlock(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	someone := chainlog.Address{0xde, 0xad}
	bad := chainlog.Health(chainlog.Paused)
	cases := map[string]func(b *chainlog.Block){
		"malformed presence":     func(b *chainlog.Block) { p := chainlog.Bytes{1, 0}; b.Presence = &p },
		"absent presence":        func(b *chainlog.Block) { b.Presence = nil },
		"garbage consumed seeds": func(b *chainlog.Block) { b.ConsumedSeeds = chainlog.Bytes{0xff} },
		"forged parent beacon":   func(b *chainlog.Block) { b.ParentBeacon.Signature[5] ^= 1 },
		"update unknown runner": func(b *chainlog.Block) {
			b.Registry = append(b.Registry, chainlog.RegistryOp{Op: chainlog.OpUpdate, Address: someone, Health: &bad})
		},
		"heartbeat beyond list": func(b *chainlog.Block) { b.Heartbeats = append(b.Heartbeats, 1<<20) },
		"duplicate job": func(b *chainlog.Block) {
			j := chainlog.Submit{JobID: chainlog.Hash{1}, Submitter: someone, CommitteeSize: 1, TimeoutBlocks: 5}
			b.Submits = append(b.Submits, j, j)
		},
		"seed no record consumes": func(b *chainlog.Block) {
			cs := seed.ConsumedSeedsV1{{Round: seed.Round{Epoch: 0, View: 1}, Signature: seed.Signature(b.ParentBeacon.Signature)}}
			enc, err := cs.Encode()
			if err != nil {
				t.Fatal(err)
			}
			b.ConsumedSeeds = enc
		},
	}
	for name, mutate := range cases {
		b := last
		b.Registry = append([]chainlog.RegistryOp(nil), last.Registry...)
		b.Heartbeats = append([]uint32(nil), last.Heartbeats...)
		b.Submits = append([]chainlog.Submit(nil), last.Submits...)
		b.Results = append([]chainlog.Result(nil), last.Results...)
		pb := *last.ParentBeacon
		b.ParentBeacon = &pb
		mutate(&b)
		line, err := chainlog.EncodeBlock(&b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		log := bytes.Join(append(append([][]byte{}, prefix...), line), []byte("\n"))
		_, err = replay(bytes.NewReader(log), nil, 0, 0)
		if err == nil || errors.Is(err, errPanic) || errors.Is(err, errDivergence) || !strings.Contains(err.Error(), "block 25") {
			t.Errorf("%s: got %v, want an execution error at block 25", name, err)
		}
	}
}
