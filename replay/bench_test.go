package replay_test

import (
	"path/filepath"
	"testing"

	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/synth"
)

// BenchmarkRunSample replays the whole embedded sample per iteration, as
// `cip11 replay` does (with the candidate cache), and reports blocks per
// second: in memory (the baseline) and over a fresh pebble store with
// fsync off, as `cip11 replay -store "" -fsync=false` does.
func BenchmarkRunSample(b *testing.B) {
	for _, tc := range []struct {
		name   string
		pebble bool
	}{{"mem", false}, {"pebble", true}} {
		b.Run(tc.name, func(b *testing.B) {
			blocks := 0
			for b.Loop() {
				o := blockexec.Options{SnapshotCache: 4096}
				if tc.pebble {
					o.OpenStore = openPebble(filepath.Join(b.TempDir(), "store"))
				}
				s, err := replay.Run(synth.Sample(), replay.Config{Options: o})
				if err != nil {
					b.Fatal(err)
				}
				blocks += s.Blocks
			}
			b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
		})
	}
}
