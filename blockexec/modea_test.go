package blockexec_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/synth"
	"github.com/cip11/cip11/wire"
)

// Mode-A fixtures (§8.3): validator i's Ed25519 seed is {i, 0x6b, …}; runner
// i's secp256k1 secret is {0x21, i, 0, …, 1}. The runners are registered
// in block modeARegBlock, after the synthetic chain's own registrations of
// that block; later heartbeat indices are moved up to match.
const (
	modeAChainID  = 77
	modeARegBlock = 22
	modeAChain    = 60
)

func modeAValidator(i int) *wire.ValidatorKey {
	var s [32]byte
	s[0], s[1] = byte(i), byte(i>>8)
	for j := 2; j < 32; j++ {
		s[j] = 0x6b
	}
	return wire.NewValidatorKey(s)
}

func modeARunner(t *testing.T, i int) *wire.RunnerKey {
	t.Helper()
	var s [32]byte
	s[0], s[1], s[31] = 0x21, byte(i), 1
	k, err := wire.NewRunnerKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// modeASet returns n validator keys in §5.4 canonical order (ascending raw
// peer_pubkey) and the snapshot of epoch 0 they form.
func modeASet(t *testing.T, n int) ([]*wire.ValidatorKey, *validators.Snapshot) {
	t.Helper()
	ks := make([]*wire.ValidatorKey, n)
	for i := range ks {
		ks[i] = modeAValidator(i)
	}
	slices.SortFunc(ks, func(a, b *wire.ValidatorKey) int { return bytes.Compare(a.PubKey().Raw(), b.PubKey().Raw()) })
	recs := make([]validators.Record, n)
	for i, k := range ks {
		recs[i].PeerPubKey = validators.PeerKey(k.PubKey().Raw())
	}
	s, err := validators.NewSnapshot(0, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ks, s
}

// modeAHeader turns the synthetic chain's header into a multi-validator one
// with Mode-A machinery over keys.
func modeAHeader(h chainlog.Header, keys []*wire.ValidatorKey, p cip11.Params) chainlog.Header {
	id := chainlog.U64(modeAChainID)
	h.ReceiptChainID, h.Params = &id, p
	vs := chainlog.ValidatorSet{Participants: uint32(len(keys))}
	for _, k := range keys {
		vs.PeerPubKeys = append(vs.PeerPubKeys, chainlog.PeerKey(k.PubKey().Raw()))
	}
	h.Validators = []chainlog.ValidatorSet{vs}
	return h
}

// modeABlocks is the synthetic chain with runners registered at
// modeARegBlock and heartbeating every block from then on (so they stay
// above the §7.1 floor).
func modeABlocks(t *testing.T, runners []*wire.RunnerKey) (chainlog.Header, []chainlog.Block) {
	t.Helper()
	h, blocks := generate(t, synth.GenConfig{Seed: 11, Runners: 24, Blocks: modeAChain, MultiValidator: true})
	base := 0 // synthetic registrations up to and including modeARegBlock
	for _, b := range blocks[:modeARegBlock] {
		for _, op := range b.Registry {
			if op.Op == chainlog.OpRegister {
				base++
			}
		}
	}
	size := base                                   // synthetic registry size at the end of block j−1
	for j := modeARegBlock; j < len(blocks); j++ { // later registrations move up by len(runners)
		for i, idx := range blocks[j].Heartbeats {
			if int(idx) >= base {
				blocks[j].Heartbeats[i] = idx + uint32(len(runners))
			}
		}
		if f := blocks[j].Presence; f != nil && len(*f) > 0 { // PresenceInput(h) is indexed against h−1 (§8.5)
			set, err := presence.Decode(*f, size)
			if err != nil {
				t.Fatalf("block %d presence: %v", blocks[j].Height, err)
			}
			idx := set.Indices()
			for i := range idx {
				if idx[i] >= base {
					idx[i] += len(runners)
				}
			}
			moved, err := presence.NewSet(size+len(runners), idx)
			if err != nil {
				t.Fatal(err)
			}
			enc := chainlog.Bytes(presence.Encode(moved))
			blocks[j].Presence = &enc
		}
		for _, op := range blocks[j].Registry {
			if op.Op == chainlog.OpRegister {
				size++
			}
		}
	}
	stake, rep := cip11.U128From64(50_000_000_000_000), chainlog.U64(1_000_000_000)
	for i, k := range runners {
		b := &blocks[modeARegBlock-1]
		b.Registry = append(b.Registry, chainlog.RegistryOp{Op: chainlog.OpRegister, Address: k.Address(), Stake: &stake, ReputationX1e9: &rep})
		for j := modeARegBlock; j < len(blocks); j++ {
			blocks[j].Heartbeats = append(blocks[j].Heartbeats, uint32(base+i))
		}
	}
	return h, blocks
}

// certificate builds runner k's SubmitPresenceCertificate at height h with
// receipts observed at height obs from the first n validators of its
// Sub(R) in snapshot s.
func certificate(t *testing.T, keys []*wire.ValidatorKey, s *validators.Snapshot, p cip11.Params, k *wire.RunnerKey, h, obs uint64, n int) *chainlog.Certificate {
	t.Helper()
	sub, err := s.Sub(k.PubKey(), p)
	if err != nil {
		t.Fatal(err)
	}
	c := &chainlog.Certificate{Runner: k.Address(), Height: chainlog.U64(h), Receipts: []chainlog.Receipt{}}
	for _, v := range sub[:n] {
		var vk *wire.ValidatorKey
		for _, cand := range keys {
			if validators.PeerKey(cand.PubKey().Raw()) == v {
				vk = cand
			}
		}
		r := wire.PresenceReceipt{ValidatorPubKey: vk.PubKey(), RunnerPubKey: k.PubKey(), SubsetEpoch: s.Epoch(),
			ValidatorSetHash: s.Hash(), BlockHeight: obs, NonceEcho: obs * 7, AcceptingNew: true}
		if err := r.Sign(modeAChainID, vk); err != nil {
			t.Fatal(err)
		}
		c.Receipts = append(c.Receipts, blockexec.ReceiptOf(&r))
	}
	return c
}

func addCert(b *chainlog.Block, c *chainlog.Certificate) {
	b.Txs = append(b.Txs, chainlog.Tx{Certificate: c})
}

// run executes blocks from scratch and returns every block's output; a
// block error fails the test.
func run(t *testing.T, h chainlog.Header, blocks []chainlog.Block) []chainlog.Output {
	t.Helper()
	x, err := blockexec.New(h, blockexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	outs := make([]chainlog.Output, len(blocks))
	for i := range blocks {
		if outs[i], err = x.Step(&blocks[i]); err != nil {
			t.Fatalf("block %d: %v", blocks[i].Height, err)
		}
	}
	return outs
}

// TestCertificateExecution: SubmitPresenceCertificate in a block (§8.3):
// accepted with t_hard receipts, anchor = max receipt height, proven_until =
// anchor + PRESENCE_PROOF_TTL_BLOCKS; replaying the same certificate is
// anchor_not_newer; fewer than t_hard receipts is below_threshold; a
// receipt whose key bytes are garbage is charged and not counted; the state
// digest covers the Mode-A state (docs/chainlog.md) and the outcomes survive
// a chain-log round trip; a log without Mode-A machinery refuses the block
// (ErrNoModeA). PRESENCE_HARD_EXCLUDE_ENABLED is set with 4 validators, so
// the §8.4 K_HARD_MIN guard is false: the certificates are shadow state and
// every block's assignments equal those of the same chain without them (no
// floor-eligible runner is removed, §8.3).
func TestCertificateExecution(t *testing.T) {
	p := cip11.DefaultParams()
	p.THard = 2                         // k = 3 of 4 validators
	p.PresenceHardExcludeEnabled = true // requested, but the §8.4 guard is false: shadow only
	keys, snap := modeASet(t, 4)
	rk := []*wire.RunnerKey{modeARunner(t, 0), modeARunner(t, 1)}
	h0, blocks := modeABlocks(t, rk)
	h := modeAHeader(h0, keys, p)
	plain := run(t, h, blocks)

	good := certificate(t, keys, snap, p, rk[0], 30, 29, 2)
	addCert(&blocks[29], good) // height 30
	addCert(&blocks[31], good) // height 32: the same receipts again
	addCert(&blocks[31], certificate(t, keys, snap, p, rk[1], 32, 31, 1))
	garbled := certificate(t, keys, snap, p, rk[1], 33, 33, 3)
	garbled.Receipts[0].ValidatorPubKey = chainlog.Bytes{0x02, 0x01}
	addCert(&blocks[32], garbled) // height 33: two good receipts still reach t_hard
	outs := run(t, h, blocks)

	want := map[uint64][]chainlog.CertificateOutcome{
		30: {{Tx: uint32(len(blocks[29].Txs) - 1), Runner: rk[0].Address(), Result: blockexec.CertAccepted, Anchor: 29, ProvenUntil: 29 + 60, Counted: 2, Cycles: 20_000 + 2*1_000 + 2*5_000}},
		32: {
			{Tx: uint32(len(blocks[31].Txs) - 2), Runner: rk[0].Address(), Result: blockexec.CertAnchorNotNewer, Counted: 2, Cycles: 32_000},
			{Tx: uint32(len(blocks[31].Txs) - 1), Runner: rk[1].Address(), Result: blockexec.CertBelowThreshold, Counted: 1, Cycles: 26_000},
		},
		33: {{Tx: uint32(len(blocks[32].Txs) - 1), Runner: rk[1].Address(), Result: blockexec.CertAccepted, Anchor: 33, ProvenUntil: 93, Counted: 2, Cycles: 20_000 + 3*1_000 + 2*5_000}},
	}
	seats := 0
	for i, o := range outs {
		ht := uint64(blocks[i].Height)
		if ht > 30 {
			for _, a := range o.Assignments {
				seats += len(a.Committee)
			}
		}
		if !slices.Equal(o.Certificates, want[ht]) {
			t.Errorf("block %d certificates %+v, want %+v", ht, o.Certificates, want[ht])
		}
		// Selection never moves: Mode A is not effective with 4 validators.
		if !slices.EqualFunc(o.Assignments, plain[i].Assignments, func(a, b chainlog.Assignment) bool {
			return a.JobID == b.JobID && slices.Equal(a.Committee, b.Committee)
		}) {
			t.Errorf("block %d: assignments moved by certificates", ht)
		}
		if (ht >= 30) == (o.StateDigest == plain[i].StateDigest) {
			t.Errorf("block %d: state digest with certificates equal to without: %v (want equal only before 30)", ht, o.StateDigest == plain[i].StateDigest)
		}
	}
	if seats == 0 {
		t.Fatal("no assignment after the certificates: the comparison shows nothing")
	}
	// The chain-log round trip keeps certificates and outcomes.
	b := blocks[31]
	b.Out = outs[31]
	line, err := chainlog.EncodeBlock(&b)
	if err != nil {
		t.Fatal(err)
	}
	back, err := chainlog.DecodeBlock(line)
	if err != nil {
		t.Fatal(err)
	}
	if d := blockexec.DiffOutput(32, &b.Out, &back.Out); d != nil || len(back.Txs) != len(b.Txs) || back.Txs[len(b.Txs)-1].Certificate == nil {
		t.Fatalf("round trip: %v", d)
	}
	// Without Mode-A machinery the block is refused.
	x, err := blockexec.New(h0, blockexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for i := range blocks[:29] {
		if _, err := x.Step(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := x.Step(&blocks[29]); !errors.Is(err, blockexec.ErrNoModeA) {
		t.Fatalf("certificate without Mode-A header: %v, want ErrNoModeA", err)
	}
}

// TestModeAEffectiveExcludesUncertified: with 20 validators, MIN_SUBSET =
// MAX_SUBSET = 20 and t_hard = 11 the §8.4 guard holds, so with
// PRESENCE_HARD_EXCLUDE_ENABLED PresenceInput(H) is the state-derived set
// { runner | presence_proven_until ≥ H } (§8.3 point 3): only the two
// certified runners are drawn, from the block after the certificate (parent
// state) until proven_until, and the 24 uncertified floor-eligible runners
// are never drawn then. The same chain with the flag off draws them.
func TestModeAEffectiveExcludesUncertified(t *testing.T) {
	rk := []*wire.RunnerKey{modeARunner(t, 0), modeARunner(t, 1), modeARunner(t, 2)}
	h0, blocks := modeABlocks(t, rk)
	p := h0.Params
	p.MinSubset, p.MaxSubset, p.THard = 20, 20, 11
	p.PresenceHardExcludeEnabled = true
	p.PresenceProofTTLBlocks = 12
	keys, snap := modeASet(t, 20)
	if !snap.ModeAEffective(p) {
		t.Fatal("guard false with 20 validators and k = 20")
	}
	addCert(&blocks[29], certificate(t, keys, snap, p, rk[0], 30, 30, 11)) // proven 31..42
	addCert(&blocks[29], certificate(t, keys, snap, p, rk[1], 30, 29, 11)) // proven 31..41
	addCert(&blocks[29], certificate(t, keys, snap, p, rk[2], 30, 30, 10)) // below t_hard
	outs := run(t, modeAHeader(h0, keys, p), blocks)
	if got := outs[29].Certificates; len(got) != 3 || got[0].Result != blockexec.CertAccepted || got[1].Result != blockexec.CertAccepted || got[2].Result != blockexec.CertBelowThreshold {
		t.Fatalf("certificates %+v", got)
	}
	certified := []cip11.Address{rk[0].Address(), rk[1].Address()}
	drawn := 0
	for i, o := range outs {
		ht := uint64(blocks[i].Height)
		for _, a := range o.Assignments {
			if uint64(a.AssignmentHeight) != ht {
				continue
			}
			for _, m := range a.Committee {
				inWindow := ht >= 31 && ht <= 41
				switch {
				case ht <= 30 || ht > 42:
					t.Errorf("block %d: %s drawn with no runner proven present", ht, m)
				case !slices.Contains(certified, m) || (ht == 42 && m != rk[0].Address()):
					t.Errorf("block %d: %s drawn, not proven present", ht, m)
				case inWindow || ht == 42:
					drawn++
				}
			}
		}
	}
	if drawn == 0 {
		t.Fatal("no certified runner drawn in the proven window: the test shows nothing")
	}
	q := p
	q.PresenceHardExcludeEnabled = false
	other := 0
	for i, o := range run(t, modeAHeader(h0, keys, q), blocks) {
		for _, a := range o.Assignments {
			for _, m := range a.Committee {
				if uint64(a.AssignmentHeight) == uint64(blocks[i].Height) && !slices.Contains(certified, m) {
					other++
				}
			}
		}
	}
	if other == 0 {
		t.Fatal("with the flag off no uncertified runner is drawn either")
	}
	t.Logf("Mode A effective: %d committee seats for the 2 certified runners in their window; flag off: %d seats for others", drawn, other)
}

var updateGolden = flag.Bool("update", false, "rewrite blockexec/testdata/modea_chain.jsonl")

// modeAGoldenBlocks is the golden Mode-A chain's length.
const modeAGoldenBlocks = 36

// TestModeAGoldenLog pins a chain log with §8.3 certificates byte for
// byte (testdata/modea_chain.jsonl, frozen; -update rewrites it): a header
// with receipt_chain_id and peer_pubkeys, and the certificates of
// TestCertificateExecution (accepted, anchor_not_newer, below_threshold, a
// garbled receipt) with their outcomes and the state digests that cover
// the Mode-A state. The frozen log replays (package replay), and changing
// one recorded outcome, or one receipt signature byte, is a divergence.
func TestModeAGoldenLog(t *testing.T) {
	rk := []*wire.RunnerKey{modeARunner(t, 0), modeARunner(t, 1)}
	h0, blocks := modeABlocks(t, rk)
	blocks = blocks[:modeAGoldenBlocks]
	p := h0.Params
	p.THard = 2
	p.PresenceHardExcludeEnabled = true
	keys, snap := modeASet(t, 4)
	h := modeAHeader(h0, keys, p)
	h.Generator = "blockexec TestModeAGoldenLog"
	good := certificate(t, keys, snap, p, rk[0], 30, 29, 2)
	addCert(&blocks[29], good)
	addCert(&blocks[31], good)
	addCert(&blocks[31], certificate(t, keys, snap, p, rk[1], 32, 31, 1))
	garbled := certificate(t, keys, snap, p, rk[1], 33, 33, 3)
	garbled.Receipts[0].ValidatorPubKey = chainlog.Bytes{0x02, 0x01}
	addCert(&blocks[32], garbled)
	outs := run(t, h, blocks)
	var buf bytes.Buffer
	w, err := chainlog.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		blocks[i].Out = outs[i]
		if err := w.WriteBlock(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "modea_chain.jsonl")
	if *updateGolden {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	frozen, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frozen, buf.Bytes()) {
		t.Fatalf("the Mode-A chain no longer executes to the frozen %s (run with -update only for an intended change)", path)
	}
	if _, err := replay.Run(bytes.NewReader(frozen), replay.Config{}); err != nil {
		t.Fatalf("the frozen log does not replay: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(frozen), []byte("\n"))
	for name, mut := range map[string]func(*chainlog.Block){
		"outcome":   func(b *chainlog.Block) { b.Out.Certificates[0].ProvenUntil++ },
		"signature": func(b *chainlog.Block) { b.Txs[len(b.Txs)-1].Certificate.Receipts[1].ValidatorSigned[5] ^= 1 },
	} {
		b, err := chainlog.DecodeBlock(lines[30]) // height 30: the accepted certificate
		if err != nil {
			t.Fatal(err)
		}
		mut(&b)
		line, err := chainlog.EncodeBlock(&b)
		if err != nil {
			t.Fatal(err)
		}
		tampered := slices.Clone(lines)
		tampered[30] = line
		_, err = replay.Run(bytes.NewReader(append(bytes.Join(tampered, []byte("\n")), '\n')), replay.Config{})
		if !errors.Is(err, blockexec.ErrDivergence) {
			t.Errorf("%s changed at height 30: replay %v, want ErrDivergence", name, err)
		}
	}
}
