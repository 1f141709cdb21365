package quic_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cip11/cip11"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// A validator and a registered runner on loopback: the runner dials Sub(R),
// the validator admits it (§6.2), and its heartbeats put it in the
// validator's local presence and PresenceInputV1 (§6.3, §8.1).
func Example() {
	p := cip11.DefaultParams()
	vk := wire.NewValidatorKey(cip11.Keccak256([]byte("example validator")))
	rk, _ := wire.NewRunnerKey(cip11.Keccak256([]byte("example runner")))

	snap, _ := validators.NewSnapshot(0, []validators.Record{{PeerPubKey: validators.PeerKey(vk.PubKey().Raw())}}, 0)
	epochs, _ := validators.NewEpochs(nil, snap)
	sets := cquic.NewStaticValidatorSets(epochs)
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	_ = reg.Register(1, state.Runner{Address: rk.Address(), LastHeartbeat: 1})

	srv, err := cquic.NewServer(context.Background(), cquic.ServerConfig{
		Key: vk, ChainID: 1, Params: p, Registry: reg, Validators: sets,
		TxDecoder: wire.MemTxCodec{}, Mempool: &cquic.MemMempool{},
	}, 5)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	dir := &cquic.StaticDirectory{}
	dir.Put(srv.PeerKey(), srv.Addr())

	exec := cquic.ExecutorFunc(func(context.Context, *cquic.Job) (cquic.Result, error) { return cquic.Result{}, nil })
	cl, err := cquic.NewClient(context.Background(), cquic.ClientConfig{
		Key: rk, ChainID: 1, Params: p, Validators: sets, Directory: dir, Executor: exec,
	}, 5)
	if err != nil {
		panic(err)
	}
	defer cl.Close()

	for !srv.IsPresent(rk.Address()) {
		time.Sleep(5 * time.Millisecond)
	}
	in, _ := srv.ProposerInput(5)
	fmt.Printf("present: %v, PresenceInputV1: %x\n", srv.IsPresent(rk.Address()), in)
	// Output: present: true, PresenceInputV1: 010001
}
