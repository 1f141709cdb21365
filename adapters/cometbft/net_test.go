package cometbft

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11"
)

// freeBase finds a base port whose n validators' TCP and UDP ports are free.
func freeBase(t testing.TB, n int) int {
	t.Helper()
	for range 50 {
		base := 20000 + 10*rand.IntN(4000)
		ok := true
		for i := 0; i < n && ok; i++ {
			for _, off := range []int{0, 2} {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+10*i+off))
				if err != nil {
					ok = false
					break
				}
				l.Close()
			}
			u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", base+10*i+1))
			if err != nil {
				ok = false
				break
			}
			u.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
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
	nw, err := NewNetwork(NetworkOptions{Validators: n, Runners: runners, Seed: 1, BasePort: freeBase(t, n)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := nw.Write(dir); err != nil {
		t.Fatal(err)
	}
	d := &digests{}
	nodes := make([]*Node, n)
	for i := range n {
		nd, err := StartNode(context.Background(), NodeConfig{Home: filepath.Join(dir, fmt.Sprintf("v%d", i)), NoSync: true, OnFinalized: d.hook(i)})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = nd
		t.Cleanup(func() { nd.Close() })
	}
	return nw, nodes, d
}

func waitHeight(t *testing.T, nodes []*Node, h uint64, within time.Duration) {
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
