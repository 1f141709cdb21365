package replay_test

import (
	"testing"

	"github.com/cip11/cip11/replay"
)

// BenchmarkRunSample replays the whole embedded sample per iteration, as
// `cip11 replay` does (with the candidate cache), and reports blocks per
// second.
func BenchmarkRunSample(b *testing.B) {
	blocks := 0
	for b.Loop() {
		s, err := replay.Run(replay.Sample(), replay.Config{Options: replay.Options{SnapshotCache: 4096}})
		if err != nil {
			b.Fatal(err)
		}
		blocks += s.Blocks
	}
	b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blocks/s")
}
