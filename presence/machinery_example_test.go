package presence_test

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/selection"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

func exampleValidator(i byte) *wire.ValidatorKey { return wire.NewValidatorKey([32]byte{i, 0x5a}) }

func exampleSnapshot(epoch, activation uint64, lo, hi byte) (*presence.ValidatorSetSnapshot, map[presence.PeerKey]*wire.ValidatorKey) {
	keys := map[presence.PeerKey]*wire.ValidatorKey{}
	var rs []presence.ValidatorRecord
	for i := lo; i < hi; i++ {
		k := exampleValidator(i)
		pk, _ := presence.PeerKeyOf(k.PubKey())
		keys[pk] = k
		rs = append(rs, presence.ValidatorRecord{PeerPubKey: pk})
	}
	s, _ := presence.NewValidatorSetSnapshot(epoch, rs, activation)
	return s, keys
}

func ExampleValidatorSetSnapshot_Sub() {
	p := cip11.DefaultParams()
	snap, _ := exampleSnapshot(0, 0, 0, 6)
	runner, _ := wire.NewRunnerKey([32]byte{31: 1})
	sub, _ := snap.Sub(runner.PubKey(), p)
	fmt.Println("|V| =", snap.Len(), "k =", snap.K(p), "len(Sub) =", len(sub))
	for _, n := range []int{1, 2, 5, 9, 100} {
		fmt.Print(presence.SubsetSize(n, p), " ")
	}
	fmt.Println()
	// Output:
	// |V| = 6 k = 4 len(Sub) = 4
	// 1 2 4 5 8
}

func ExampleEpochs_Admit() {
	p := cip11.DefaultParams() // OVERLAP_BLOCKS = 160
	e0, _ := exampleSnapshot(0, 0, 0, 4)
	e1, _ := exampleSnapshot(1, 1000, 2, 7)
	epochs, _ := presence.NewEpochs(e0, e1)
	runner, _ := wire.NewRunnerKey([32]byte{31: 1})
	sub, _ := e0.Sub(runner.PubKey(), p)
	for _, h := range []uint64{1159, 1160} {
		_, err := epochs.Admit(h, e0.Pair(), sub[0], runner.PubKey(), p)
		fmt.Println(h, err)
	}
	// Output:
	// 1159 <nil>
	// 1160 presence: offered epoch-E snapshot is past the OVERLAP_BLOCKS cutoff: epoch 0 ended at 1160, height 1160
}

func ExampleProcessCertificate() {
	p := cip11.DefaultParams()
	p.THard = 2
	snap, keys := exampleSnapshot(0, 0, 0, 5) // k = 4
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
	st := presence.NewMemModeAState()
	ctx := &presence.CertificateContext{Params: p, ChainID: 7, CurrentHeight: 100, Epochs: presence.Epochs{Current: snap},
		Registry: view, Store: st.Block(100), Meter: &presence.CycleMeter{Limit: 1_000_000}}
	res, err := presence.ProcessCertificate(ctx, &presence.Certificate{Runner: runner.Address(), Height: 100, Receipts: receipts})
	fmt.Println(res.Record.Anchor, res.Record.ProvenUntil, res.Cycles, err)

	_, err = presence.ProcessCertificate(ctx, &presence.Certificate{Runner: runner.Address(), Height: 100, Receipts: receipts})
	fmt.Println(err)
	// Output:
	// 96 156 32000 <nil>
	// presence: certificate is not strictly newer than presence_anchor: 96 ≤ 96
}

func ExampleLocalPresence() {
	p := cip11.DefaultParams() // PRESENCE_TIMEOUT_BLOCKS = 15
	l := presence.NewLocalPresence(p)
	runner, conn := cip11.Address{0xaa}, presence.ConnID{1}
	_ = l.Open(10, runner, conn)
	_ = l.Ping(10, runner, conn, 0)
	fmt.Println(l.IsPresent(runner, 24), l.IsPresent(runner, 25))
	_ = l.Dispatch(12, runner, presence.HardFailure)
	fmt.Println(l.IsPresent(runner, 12))
	_ = l.Ping(13, runner, conn, 1)
	fmt.Println(l.IsPresent(runner, 13), l.AcceptingNew(runner))
	_ = l.Backpressure(14, runner, conn, false)
	fmt.Println(l.IsPresent(runner, 14), l.AcceptingNew(runner))
	// Output:
	// true false
	// false
	// true true
	// false false
}

func ExampleHeartbeatPhase() {
	runner, _ := wire.NewRunnerKey([32]byte{31: 1})
	s, _ := presence.NewHeartbeatSchedule(7, runner.Address(), 90, 10, cip11.DefaultParams())
	due := s.NextDue(1000, 995)
	fmt.Println(due%90 == s.Phase || due == 995+s.Emergency, due >= 1000)
	// Output: true true
}

type constRand uint64

func (c constRand) Uint64() uint64 { return uint64(c) }

func ExampleReconnectDelayMillis() {
	for _, a := range []uint32{0, 3, 20} {
		fmt.Print(presence.ReconnectDelayMillis(a, constRand(0)), " ", presence.ReconnectDelayMillis(a, constRand(^uint64(0))), "; ")
	}
	fmt.Println()
	// Output: 75 125; 600 1000; 22500 30000;
}

// ExampleModeASource wires the Mode-A read point into selection's §7.2
// presence source.
func ExampleModeASource() {
	st := presence.NewMemModeAState()
	a := cip11.Address{0xaa}
	_ = st.Block(9).PutPresenceAnchor(a, presence.ModeARecord{Anchor: 9, ProvenUntil: 69})
	src := selection.BlockPresenceSource{Params: cip11.DefaultParams(),
		ModeA: presence.ModeASource(func(h uint64) (presence.ModeAReader, error) { return st.At(h), nil })}
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
