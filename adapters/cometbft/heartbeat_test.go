package cometbft

import (
	"context"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/wire"
)

// TestHeartbeatOnNetwork: a runner's on-chain heartbeat (§7.1) submitted to
// one validator reaches a block and every validator's registry records it.
func TestHeartbeatOnNetwork(t *testing.T) {
	nw, nodes, _ := startNet(t, 4, 4)
	waitHeight(t, nodes, 3, 60*time.Second)
	k, err := wire.NewRunnerKey(devkeys.Runner(nw.Opts.Seed, 2))
	if err != nil {
		t.Fatal(err)
	}
	h := nodes[1].V.Height()
	tx, err := chain.SignTx(k, nw.Opts.ChainID, chain.TxHeartbeat, h, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].V.SubmitTx(tx.Bytes()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, nd := range nodes {
			last, reg, err := node.LocalChain{V: nd.V}.LastHeartbeat(context.Background(), k.Address())
			if err != nil || !reg || last <= 1 {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, nd := range nodes {
		last, reg, err := node.LocalChain{V: nd.V}.LastHeartbeat(context.Background(), k.Address())
		t.Logf("validator %d: height %d, last_heartbeat %d (registered %v, %v), mempool %d", i, nd.V.Height(), last, reg, err, nd.V.Status().Mempool)
	}
	t.Fatal("the heartbeat never reached the chain")
}
