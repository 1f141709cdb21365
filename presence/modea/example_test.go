package modea_test

import (
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/presence/modea"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

func ExampleProcessCertificate() {
	p := cip11.DefaultParams()
	p.THard = 2
	keys := map[validators.PeerKey]*wire.ValidatorKey{}
	var rs []validators.Record
	for i := range byte(5) {
		k := wire.NewValidatorKey([32]byte{i, 0x5a})
		pk, _ := validators.PeerKeyOf(k.PubKey())
		keys[pk] = k
		rs = append(rs, validators.Record{PeerPubKey: pk})
	}
	// §5.4: participants come canonically ordered by peer_pubkey.
	slices.SortFunc(rs, func(a, b validators.Record) int { return a.PeerPubKey.Compare(b.PeerPubKey) })
	snap, _ := validators.NewSnapshot(0, rs, 0) // |V| = 5, k = 4
	runner, _ := wire.NewRunnerKey([32]byte{31: 1})
	sub, _ := snap.Sub(runner.PubKey(), p)
	var receipts []wire.PresenceReceipt
	for i, v := range sub[:2] {
		r := wire.PresenceReceipt{ValidatorPubKey: v.WirePubKey(), RunnerPubKey: runner.PubKey(),
			SubsetEpoch: 0, ValidatorSetHash: snap.Hash(), BlockHeight: 95 + uint64(i), AcceptingNew: true}
		_ = r.Sign(7, keys[v])
		receipts = append(receipts, r)
	}
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	_ = reg.Register(1, state.Runner{Address: runner.Address()})
	view, _ := reg.At(100)
	st := modea.NewMemState()
	ctx := &modea.CertificateContext{Params: p, ChainID: 7, CurrentHeight: 100, Epochs: validators.Epochs{Current: snap},
		Registry: view, Store: st.Block(100), Meter: &modea.CycleMeter{Limit: 1_000_000}}
	res, err := modea.ProcessCertificate(ctx, &modea.Certificate{Runner: runner.Address(), Height: 100, Receipts: receipts})
	fmt.Println(res.Record.Anchor, res.Record.ProvenUntil, res.Cycles, err)

	_, err = modea.ProcessCertificate(ctx, &modea.Certificate{Runner: runner.Address(), Height: 100, Receipts: receipts})
	fmt.Println(err)
	// Output:
	// 96 156 32000 <nil>
	// modea: certificate is not strictly newer than presence_anchor: 96 ≤ 96
}

// ExampleSource wires the Mode-A read point into the §7.2 block presence
// source.
func ExampleSource() {
	st := modea.NewMemState()
	a := cip11.Address{0xaa}
	_ = st.Block(9).PutPresenceAnchor(a, modea.Record{Anchor: 9, ProvenUntil: 69})
	src := presence.BlockPresenceSource{Params: cip11.DefaultParams(),
		ModeA: modea.Source(func(h uint64) (modea.Reader, error) { return st.At(h), nil })}
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	_ = reg.Register(1, state.Runner{Address: a})
	parent, _ := reg.At(68)
	isPresent, _ := src.ModeA(69, parent)
	fmt.Println(isPresent(a))
	parent, _ = reg.At(69)
	isPresent, _ = src.ModeA(70, parent)
	fmt.Println(isPresent(a))
	// Output:
	// true
	// false
}
