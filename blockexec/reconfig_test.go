package blockexec_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/wire"
)

// reconfHeader is a 4-validator height-scheduled (D30) header with Mode-A
// peer keys; blocks carry no jobs.
func reconfHeader(t *testing.T, keys []*wire.ValidatorKey) chainlog.Header {
	t.Helper()
	p := cip11.DefaultParams()
	p.OverlapBlocks = 10
	h := modeAHeader(chainlog.Header{Format: chainlog.FormatName, Version: chainlog.Version, ChainID: "reconf",
		Generator: "blockexec TestReconfigure", Namespace: chainlog.Bytes("cip11-test"),
		Reputation: chainlog.ReputationConfig{Normalizer: 1_000_000_000, WMinFloorX1e6: 1}}, keys, p)
	h.ThresholdKeys = []chainlog.EpochKey{{Epoch: 0, PublicKey: groupKey(0)}}
	h.Schedule = chainlog.Schedule{Activations: []chainlog.U64{1}, KnownThrough: 1 << 40}
	return h
}

func groupKey(e byte) chainlog.PublicKey {
	return seed.DeriveSecretKey([]byte{'g', e}).PublicKey()
}

// reconf is epoch e's set: keys (ascending) as members.
func reconf(e, act uint64, keys []*wire.ValidatorKey) *chainlog.Reconfigure {
	r := &chainlog.Reconfigure{Epoch: chainlog.U64(e), Activation: chainlog.U64(act), GroupKey: groupKey(byte(e))}
	for i, k := range keys {
		r.Set = append(r.Set, chainlog.SetMember{PeerPubKey: chainlog.PeerKey(k.PubKey().Raw()),
			ThresholdPubKey: groupKey(byte(100 + i)), QUIC: "127.0.0.1:1"})
	}
	return r
}

type keepOpen struct{ store.Store }

func (keepOpen) Close() error { return nil }

// TestReconfigure pins the in-band reconfiguration of SPEC-NOTES C11: the
// checks of CheckReconfigure (each refusal wraps ErrReconfigure and makes
// the block invalid), the staged schedule change (a discarded block leaves
// none), the D25 size and epoch count after commit, the digest's
// reconfiguration section (frozen), and a restarted executor given its
// committed reconfigurations computing the same digest.
func TestReconfigure(t *testing.T) {
	all, _ := modeASet(t, 6)
	keys := all[:4]
	h := reconfHeader(t, keys)
	st := store.NewMemConfig(stateCfg(h))
	open := func(chainlog.Header) (store.Store, error) { return keepOpen{st}, nil }
	x, err := blockexec.New(h, blockexec.Options{OpenStore: open})
	if err != nil {
		t.Fatal(err)
	}
	noSeeds, err := seed.ConsumedSeedsV1{}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	blk := func(height uint64, txs ...chainlog.Tx) *chainlog.Block {
		return &chainlog.Block{Height: chainlog.U64(height), Round: chainlog.Round{Epoch: 0, View: chainlog.U64(height)}, Txs: txs, ConsumedSeeds: noSeeds}
	}
	for i := uint64(1); i <= 4; i++ {
		if _, err := x.Step(blk(i)); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	plain, err := x.Execute(blk(5))
	if err != nil {
		t.Fatal(err)
	}
	x.Discard()
	add := append(slices.Clone(keys), all[4])
	slices.SortFunc(add, func(a, b *wire.ValidatorKey) int { return bytes.Compare(a.PubKey().Raw(), b.PubKey().Raw()) })
	good := reconf(1, 13, add)
	badKey := reconf(1, 13, add)
	badKey.GroupKey[0] ^= 0xff
	two := append(slices.Clone(add), all[5])
	slices.SortFunc(two, func(a, b *wire.ValidatorKey) int { return bytes.Compare(a.PubKey().Raw(), b.PubKey().Raw()) })
	swapped := slices.Clone(keys)
	swapped[0] = all[5]
	slices.SortFunc(swapped, func(a, b *wire.ValidatorKey) int { return bytes.Compare(a.PubKey().Raw(), b.PubKey().Raw()) })
	for name, r := range map[string]*chainlog.Reconfigure{
		"wrong epoch":    reconf(2, 13, add),
		"lead too short": reconf(1, 12, add),
		"two added":      reconf(1, 13, two),
		"one swapped":    reconf(1, 13, swapped),
		"bad group key":  badKey,
		"beyond horizon": reconf(1, 1<<41, add),
		"same set":       reconf(1, 13, keys),
	} {
		if _, err := x.Execute(blk(5, chainlog.Tx{Reconfigure: r})); !errors.Is(err, blockexec.ErrReconfigure) {
			t.Errorf("%s: %v, want ErrReconfigure", name, err)
		}
		if x.Epochs() != 1 {
			t.Fatalf("%s: a refused reconfiguration left %d epochs", name, x.Epochs())
		}
	}
	if _, err := x.Execute(blk(5, chainlog.Tx{Reconfigure: good}, chainlog.Tx{Reconfigure: good})); !errors.Is(err, blockexec.ErrReconfigure) {
		t.Errorf("two in a block: %v", err)
	}
	out, err := x.Execute(blk(5, chainlog.Tx{Reconfigure: good}))
	if err != nil {
		t.Fatal(err)
	}
	if out.StateDigest == plain.StateDigest {
		t.Fatal("the reconfiguration is not in the state digest")
	}
	// Frozen: keccak256 of the empty state plus "reconfig" ‖ keccak256(0³² ‖ canonical good).
	const want = "e682c324e744f6f8c7b16e7d37eac530d0a1251de76db28918ea33f3e851e2be"
	if got := hex.EncodeToString(out.StateDigest[:]); got != want {
		t.Errorf("digest %s, frozen %s", got, want)
	}
	x.Discard()
	if x.Epochs() != 1 {
		t.Fatal("a discarded block's reconfiguration was applied")
	}
	if _, err := x.Step(blk(5, chainlog.Tx{Reconfigure: good})); err != nil {
		t.Fatal(err)
	}
	if n, _ := x.ParticipantsAt(12); x.Epochs() != 2 || n != 4 {
		t.Fatalf("epochs %d, participants at 12 %d", x.Epochs(), n)
	}
	if n, _ := x.ParticipantsAt(13); n != 5 {
		t.Fatalf("participants at 13: %d", n)
	}
	// One at a time: epoch 2 waits for 13, and then for its overlap (10).
	if err := x.CheckReconfigure(6, reconf(2, 30, keys)); !errors.Is(err, blockexec.ErrReconfigure) {
		t.Errorf("while epoch 1 is pending: %v", err)
	}
	if err := x.CheckReconfigure(13, reconf(2, 22, keys)); !errors.Is(err, blockexec.ErrReconfigure) {
		t.Errorf("inside the overlap: %v", err)
	}
	if err := x.CheckReconfigure(13, reconf(2, 23, keys)); err != nil {
		t.Errorf("removal after the overlap: %v", err)
	}
	for i := uint64(6); i <= 8; i++ {
		if _, err := x.Step(blk(i)); err != nil {
			t.Fatal(err)
		}
	}
	d8, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	// Restart over the same store with the committed reconfigurations.
	y, err := blockexec.New(h, blockexec.Options{OpenStore: open, Reconfigurations: x.Reconfigurations()})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := y.Digest(); err != nil || d != d8 || y.Epochs() != 2 {
		t.Fatalf("restarted: digest %x (want %x), epochs %d, %v", d, d8, y.Epochs(), err)
	}
	if _, err := blockexec.New(h, blockexec.Options{OpenStore: open, Reconfigurations: []chainlog.Reconfigure{*reconf(2, 30, keys)}}); !errors.Is(err, blockexec.ErrReconfigure) {
		t.Errorf("a restart with a gap in the epochs: %v", err)
	}
}

func stateCfg(h chainlog.Header) state.ReputationConfig {
	return state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
}

// TestCheckScheduleChangeNeverWraps pins that every bound of the
// reconfiguration rule (SPEC-NOTES C11) saturates instead of wrapping: a
// governance SELECTION_SEED_DELAY_VIEWS of 2^64−1 makes the lead 2^64−1
// (seed_delay + 1 saturates; before, it wrapped to 0 and the lead fell back
// to 8), and a height or last activation near 2^64−1 whose sum with the lead
// or OVERLAP_BLOCKS passes 2^64−1 meets no activation. Each is refused with
// ErrReconfigure; the control at the least lead is accepted.
func TestCheckScheduleChangeNeverWraps(t *testing.T) {
	const max = ^uint64(0)
	hdr := func(seedDelay, overlap, known uint64, acts ...uint64) chainlog.Header {
		h := chainlog.Header{Params: cip11.DefaultParams(), Namespace: chainlog.Bytes("cip11-test")}
		h.Params.SelectionSeedDelayViews, h.Params.OverlapBlocks = seedDelay, overlap
		for _, a := range acts {
			h.Schedule.Activations = append(h.Schedule.Activations, chainlog.U64(a))
		}
		h.Schedule.KnownThrough = chainlog.U64(known)
		h.Validators = []chainlog.ValidatorSet{{Participants: 4}}
		return h
	}
	set := func(epoch, act uint64) *chainlog.Reconfigure {
		r := &chainlog.Reconfigure{Epoch: chainlog.U64(epoch), Activation: chainlog.U64(act), GroupKey: groupKey(byte(epoch))}
		for i := range 5 {
			r.Set = append(r.Set, chainlog.SetMember{PeerPubKey: chainlog.PeerKey{byte(i + 1)}, ThresholdPubKey: groupKey(byte(100 + i)), QUIC: "127.0.0.1:1"})
		}
		return r
	}
	for _, c := range []struct {
		name   string
		h      chainlog.Header
		height uint64
		r      *chainlog.Reconfigure
		ok     bool
	}{
		{"control: the least lead", hdr(3, 15, 1<<62, 1), 18, set(1, 26), true},
		{"seed_delay 2^64−1: seed_delay + 1 saturates", hdr(max, 15, 1<<62, 1), 18, set(1, 30), false},
		{"seed_delay 2^64−1 at the top of the range", hdr(max, 15, max, 1), 18, set(1, max), false},
		{"seed_delay 2^64−2: the lead is 2^64−1", hdr(max-1, 15, max, 1), 1, set(1, max), false},
		{"H + lead passes 2^64−1", hdr(3, 15, max, 1), max - 5, set(1, max), false},
		{"last + OVERLAP_BLOCKS passes 2^64−1", hdr(3, max, 1<<62, 1), 18, set(1, 30), false},
	} {
		err := blockexec.CheckScheduleChange(c.h, c.height, c.r)
		if c.ok != (err == nil) || (!c.ok && !errors.Is(err, blockexec.ErrReconfigure)) {
			t.Errorf("%s: %v, want ok=%v or ErrReconfigure", c.name, err, c.ok)
		}
	}
}
