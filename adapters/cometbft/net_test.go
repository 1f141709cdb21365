package cometbft

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11"
)

// freeBase finds a base port whose n validators' TCP and UDP ports are free.
func freeBase(t testing.TB, n int) int {
	t.Helper()
	b := FreeBasePort(n)
	if b == 0 {
		t.Fatal("no free ports")
	}
	return b
}

// digests records every validator's state digest per height.
type digests struct {
	mu sync.Mutex
	m  map[uint64]map[int]cip11.Hash
}

func (d *digests) hook(i int) func(uint64, cip11.Hash) {
	return func(h uint64, x cip11.Hash) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.m == nil {
			d.m = map[uint64]map[int]cip11.Hash{}
		}
		if d.m[h] == nil {
			d.m[h] = map[int]cip11.Hash{}
		}
		d.m[h][i] = x
	}
}

func startNet(t *testing.T, n, runners int) (*Network, []*Node, *digests) {
	t.Helper()
	d := &digests{}
	nw, nodes, _ := startNetWith(t, n, runners, d.hook)
	return nw, nodes, d
}

// startNetWith starts an n-validator network on loopback, validator i
// told its finalizations through hook(i) (nil: none); stop closes it once
// (it also runs at cleanup).
func startNetWith(t testing.TB, n, runners int, hook func(i int) func(uint64, cip11.Hash)) (*Network, []*Node, func()) {
	t.Helper()
	return startOpts(t, NetworkOptions{Validators: n, Runners: runners, Seed: 1, BasePort: freeBase(t, n)}, hook)
}

// startOpts generates the network o describes, writes it to a temporary
// directory and starts a node on every home (a validator that joins later
// follows as a full node); hook as for startNetWith.
func startOpts(t testing.TB, o NetworkOptions, hook func(i int) func(uint64, cip11.Hash)) (*Network, []*Node, func()) {
	t.Helper()
	nw, err := NewNetwork(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := nw.Write(dir); err != nil {
		t.Fatal(err)
	}
	nodes := make([]*Node, len(nw.Homes))
	var once sync.Once
	stop := func() { once.Do(func() { closeAll(nodes) }) }
	t.Cleanup(stop)
	for i := range nodes {
		var fin func(uint64, cip11.Hash)
		if hook != nil {
			fin = hook(i)
		}
		nd, err := StartNode(context.Background(), NodeConfig{Home: filepath.Join(dir, fmt.Sprintf("v%d", i)), NoSync: true, OnFinalized: fin})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = nd
	}
	return nw, nodes, stop
}

func waitHeight(t testing.TB, nodes []*Node, h uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ok := true
		for _, nd := range nodes {
			if nd != nil && nd.V.Height() < h {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, nd := range nodes {
		if nd != nil {
			t.Logf("validator %d at height %d (cometbft %d, peers %d)", i, nd.V.Height(), nd.Height(), nd.Peers())
		}
	}
	t.Fatalf("not every validator reached height %d within %v", h, within)
}

func TestFourValidatorsAgree(t *testing.T) {
	_, nodes, d := startNet(t, 4, 8)
	waitHeight(t, nodes, 10, 60*time.Second)
	d.mu.Lock()
	defer d.mu.Unlock()
	for h := uint64(1); h <= 10; h++ {
		var first cip11.Hash
		if len(d.m[h]) != 4 {
			t.Fatalf("height %d: %d digests", h, len(d.m[h]))
		}
		for i, x := range d.m[h] {
			if first == (cip11.Hash{}) {
				first = x
			} else if x != first {
				t.Fatalf("height %d: validator %d digest %x differs", h, i, x)
			}
		}
	}
}

// closeAll closes the nodes in parallel.
func closeAll(nodes []*Node) {
	var wg sync.WaitGroup
	for _, nd := range nodes {
		if nd != nil {
			wg.Go(func() { nd.Close() })
		}
	}
	wg.Wait()
}
