package node

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
)

// TestSoakHeapBounded is the long-running validator's memory harness
// (issue 17 §4), run with CIP11_SOAK=1 (CIP11_SOAK_BLOCKS overrides the
// 10,000 blocks): a validator with 50 runners over real QUIC, two jobs
// submitted per block, blocks produced back to back with no sleep. The heap
// after GC is sampled every 1,000 blocks; the sample at the end must be
// within 1.2× of the one at 2,000.
func TestSoakHeapBounded(t *testing.T) {
	if os.Getenv("CIP11_SOAK") != "1" {
		t.Skip("set CIP11_SOAK=1 to run the soak harness")
	}
	blocks := 10_000
	if s := os.Getenv("CIP11_SOAK_BLOCKS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2000 {
			t.Fatalf("CIP11_SOAK_BLOCKS=%q: want a whole number ≥ 2000", s)
		}
		blocks = n
	}
	d, err := GenerateGenesis(GenesisOptions{Seed: 11, Runners: 50, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: t.TempDir(), NoSync: true, BlockTime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer closeRunners(startRunners(t, ctx, d, v))
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	start := time.Now()
	samples := map[int]uint64{}
	var nonce uint64
	for h := 1; h <= blocks; h++ {
		for range 2 {
			nonce++
			m := uint32(1)
			if nonce%5 == 0 {
				m = 2
			}
			if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{byte(nonce % 8)}, Kind: uint8(nonce % 6), Runners: m,
				TimeoutBlocks: 8, WorkMillis: 1, Nonce: nonce}); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
		if h%1000 == 0 {
			samples[h] = heap()
			s := v.Stats()
			var inMem int
			_ = v.do(func(c *chain.Core) { inMem = c.InMemory() })
			t.Logf("block %5d  heap %7.2f MiB  jobs in memory %d  completed %d expired %d  %.0f blocks/s", h,
				float64(samples[h])/(1<<20), inMem, s.Completed, s.Expired, float64(h)/time.Since(start).Seconds())
		}
	}
	last := samples[blocks-blocks%1000]
	base := samples[2000]
	ratio := float64(last) / float64(base)
	t.Logf("heap at %d / heap at 2000 = %.3f", blocks-blocks%1000, ratio)
	if last*5 > base*6 {
		t.Fatalf("heap grew %.3f× from block 2000 to %d (bound 1.2×)", ratio, blocks-blocks%1000)
	}
}
