package engine

import (
	"testing"

	"github.com/cip11/cip11/seed"
)

const benchRunners = 5000

// BenchmarkBlock1000Jobs executes one block with 1,000 M == 1 submits over
// 5,000 runners, half of them present.
func BenchmarkBlock1000Jobs(b *testing.B) {
	h := newHarness(b, benchRunners, activeParams())
	idx := make([]int, 0, benchRunners/2)
	for i := 0; i < benchRunners; i += 2 {
		idx = append(idx, i)
	}
	parent := h.beacon(seed.Round{View: 1})
	blk := h.block(2)
	blk.ParentBeacon, blk.PresenceInput = &parent, h.presenceOf(idx...)
	for i := 0; i < 1000; i++ {
		j := job(0, 1)
		j.JobID[0], j.JobID[1] = byte(i), byte(i>>8)
		blk.Txs = append(blk.Txs, Submit{Job: j})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h.cfg.Jobs = NewMemJobStore()
		h.rebuild()
		b.StartTimer()
		res, err := h.e.ExecuteBlock(blk)
		if err != nil || len(res.Assignments) != 1000 {
			b.Fatal(err)
		}
	}
}
