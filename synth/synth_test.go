package synth_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/synth"
)

// TestGenerateDeterministic: the same configuration gives the same bytes,
// another seed another chain, and a configuration that cannot describe a
// chain is ErrGenConfig (docs/chainlog.md "The sample chain"). Replaying a
// generated chain is package replay's tests.
func TestGenerateDeterministic(t *testing.T) {
	cfg := synth.GenConfig{Seed: 4, Runners: 40, Blocks: 30}
	var a, b, c bytes.Buffer
	var heights []uint64
	if err := synth.Generate(cfg, &a, func(h uint64) { heights = append(heights, h) }); err != nil {
		t.Fatal(err)
	}
	if err := synth.Generate(cfg, &b, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same configuration, different chain")
	}
	if len(heights) != cfg.Blocks || heights[0] != 1 || heights[len(heights)-1] != uint64(cfg.Blocks) {
		t.Fatalf("progress heights %v, want 1..%d", heights, cfg.Blocks)
	}
	cfg.Seed++
	if err := synth.Generate(cfg, &c, nil); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds, same chain")
	}
	for _, bad := range []synth.GenConfig{{Runners: 0, Blocks: 5}, {Runners: 5, Blocks: 0}, {Runners: -1, Blocks: -1}} {
		if err := synth.Generate(bad, io.Discard, nil); !errors.Is(err, synth.ErrGenConfig) {
			t.Errorf("%+v: got %v, want ErrGenConfig", bad, err)
		}
	}
}

// TestSampleHeader: the embedded sample is a gzip chain log whose header
// names the command docs/chainlog.md "The sample chain" documents.
func TestSampleHeader(t *testing.T) {
	zr, err := gzip.NewReader(synth.Sample())
	if err != nil {
		t.Fatal(err)
	}
	cr, err := chainlog.NewReader(zr)
	if err != nil {
		t.Fatal(err)
	}
	if g := cr.Header().Generator; g != "cip11 gen -seed 1 -runners 5000 -blocks 1000" {
		t.Fatalf("sample generator %q", g)
	}
	if _, err := cr.Next(); err != nil {
		t.Fatalf("first block: %v", err)
	}
}
