package conformance

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/nodetx"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/wire"
)

// The network on CometBFT (SPEC-NOTES C1, C2, C8; DECISIONS D31–D33): the
// block layout, the vote extension and the presence gossip message. The
// functions are pure (package blocklayout); this package never
// imports CometBFT.

func cometbftFunctions() []Function {
	return []Function{{
		Name: "cometbft_layout", Spec: "§7.2, §9.2, §17",
		Description: "The CIP-11 block as CometBFT transactions (DECISIONS D32, SPEC-NOTES C1): txs[0] the block header (\"C11H\" ‖ §12.6 CBOR, as block_header), txs[1] the body (\"C11B\" ‖ the canonical chainlog JSON of a block that carries only registry, heartbeats and txs: every other field zero, null or empty, see docs/chainlog.md), txs[2…] the raw submissions: devnet job specs (\"C11J\" ‖ 01 ‖ …, adapters/node/chain) and node transactions (\"C11T\" ‖ 02 ‖ …, signed secp256k1). Encoding (vectors with block): header from the block's round, parent_beacon, finalized, presence and consumed_seeds; body from its registry, heartbeats and txs; then specs in order and extra in order, each skipped when it is a byte-for-byte repeat of an earlier one, and extra entries that open with \"C11H\" or \"C11B\" skipped. Decoding (vectors with txs) at height and chain_id, checks in order: txs[0] present and opening with \"C11H\" (else ErrHeaderMissing); the header decodes strictly and passes block_header's check at height (its sentinels); txs[1] present and opening with \"C11B\" (a header there is ErrHeaderMisplaced, anything else ErrBodyMissing); the body is chainlog JSON with no header or output field, in canonical form (ErrBodyMalformed); each txs[i], i ≥ 2, in order: a header is ErrHeaderMisplaced, one opening with \"C11J\" must decode as a job spec, any other as a node transaction of chain_id (\"C11T\" ‖ 02 ‖ kind ‖ chain_id 8 ‖ from 20 ‖ nonce 8 ‖ job_id 32 ‖ payload_len 2 ‖ payload ‖ signature 65; payload by kind: 1 heartbeat 0 bytes, 2 register 16, 3 commit 32, 4 reveal 64 to 64 + 4096 (result 32 ‖ salt 32 ‖ output; with an output the result must be keccak256(output), SPEC-NOTES C12), 5 certificate 8 + 188·(1..32), 6 reconfigure 1..32768 bytes that are exactly the canonical reconfigure_check encoding with nonce = its epoch, any other kind refused; job_id zero for kinds 1, 2, 5 and 6; signature r ‖ s ‖ v with v 0 or 1, 1 ≤ s ≤ (n-1)/2 (low-s), 1 ≤ r < n, recovering the from address over keccak256(\"cip11-devnet-tx/v2\" ‖ every byte before it); see docs/vectors.md) (else ErrBadTx); then every submit of the body, in order, must have among them a spec whose job_id (keccak256(\"cip11-devnet-job/v1\" ‖ spec)) is the submit's, with the same submitter, job_kind, committee size (runners) and timeout_blocks (else ErrSpecMissing); only then every certificate of the body (§8.3 SubmitPresenceCertificate, SPEC-NOTES C10), in order, must have among them a node transaction of kind 5 (certificate: payload height (8) ‖ 1 to 32 receipts of 188 bytes, validator_pubkey 33 ‖ runner_pubkey 34 ‖ subset_epoch 8 ‖ validator_set_hash 32 ‖ block_height 8 ‖ nonce_echo 8 ‖ accepting_new 1 (0 or 1) ‖ validator_signed 64; job_id zero) signed by the certificate's runner and carrying exactly its height and receipts (else ErrCertificateUnsigned). The order of txs[2…], repeated or unreferenced specs are not checked. Output block: the chainlog JSON of the decoded block (height the input height, round, parent_beacon, finalized, presence and consumed_seeds from the header; out empty). The parent beacon's signature is not verified here (the application verifies it under the group key).",
		Generate:    clGen, Eval: clEval,
	}, {
		Name: "cometbft_vote_extension", Spec: "§9.2",
		Description: fmt.Sprintf("The CometBFT vote extension (DECISIONS D30, D31, SPEC-NOTES C2): the precommit of height h carries the signer's partial seed signature of Round(0, h), i.e. share_key·H(m) with m the seed_message (DECISIONS D12) of epoch 0, view h under namespace: 48 bytes, compressed G1. Inputs: public_shares (96-byte compressed G2 keys, the public share of index i at position i-1, n = its length), namespace (hex), height (u64), index (the signer's 1-based position in the validator set; 0 stands for an address outside it), and either share_key (the 32-byte big-endian share scalar: the vector signs, output extension, then verifies it) or extension (the vector verifies it). Output accepted (true) when the extension verifies. Verification checks, in order: index in 1..n (ErrIndexOutOfRange); exactly 48 bytes (ErrSeedSignatureLength); the public share of index decodes (the public-key sentinels); the extension decodes strictly as a G1 point (the signature sentinels); e(H(m), public_share) = e(extension, g2) (ErrPartialInvalid). Signing: a zero or out-of-range share_key is ErrSecretKey, index 0 ErrIndexOutOfRange. The shares are those of seed_threshold_recover's dealing of the group secret %s (threshold t = n - floor((n-1)/3)): any t extensions of one height recover (Lagrange at 0) the group signature of Round(0, h).", seedThrSecretHex()),
		Generate:    veGen, Eval: veEval,
	}, {
		Name: "presence_gossip", Spec: "§7.3, §8.1, §8.2",
		Description: fmt.Sprintf("The presence gossip message (DECISIONS D33, SPEC-NOTES C8): \"C11P\" (43313150) ‖ version 01 ‖ height (8 bytes, big-endian) ‖ registry size n (4 bytes, big-endian) ‖ a PresenceInputV1 over n runners (presence_input), at most %d bytes in all. Vectors with height, registry_size and field encode them to message (registry_size 0 … 4294967295, the field carried verbatim, at most 262144 bytes; else ErrGossipRegistrySize / ErrGossipLength), then decode that message; vectors with only message decode it. Decoding checks, in order: length %d … %d bytes (ErrGossipLength), magic (ErrGossipMagic), version 1 (ErrGossipVersion), then the field decodes strictly against n with presence_input's rules and sentinels. Outputs: message, height, registry_size and indices (the present registry indices, ascending).", blocklayout.MaxGossipBytes, blocklayout.GossipHeaderBytes, blocklayout.MaxGossipBytes),
		Generate:    pgGen, Eval: pgEval,
	}}
}

// cometbftSentinels are the block layout's sentinels. They come first in
// [Sentinels]: a layout error wraps the inner error (a chainlog, node or
// wire one) that says more, but the vector names the layout rule.
func cometbftSentinels() []Sentinel {
	return []Sentinel{
		{"ErrHeaderMissing", blocklayout.ErrHeaderMissing},
		{"ErrHeaderMisplaced", blocklayout.ErrHeaderMisplaced},
		{"ErrBodyMissing", blocklayout.ErrBodyMissing},
		{"ErrBodyMalformed", blocklayout.ErrBodyMalformed},
		{"ErrBadTx", blocklayout.ErrBadTx},
		{"ErrSpecMissing", blocklayout.ErrSpecMissing},
		{"ErrBeaconInvalid", blocklayout.ErrBeaconInvalid},
		{"ErrCertificateUnsigned", blocklayout.ErrCertificateUnsigned},
	}
}

// gossipSentinels are the gossip codec's and the vote extension's. They
// come last: a malformed field is named by its presence sentinel, and a
// rejected extension by the seed sentinel it wraps.
func gossipSentinels() []Sentinel {
	return []Sentinel{
		{"ErrGossipLength", blocklayout.ErrGossipLength},
		{"ErrGossipMagic", blocklayout.ErrGossipMagic},
		{"ErrGossipVersion", blocklayout.ErrGossipVersion},
		{"ErrGossipRegistrySize", blocklayout.ErrGossipRegistrySize},
		{"ErrGossip", blocklayout.ErrGossip},
		{"ErrExtension", blocklayout.ErrExtension},
	}
}

// ---- cometbft_layout (D32, SPEC-NOTES C1) ----

type clVector struct {
	Name    string          `json:"name"`
	Height  string          `json:"height"`
	ChainID string          `json:"chain_id"`
	Block   json.RawMessage `json:"block,omitempty"`
	Specs   *[]string       `json:"specs,omitempty"`
	Extra   *[]string       `json:"extra,omitempty"`
	Txs     *[]string       `json:"txs,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func clHexes(ss []string) ([][]byte, error) {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		b, err := Unhex(s)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func clHexList(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = Hex(b)
	}
	return out
}

func clEval(raw json.RawMessage) (map[string]any, error) {
	var v clVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	height, err := parseU64(v.Height)
	if err != nil {
		return nil, err
	}
	chainID, err := parseU64(v.ChainID)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	var txs [][]byte
	if v.Txs != nil {
		if txs, err = clHexes(*v.Txs); err != nil {
			return nil, err
		}
	}
	switch {
	case v.Specs != nil || v.Extra != nil: // encode: block, specs and extra are inputs
		if len(v.Block) == 0 || v.Specs == nil || v.Extra == nil {
			return nil, fmt.Errorf("%w: encoding needs block, specs and extra", ErrMalformedVector)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, v.Block); err != nil {
			return nil, fmt.Errorf("%w: block: %v", ErrMalformedVector, err)
		}
		b, err := chainlog.DecodeBlock(compact.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%w: block: %v", ErrMalformedVector, err)
		}
		if uint64(b.Height) != height {
			return nil, fmt.Errorf("%w: block height %d, vector height %d", ErrMalformedVector, b.Height, height)
		}
		specs, err := clHexes(*v.Specs)
		if err != nil {
			return nil, err
		}
		extra, err := clHexes(*v.Extra)
		if err != nil {
			return nil, err
		}
		enc, err := blocklayout.EncodeProposal(&b, specs, extra, 0)
		if err != nil {
			return nil, err
		}
		out["txs"] = clHexList(enc)
		if v.Txs == nil { // no txs to decode: the layout must decode back to the block
			txs = enc
		}
	case v.Txs == nil:
		return nil, fmt.Errorf("%w: neither specs and extra (encoding) nor txs (decoding)", ErrMalformedVector)
	}
	p, err := blocklayout.DecodeProposal(txs, height, chainID)
	if err != nil {
		return nil, err
	}
	dec, err := chainlog.EncodeBlock(p.Block)
	if err != nil {
		return nil, fmt.Errorf("re-encoding the decoded block: %v", err) // deliberately not a sentinel
	}
	out["block"] = json.RawMessage(dec)
	return out, nil
}

// clFixture is the layout vectors' material: blocks, specs and node
// transactions, all deterministic (RFC 6979 signatures).
type clFixture struct {
	spec, spec2, specBad   *nodetx.JobSpec
	hb, reg, other         *nodetx.Tx // heartbeat and register on chain 7011, heartbeat on 7012
	cert, cert2            *nodetx.Tx // SubmitPresenceCertificate (§8.3); cert2's receipt has another nonce
	commit, reveal         *nodetx.Tx // JobResultCommit / JobResultSubmit of spec's job (32- and 64-byte payloads)
	commitOut, revealOut   *nodetx.Tx // the same carrying the output "HELLO CIP11" (result = its keccak256, SPEC-NOTES C12)
	revealEmpty, revealMax *nodetx.Tx // a 64-byte reveal of keccak256(""), and one carrying MaxOutput bytes
	reconf                 *chainlog.Reconfigure
	reconfTx               *nodetx.Tx // kind 6 carrying reconf, nonce = its epoch
	key                    *wire.RunnerKey
}

// clRawTx is a node transaction built byte by byte and signed with k
// (generator only): nodetx.SignTx refuses what these vectors need to show
// refused (payload sizes, kinds, non-canonical payloads).
func clRawTx(k *wire.RunnerKey, kind byte, nonce uint64, jobID cip11.Hash, payload []byte) []byte {
	b := append([]byte("C11T"), 2, kind)
	b = binary.BigEndian.AppendUint64(b, clChain)
	a := k.Address()
	b = append(b, a[:]...)
	b = binary.BigEndian.AppendUint64(b, nonce)
	b = append(b, jobID[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	b = append(b, payload...)
	sig, err := k.Sign(cip11.Keccak256([]byte(nodetx.TxDomain), b))
	if err != nil {
		panic(err) // generator only
	}
	return append(b, sig[:]...)
}

const clChain = 7011

func clMakeFixture() (*clFixture, error) {
	f := &clFixture{
		spec:  &nodetx.JobSpec{Submitter: cip11.Address{0xaa, 1}, Kind: 1, Runners: 2, TimeoutBlocks: 12, WorkMillis: 50, Nonce: 7, Payload: []byte("job one")},
		spec2: &nodetx.JobSpec{Submitter: cip11.Address{0xbb, 2}, Kind: 2, Runners: 3, TimeoutBlocks: 30, Nonce: 1},
	}
	k, err := wire.NewRunnerKey(cip11.Keccak256([]byte("cip11 conformance cometbft runner v1")))
	if err != nil {
		return nil, err
	}
	if f.hb, err = nodetx.SignTx(k, clChain, nodetx.TxHeartbeat, 4, cip11.Hash{}, nil); err != nil {
		return nil, err
	}
	var sb [16]byte
	cip11.U128From64(5000).PutBE16(sb[:])
	if f.reg, err = nodetx.SignTx(k, clChain, nodetx.TxRegister, 0, cip11.Hash{}, sb[:]); err != nil {
		return nil, err
	}
	if f.other, err = nodetx.SignTx(k, clChain+1, nodetx.TxHeartbeat, 4, cip11.Hash{}, nil); err != nil {
		return nil, err
	}
	f.key = k
	result, salt := cip11.Keccak256([]byte("cip11 conformance result")), cip11.Keccak256([]byte("cip11 conformance salt"))
	com := nodetx.Commitment(result, salt)
	if f.commit, err = nodetx.SignTx(k, clChain, nodetx.TxCommit, 5, f.spec.ID(), com[:]); err != nil {
		return nil, err
	}
	if f.reveal, err = nodetx.SignTx(k, clChain, nodetx.TxReveal, 6, f.spec.ID(), nodetx.RevealPayload(result, salt, nil)); err != nil {
		return nil, err
	}
	out := []byte("HELLO CIP11")
	ocom := nodetx.Commitment(cip11.Keccak256(out), salt)
	if f.commitOut, err = nodetx.SignTx(k, clChain, nodetx.TxCommit, 7, f.spec.ID(), ocom[:]); err != nil {
		return nil, err
	}
	if f.revealOut, err = nodetx.SignTx(k, clChain, nodetx.TxReveal, 8, f.spec.ID(), nodetx.RevealPayload(cip11.Keccak256(out), salt, out)); err != nil {
		return nil, err
	}
	if f.revealEmpty, err = nodetx.SignTx(k, clChain, nodetx.TxReveal, 9, f.spec.ID(), nodetx.RevealPayload(cip11.Keccak256(nil), salt, nil)); err != nil {
		return nil, err
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), nodetx.MaxOutput/16)
	if f.revealMax, err = nodetx.SignTx(k, clChain, nodetx.TxReveal, 10, f.spec.ID(), nodetx.RevealPayload(cip11.Keccak256(big), salt, big)); err != nil {
		return nil, err
	}
	f.reconf = &chainlog.Reconfigure{Epoch: 1, Activation: 30, GroupKey: reconfKey("group", 1), Set: reconfSet(0, 1, 2, 3, 4)}
	rp, err := chainlog.EncodeReconfigure(f.reconf)
	if err != nil {
		return nil, err
	}
	if f.reconfTx, err = nodetx.SignTx(k, clChain, nodetx.TxReconfigure, 1, cip11.Hash{}, rp); err != nil {
		return nil, err
	}
	v := wire.NewValidatorKey(cip11.Keccak256([]byte("cip11 conformance cometbft validator v1")))
	for i, dst := range []**nodetx.Tx{&f.cert, &f.cert2} {
		r := wire.PresenceReceipt{ValidatorPubKey: v.PubKey(), RunnerPubKey: k.PubKey(), SubsetEpoch: 0, ValidatorSetHash: cip11.Hash{0x5e},
			BlockHeight: 4, NonceEcho: 11 + uint64(i), AcceptingNew: true}
		if err := r.Sign(clChain, v); err != nil {
			return nil, err
		}
		p, err := nodetx.CertificatePayload(4, []wire.PresenceReceipt{r})
		if err != nil {
			return nil, err
		}
		if *dst, err = nodetx.SignTx(k, clChain, nodetx.TxCertificate, 4, cip11.Hash{}, p); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func clSubmit(s *nodetx.JobSpec) chainlog.Tx {
	return chainlog.Tx{Submit: &chainlog.Submit{JobID: s.ID(), Submitter: s.Submitter, JobKind: s.Kind, CommitteeSize: s.Runners,
		TimeoutBlocks: chainlog.U64(s.TimeoutBlocks)}}
}

// clBlock builds a valid block at height h (view h, epoch 0) with the
// given presence field and content.
func clBlock(h uint64, pres []byte, seeds []seed.ConsumedSeed, reg []chainlog.RegistryOp, beats []uint32, txs []chainlog.Tx) (*chainlog.Block, error) {
	b := &chainlog.Block{Height: chainlog.U64(h), Round: chainlog.Round{Epoch: 0, View: chainlog.U64(h)}, Registry: reg, Heartbeats: beats, Txs: txs}
	if h > 1 {
		s := seedSign(seed.Round{Epoch: 0, View: h - 1})
		b.ParentBeacon = &chainlog.Beacon{Epoch: 0, View: chainlog.U64(h - 1), Signature: chainlog.Signature(s)}
		f := chainlog.U64(h - 1)
		b.Finalized = &f
	}
	if pres != nil {
		p := chainlog.Bytes(pres)
		b.Presence = &p
	}
	cs, err := seed.ConsumedSeedsV1(seeds).Encode()
	if err != nil {
		return nil, err
	}
	b.ConsumedSeeds = cs
	return b, nil
}

func clVec(name string, b *chainlog.Block, specs, extra [][]byte) (clVector, error) {
	j, err := chainlog.EncodeBlock(b)
	if err != nil {
		return clVector{}, err
	}
	s, x := clHexList(specs), clHexList(extra)
	return clVector{Name: name, Height: seedU64s(uint64(b.Height)), ChainID: seedU64s(clChain), Block: j, Specs: &s, Extra: &x}, nil
}

func clDec(name string, h uint64, txs [][]byte, want string) clVector {
	t := clHexList(txs)
	return clVector{Name: name, Height: seedU64s(h), ChainID: seedU64s(clChain), Txs: &t, Error: want}
}

// clLayout lays b out (generator only).
func clLayout(b *chainlog.Block, specs, extra [][]byte) [][]byte {
	txs, err := blocklayout.EncodeProposal(b, specs, extra, 0)
	if err != nil {
		panic(fmt.Sprintf("generator: %v", err)) // generator only
	}
	return txs
}

func clCat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func clGen() ([]any, error) {
	f, err := clMakeFixture()
	if err != nil {
		return nil, err
	}
	stake, rep := cip11.U128From64(1000), chainlog.U64(1_000_000_000)
	reg := []chainlog.RegistryOp{{Op: chainlog.OpRegister, Address: cip11.Address{9}, Stake: &stake, ReputationX1e9: &rep}}
	genesis, err := clBlock(1, []byte{1, 0}, nil, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	five, err := clBlock(5, []byte{1, 0, 0x05}, []seed.ConsumedSeed{{Round: seed.Round{Epoch: 0, View: 3}, Signature: seedSign(seed.Round{Epoch: 0, View: 3})}},
		reg, []uint32{2}, []chainlog.Tx{clSubmit(f.spec)})
	if err != nil {
		return nil, err
	}
	two, err := clBlock(9, nil, nil, nil, []uint32{0, 3}, []chainlog.Tx{clSubmit(f.spec2), clSubmit(f.spec),
		{ResultSubmit: &chainlog.ResultSubmit{JobID: f.spec.ID(), Runner: cip11.Address{9}}}})
	if err != nil {
		return nil, err
	}
	S, S2, HB, REG, OTHER := f.spec.Encode(), f.spec2.Encode(), f.hb.Bytes(), f.reg.Bytes(), f.other.Bytes()
	CERT, CERT2 := f.cert.Bytes(), f.cert2.Bytes()
	cert, err := f.cert.Certificate()
	if err != nil {
		return nil, err
	}
	withCert := *five
	withCert.Txs = append(slices.Clone(five.Txs), chainlog.Tx{Certificate: cert})
	T := clLayout(five, [][]byte{S}, [][]byte{HB, S}) // [H, B, S, HB]
	H, B := T[0], T[1]
	// a body that carries a header field (height) and one with an output
	hj, err := chainlog.EncodeBlock(&chainlog.Block{Height: 5, Txs: five.Txs, Registry: five.Registry, Heartbeats: five.Heartbeats})
	if err != nil {
		return nil, err
	}
	withOut := &chainlog.Block{Registry: five.Registry, Heartbeats: five.Heartbeats, Txs: five.Txs}
	withOut.Out.StateDigest = cip11.Hash{1}
	oj, err := chainlog.EncodeBlock(withOut)
	if err != nil {
		return nil, err
	}
	bodyJSON := string(B[len(blocklayout.BodyMagic):])
	// the submit of five with another committee size, its spec carried
	diff := *five
	sub := *five.Txs[0].Submit
	sub.CommitteeSize = 3
	diff.Txs = []chainlog.Tx{{Submit: &sub}}
	D := clLayout(&diff, [][]byte{S}, nil)
	// a node transaction whose from address is not its signer's
	forged := bytes.Clone(HB)
	forged[14] ^= 1
	badSpec := bytes.Clone(S)
	badSpec[26], badSpec[27], badSpec[28], badSpec[29] = 0, 0, 0, 0 // runners 0
	// Node transactions the layout refuses (ErrBadTx), each correctly signed
	// unless the defect is the signature itself.
	sigOf := func(tx []byte) wire.RunnerSig { var s wire.RunnerSig; copy(s[:], tx[len(tx)-65:]); return s }
	withSig := func(tx []byte, sig wire.RunnerSig) []byte { return clCat(tx[:len(tx)-65], sig[:]) }
	hbHighS := withSig(HB, highS(sigOf(HB)))
	hbV27 := bytes.Clone(HB)
	hbV27[len(hbV27)-1] += 27
	RP, err := chainlog.EncodeReconfigure(f.reconf)
	if err != nil {
		return nil, err
	}
	REC := f.reconfTx.Bytes()
	jobID := f.spec.ID()
	badPoint := *f.reconf
	badPoint.GroupKey = chainlog.PublicKey{0xc0} // the point at infinity: the layout does not decode points
	bpPayload, err := chainlog.EncodeReconfigure(&badPoint)
	if err != nil {
		return nil, err
	}
	// every registry key, in both ops: the canonical key order is pinned
	paused, del, lastHB := chainlog.Paused, cip11.U128From64(77), chainlog.U64(3)
	allKeys := *genesis
	allKeys.Registry = []chainlog.RegistryOp{
		{Op: chainlog.OpRegister, Address: cip11.Address{7}, Health: &paused, Stake: &stake, DelegatedActive: &del, ReputationX1e9: &rep, LastHeartbeat: &lastHB},
		{Op: chainlog.OpUpdate, Address: cip11.Address{9}, Health: &paused, Stake: &stake, DelegatedActive: &del, ReputationX1e9: &rep, LastHeartbeat: &lastHB},
		{Op: chainlog.OpUpdate, Address: cip11.Address{9}, DelegatedActive: &del},
	}
	withReconf := *five
	withReconf.Txs = append(slices.Clone(five.Txs), chainlog.Tx{Reconfigure: f.reconf})
	rawTxs := func(x ...[]byte) [][]byte { return append([][]byte{H, B, S}, x...) }
	mk := func(name string, b *chainlog.Block, specs, extra [][]byte) clVector {
		v, e := clVec(name, b, specs, extra)
		if e != nil {
			err = e
		}
		return v
	}
	in := []clVector{
		mk("genesis_header_and_body_only", genesis, nil, nil),
		mk("height_5_spec_and_heartbeat_tx", five, [][]byte{S}, [][]byte{HB, S}),
		mk("height_9_two_submits_result_and_register_tx", two, [][]byte{S2, S}, [][]byte{REG, HB}),
		mk("encoder_skips_repeats_headers_and_bodies", five, [][]byte{S, S}, [][]byte{H, B, HB, S, HB}),
		mk("encoder_keeps_unreferenced_spec", genesis, nil, [][]byte{S2}),
		mk("height_5_certificate_and_its_signed_tx", &withCert, [][]byte{S, CERT}, [][]byte{HB}),
		clDec("certificate_without_its_signed_tx", 5, clLayout(&withCert, [][]byte{S}, [][]byte{HB}), "ErrCertificateUnsigned"),
		clDec("certificate_with_another_receipt_signed", 5, clLayout(&withCert, [][]byte{S, CERT2}, nil), "ErrCertificateUnsigned"),
		clDec("spec_missing_and_certificate_unsigned", 5, clLayout(&withCert, nil, [][]byte{HB}), "ErrSpecMissing"),
		mk("genesis_registry_ops_with_every_key", &allKeys, nil, nil),
		mk("height_5_commit_and_reveal_txs", five, [][]byte{S}, [][]byte{f.commit.Bytes(), f.reveal.Bytes()}),
		mk("height_5_reconfigure_and_its_signed_tx", &withReconf, [][]byte{S, REC}, nil),
		mk("height_5_commit_and_reveal_with_output_txs", five, [][]byte{S}, [][]byte{f.commitOut.Bytes(), f.revealOut.Bytes()}),
		mk("height_5_reveal_empty_output_is_64_bytes", five, [][]byte{S}, [][]byte{f.revealEmpty.Bytes()}),
		mk("height_5_reveal_output_4096_bytes", five, [][]byte{S}, [][]byte{f.revealMax.Bytes()}),
		clDec("bad_tx_reveal_output_hash_mismatch", 5, rawTxs(clRawTx(f.key, 4, 8, jobID,
			nodetx.RevealPayload(cip11.Keccak256([]byte("HELLO CIP12")), cip11.Hash{}, []byte("HELLO CIP11")))), "ErrBadTx"),
		clDec("bad_tx_reveal_output_4097_bytes", 5, rawTxs(clRawTx(f.key, 4, 8, jobID,
			nodetx.RevealPayload(cip11.Keccak256(append(bytes.Repeat([]byte{'x'}, nodetx.MaxOutput), 'x')), cip11.Hash{},
				append(bytes.Repeat([]byte{'x'}, nodetx.MaxOutput), 'x')))), "ErrBadTx"),
		clDec("decode_reconfigure_tx_group_key_not_decoded", 5, rawTxs(clRawTx(f.key, 6, 1, cip11.Hash{}, bpPayload)), ""),
		clDec("bad_tx_high_s_signature", 5, rawTxs(hbHighS), "ErrBadTx"),
		clDec("bad_tx_recovery_id_27", 5, rawTxs(hbV27), "ErrBadTx"),
		clDec("bad_tx_heartbeat_with_job_id", 5, rawTxs(clRawTx(f.key, 1, 4, jobID, nil)), "ErrBadTx"),
		clDec("bad_tx_register_with_job_id", 5, rawTxs(clRawTx(f.key, 2, 0, jobID, make([]byte, 16))), "ErrBadTx"),
		clDec("bad_tx_register_payload_15_bytes", 5, rawTxs(clRawTx(f.key, 2, 0, cip11.Hash{}, make([]byte, 15))), "ErrBadTx"),
		clDec("bad_tx_commit_payload_31_bytes", 5, rawTxs(clRawTx(f.key, 3, 5, jobID, make([]byte, 31))), "ErrBadTx"),
		clDec("bad_tx_reveal_payload_65_bytes", 5, rawTxs(clRawTx(f.key, 4, 6, jobID, make([]byte, 65))), "ErrBadTx"),
		clDec("bad_tx_kind_0", 5, rawTxs(clRawTx(f.key, 0, 4, cip11.Hash{}, nil)), "ErrBadTx"),
		clDec("bad_tx_kind_7", 5, rawTxs(clRawTx(f.key, 7, 4, cip11.Hash{}, nil)), "ErrBadTx"),
		clDec("bad_tx_reconfigure_nonce_not_epoch", 5, rawTxs(clRawTx(f.key, 6, 2, cip11.Hash{}, RP)), "ErrBadTx"),
		clDec("bad_tx_reconfigure_with_job_id", 5, rawTxs(clRawTx(f.key, 6, 1, jobID, RP)), "ErrBadTx"),
		clDec("bad_tx_reconfigure_payload_not_canonical", 5, rawTxs(clRawTx(f.key, 6, 1, cip11.Hash{}, bytes.Replace(RP, []byte(`,"activation_height"`), []byte(`, "activation_height"`), 1))), "ErrBadTx"),
		clDec("bad_tx_reconfigure_payload_empty", 5, rawTxs(clRawTx(f.key, 6, 1, cip11.Hash{}, nil)), "ErrBadTx"),
		clDec("decode_raw_submissions_any_order", 5, [][]byte{H, B, HB, S}, ""),
		clDec("decode_spec_repeated", 5, [][]byte{H, B, S, S, HB}, ""),
		clDec("decode_unreferenced_spec", 5, [][]byte{H, B, S, S2}, ""),
		clDec("empty_block", 5, [][]byte{}, "ErrHeaderMissing"),
		clDec("body_first", 5, [][]byte{B, H, S}, "ErrHeaderMissing"),
		clDec("spec_first", 5, [][]byte{S, H, B}, "ErrHeaderMissing"),
		clDec("header_magic_only_prefix_c11", 5, [][]byte{[]byte("C11"), B, S}, "ErrHeaderMissing"),
		clDec("header_truncated", 5, [][]byte{H[:len(H)-1], B, S}, "ErrTruncated"),
		clDec("header_trailing_garbage", 5, [][]byte{clCat(H, []byte{0}), B, S}, "ErrTrailingBytes"),
		clDec("wrong_height", 6, T, "ErrRoundView"),
		clDec("wrong_height_before", 4, T, "ErrRoundView"),
		clDec("header_only", 5, [][]byte{H}, "ErrBodyMissing"),
		clDec("header_twice", 5, [][]byte{H, H, B, S}, "ErrHeaderMisplaced"),
		clDec("header_among_submissions", 5, [][]byte{H, B, S, HB, H}, "ErrHeaderMisplaced"),
		clDec("body_missing_spec_second", 5, [][]byte{H, S, HB}, "ErrBodyMissing"),
		clDec("body_magic_only", 5, [][]byte{H, []byte(blocklayout.BodyMagic), S}, "ErrBodyMalformed"),
		clDec("body_not_json", 5, [][]byte{H, []byte(blocklayout.BodyMagic + "{"), S}, "ErrBodyMalformed"),
		clDec("body_trailing_space", 5, [][]byte{H, clCat(B, []byte(" ")), S}, "ErrBodyMalformed"),
		clDec("body_trailing_garbage", 5, [][]byte{H, clCat(B, []byte("{}")), S}, "ErrBodyMalformed"),
		clDec("body_not_canonical_indented", 5, [][]byte{H, []byte(blocklayout.BodyMagic + strings.Replace(bodyJSON, ",", ", ", 1)), S}, "ErrBodyMalformed"),
		clDec("body_carries_height", 5, [][]byte{H, clCat([]byte(blocklayout.BodyMagic), hj), S}, "ErrBodyMalformed"),
		clDec("body_carries_output", 5, [][]byte{H, clCat([]byte(blocklayout.BodyMagic), oj), S}, "ErrBodyMalformed"),
		clDec("spec_missing", 5, [][]byte{H, B, HB}, "ErrSpecMissing"),
		clDec("spec_of_another_job", 5, [][]byte{H, B, S2, HB}, "ErrSpecMissing"),
		clDec("spec_fields_differ_from_submit", 5, D, "ErrSpecMissing"),
		clDec("bad_tx_garbage", 5, [][]byte{H, B, S, HB, []byte("C11Tgarbage")}, "ErrBadTx"),
		clDec("bad_tx_not_a_submission", 5, [][]byte{H, B, S, {0xde, 0xad, 0xbe, 0xef}}, "ErrBadTx"),
		clDec("bad_tx_empty", 5, [][]byte{H, B, S, {}}, "ErrBadTx"),
		clDec("bad_tx_spec_truncated", 5, [][]byte{H, B, S[:len(S)-1], HB}, "ErrBadTx"),
		clDec("bad_tx_spec_trailing_garbage", 5, [][]byte{H, B, clCat(S, []byte{0}), HB}, "ErrBadTx"),
		clDec("bad_tx_spec_runners_0", 5, [][]byte{H, B, S, badSpec}, "ErrBadTx"),
		clDec("bad_tx_node_tx_truncated", 5, [][]byte{H, B, S, HB[:len(HB)-1]}, "ErrBadTx"),
		clDec("bad_tx_node_tx_forged_from", 5, [][]byte{H, B, S, forged}, "ErrBadTx"),
		clDec("bad_tx_wrong_chain_id", 5, [][]byte{H, B, S, OTHER}, "ErrBadTx"),
		func() clVector {
			v := clDec("bad_tx_decoded_on_another_chain", 5, T, "ErrBadTx")
			v.ChainID = seedU64s(clChain + 1)
			return v
		}(),
	}
	if err != nil {
		return nil, err
	}
	return seedFill(in, func(v *clVector) error {
		out, err := clEval(seedRawJSON(v))
		if err == nil {
			if v.Block != nil && v.Txs == nil {
				t := out["txs"].([]string)
				v.Txs = &t
			}
			if v.Specs != nil { // the decoded block must be the block laid out
				if !jsonEqual(out["block"], v.Block) {
					return fmt.Errorf("vector %s: decoded block %s differs from %s", v.Name, out["block"], v.Block)
				}
			} else {
				v.Block = out["block"].(json.RawMessage)
			}
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

// ---- cometbft_vote_extension (D31, SPEC-NOTES C2) ----

type veVector struct {
	Name         string   `json:"name"`
	PublicShares []string `json:"public_shares"`
	Namespace    string   `json:"namespace"`
	Height       string   `json:"height"`
	Index        uint32   `json:"index"`
	ShareKey     *string  `json:"share_key,omitempty"`
	Extension    *string  `json:"extension,omitempty"`
	Accepted     bool     `json:"accepted,omitempty"`
	Error        string   `json:"error,omitempty"`
}

func veEval(raw json.RawMessage) (map[string]any, error) {
	var v veVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	if v.PublicShares == nil {
		return nil, fmt.Errorf("%w: public_shares is required", ErrMalformedVector)
	}
	ns, err := Unhex(v.Namespace)
	if err != nil {
		return nil, err
	}
	h, err := parseU64(v.Height)
	if err != nil {
		return nil, err
	}
	shares, err := clHexes(v.PublicShares)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	var ext []byte
	switch {
	case v.ShareKey != nil:
		kb, err := Unhex(*v.ShareKey)
		if err != nil {
			return nil, err
		}
		k, err := seed.SecretKeyFromBytes(kb)
		if err != nil {
			return nil, err
		}
		if ext, err = blocklayout.VoteExtension(seed.Share{Index: v.Index, Key: k}, ns, blocklayout.ExtensionRound(0, h)); err != nil {
			return nil, err
		}
		out["extension"] = Hex(ext)
	case v.Extension != nil:
		if ext, err = Unhex(*v.Extension); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: share_key or extension is required", ErrMalformedVector)
	}
	if err := blocklayout.VerifyVoteExtension(shares, ns, blocklayout.ExtensionRound(0, h), v.Index, ext); err != nil {
		return nil, err
	}
	out["accepted"] = true
	return out, nil
}

// veDealing is seed_threshold_recover's dealing of n shares (the same
// ChaCha8 stream), with the share scalars.
type veDealing struct {
	keys   []string // share scalar of index i at i-1
	shares []string // public share of index i at i-1
}

func veDeal(n int) (veDealing, error) {
	t, err := seed.Threshold(n)
	if err != nil {
		return veDealing{}, err
	}
	d, err := seed.DealShares(seedThrSecret(), n, t, rand.NewChaCha8(cip11.Keccak256([]byte(seedThrRandLabel), []byte{byte(n)})))
	if err != nil {
		return veDealing{}, err
	}
	pub, err := d.Public.PublicShares(n)
	if err != nil {
		return veDealing{}, err
	}
	var out veDealing
	for i, s := range d.Shares {
		k := s.Key.Bytes()
		out.keys = append(out.keys, Hex(k[:]))
		out.shares = append(out.shares, Hex(pub[i][:]))
	}
	return out, nil
}

// ext is the extension of index i at height h (generator only).
func (d veDealing) ext(ns []byte, i uint32, e, h uint64) string {
	kb, _ := Unhex(d.keys[i-1])
	k, err := seed.SecretKeyFromBytes(kb)
	if err != nil {
		panic(err) // generator only
	}
	p, err := seed.SignPartial(seed.Share{Index: i, Key: k}, ns, seed.Round{Epoch: e, View: h})
	if err != nil {
		panic(err) // generator only
	}
	return Hex(p.Signature[:])
}

func veGen() ([]any, error) {
	ns := []byte(seedNamespace)
	nsHex := Hex(ns)
	d4, err := veDeal(4)
	if err != nil {
		return nil, err
	}
	d7, err := veDeal(7)
	if err != nil {
		return nil, err
	}
	d1, err := veDeal(1)
	if err != nil {
		return nil, err
	}
	max := ^uint64(0)
	sign := func(name string, d veDealing, i uint32, h uint64, want string) veVector {
		k := d.keys[i-1]
		return veVector{Name: name, PublicShares: d.shares, Namespace: nsHex, Height: seedU64s(h), Index: i, ShareKey: &k, Error: want}
	}
	verify := func(name string, d veDealing, i uint32, h uint64, ext string, want string) veVector {
		return veVector{Name: name, PublicShares: d.shares, Namespace: nsHex, Height: seedU64s(h), Index: i, Extension: &ext, Error: want}
	}
	with := func(v veVector, f func(*veVector)) veVector { f(&v); return v }
	e2 := d4.ext(ns, 2, 0, 7)
	zeros := strings.Repeat("00", 47)
	group := seedThrGroupSig(ns, seed.Round{Epoch: 0, View: 7})
	in := []veVector{
		sign("n4_index_1_height_7", d4, 1, 7, ""),
		sign("n4_index_2_height_7", d4, 2, 7, ""),
		sign("n4_index_3_height_7", d4, 3, 7, ""),
		sign("n4_index_4_height_7", d4, 4, 7, ""),
		sign("n4_index_2_height_1", d4, 2, 1, ""),
		sign("n4_index_3_height_u64_max", d4, 3, max, ""),
		sign("n4_index_1_height_0_no_lower_bound", d4, 1, 0, ""),
		sign("n7_index_5_height_100", d7, 5, 100, ""),
		sign("n1_extension_is_group_signature", d1, 1, 7, ""),
		with(sign("n4_index_1_empty_namespace", d4, 1, 7, ""), func(v *veVector) { v.Namespace = "" }),
		verify("verify_only_n4_index_2_height_7", d4, 2, 7, e2, ""),
		verify("wrong_height", d4, 2, 8, e2, "ErrPartialInvalid"),
		verify("wrong_epoch_round_1_h", d4, 2, 7, d4.ext(ns, 2, 1, 7), "ErrPartialInvalid"),
		verify("partial_of_another_share", d4, 3, 7, e2, "ErrPartialInvalid"),
		verify("group_signature_not_a_partial", d4, 2, 7, group, "ErrPartialInvalid"),
		with(verify("wrong_namespace", d4, 2, 7, e2, "ErrPartialInvalid"), func(v *veVector) { v.Namespace = Hex([]byte("other-chain")) }),
		verify("unknown_index_0", d4, 0, 7, e2, "ErrIndexOutOfRange"),
		verify("unknown_index_n_plus_1", d4, 5, 7, e2, "ErrIndexOutOfRange"),
		verify("unknown_index_before_length", d4, 5, 7, e2[:94], "ErrIndexOutOfRange"),
		verify("length_47", d4, 2, 7, e2[:94], "ErrSeedSignatureLength"),
		verify("length_49", d4, 2, 7, e2+"00", "ErrSeedSignatureLength"),
		verify("length_96_uncompressed", d4, 2, 7, e2+e2, "ErrSeedSignatureLength"),
		verify("empty", d4, 2, 7, "", "ErrSeedSignatureLength"),
		verify("infinity", d4, 2, 7, "c0"+zeros, "ErrSignatureInfinity"),
		verify("not_on_curve", d4, 2, 7, "80"+zeros[2:]+"01", "ErrSignatureNotOnCurve"),
		verify("not_in_subgroup", d4, 2, 7, "80"+zeros, "ErrSignatureNotInSubgroup"),
		with(verify("public_share_95_bytes", d4, 2, 7, e2, "ErrPublicKeyLength"), func(v *veVector) {
			v.PublicShares = append([]string{v.PublicShares[0], v.PublicShares[1][:190]}, v.PublicShares[2:]...)
		}),
		with(verify("public_share_infinity", d4, 2, 7, e2, "ErrPublicKeyInfinity"), func(v *veVector) {
			v.PublicShares = slices.Clone(v.PublicShares)
			v.PublicShares[1] = g2Infinity
		}),
		with(verify("public_share_not_in_subgroup", d4, 2, 7, e2, "ErrPublicKeyNotInSubgroup"), func(v *veVector) {
			v.PublicShares = slices.Clone(v.PublicShares)
			v.PublicShares[1] = g2NotInSubgroup
		}),
		with(sign("sign_index_0", d4, 1, 7, "ErrIndexOutOfRange"), func(v *veVector) { v.Index = 0 }),
		with(sign("sign_share_key_zero", d4, 1, 7, "ErrSecretKey"), func(v *veVector) { z := strings.Repeat("00", 32); v.ShareKey = &z }),
	}
	return seedFill(in, func(v *veVector) error {
		out, err := veEval(seedRawJSON(v))
		if err == nil {
			if e, ok := out["extension"].(string); ok {
				v.Extension = &e
			}
			v.Accepted = true
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

// ---- presence_gossip (D33, SPEC-NOTES C8) ----

type pgVector struct {
	Name         string  `json:"name"`
	Height       *string `json:"height,omitempty"`
	RegistrySize *int64  `json:"registry_size,omitempty"`
	Field        *string `json:"field,omitempty"`
	Message      *string `json:"message,omitempty"`
	Indices      *[]int  `json:"indices,omitempty"`
	Error        string  `json:"error,omitempty"`
}

func pgEval(raw json.RawMessage) (map[string]any, error) {
	var v pgVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	out := map[string]any{}
	var msg []byte
	var err error
	if v.Message != nil {
		if msg, err = Unhex(*v.Message); err != nil {
			return nil, err
		}
	}
	if v.Field != nil { // encode: height and registry_size are inputs
		if v.Height == nil || v.RegistrySize == nil {
			return nil, fmt.Errorf("%w: field needs height and registry_size", ErrMalformedVector)
		}
		h, err := parseU64(*v.Height)
		if err != nil {
			return nil, err
		}
		field, err := Unhex(*v.Field)
		if err != nil {
			return nil, err
		}
		n := *v.RegistrySize
		if n != int64(int(n)) {
			return nil, fmt.Errorf("%w: registry_size %d", ErrMalformedVector, n)
		}
		enc, err := blocklayout.EncodeGossip(h, int(n), field)
		if err != nil {
			return nil, err
		}
		if v.Message != nil && !bytes.Equal(enc, msg) {
			return nil, fmt.Errorf("message differs from the encoding %x", enc) // deliberately not a sentinel
		}
		msg = enc
	} else if v.Message == nil {
		return nil, fmt.Errorf("%w: neither field nor message", ErrMalformedVector)
	}
	h, set, err := blocklayout.DecodeGossip(msg)
	if err != nil {
		return nil, err
	}
	idx := set.Indices()
	if idx == nil {
		idx = []int{}
	}
	out["message"] = Hex(msg)
	out["height"] = seedU64s(h)
	out["registry_size"] = set.RegistrySize()
	out["indices"] = idx
	return out, nil
}

func pgGen() ([]any, error) {
	enc := func(name string, h uint64, n int64, field string, want string) pgVector {
		return pgVector{Name: name, Height: seedStr(seedU64s(h)), RegistrySize: &n, Field: seedStr(field), Error: want}
	}
	dec := func(name, msg, want string) pgVector {
		return pgVector{Name: name, Message: seedStr(msg), Error: want}
	}
	set := func(n int, idx ...int) string {
		s, err := presence.NewSet(n, idx)
		if err != nil {
			panic(err) // generator only
		}
		return Hex(presence.Encode(s))
	}
	sparse := func(n int, idx ...int) string {
		s, err := presence.NewSet(n, idx)
		if err != nil {
			panic(err) // generator only
		}
		b, err := presence.EncodeKind(s, presence.KindSparse)
		if err != nil {
			panic(err) // generator only
		}
		return Hex(b)
	}
	bitmap := func(n int, idx ...int) string {
		s, err := presence.NewSet(n, idx)
		if err != nil {
			panic(err) // generator only
		}
		b, err := presence.EncodeKind(s, presence.KindBitmap)
		if err != nil {
			panic(err) // generator only
		}
		return Hex(b)
	}
	// header of a message at height 42 over n = 10: "C11P" 01 ‖ 42 ‖ 10
	hdr := "43313150" + "01" + "000000000000002a" + "0000000a"
	f10 := bitmap(10, 1, 3, 9) // 0100 0a02: LSB-first bits 1, 3 (byte 0) and 9 (byte 1)
	m10 := hdr + f10
	big := uint64(1) << 40
	in := []pgVector{
		enc("height_42_n10_three_present", 42, 10, f10, ""),
		enc("height_1_empty_registry", 1, 0, set(0), ""),
		enc("n20_bitmap_all_present", 7, 20, set(20, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19), ""),
		enc("n20_none_present", 7, 20, set(20), ""),
		enc("n1000_sparse_two_present", big, 1000, set(1000, 0, 999), ""),
		enc("n10_sparse_kind_carried_verbatim", 42, 10, sparse(10, 1, 3, 9), ""),
		enc("height_u64_max", ^uint64(0), 8, set(8, 7), ""),
		enc("height_0_decodes", 0, 8, set(8, 7), ""),
		enc("registry_size_u32_max_empty_sparse", 3, 4294967295, sparse(4294967295), ""),
		dec("decode_height_42_n10", m10, ""),
		enc("n_mismatch_bitmap_for_20_sent_as_10", 42, 10, set(20, 1, 3), "ErrBitmapLength"),
		enc("bits_past_n_bitmap", 42, 10, bitmap(16, 1, 15), "ErrBitBeyondRegistry"),
		enc("bits_past_n_sparse_index", 42, 10, sparse(11, 1, 10), "ErrIndexBeyondRegistry"),
		enc("sparse_not_ascending", 42, 10, "0101"+"00000003"+"00000002"+"00000003"+"00000001", "ErrSparseNotAscending"),
		enc("field_empty", 42, 10, "", "ErrTruncatedHeader"),
		enc("field_bad_version", 42, 10, "02"+f10[2:], "ErrUnknownVersion"),
		enc("field_bad_kind", 42, 10, "0102"+f10[4:], "ErrUnknownKind"),
		enc("registry_size_negative", 42, -1, f10, "ErrGossipRegistrySize"),
		enc("registry_size_above_u32", 42, 4294967296, f10, "ErrGossipRegistrySize"),
		dec("bad_magic", "43313151"+m10[8:], "ErrGossipMagic"),
		dec("bad_magic_header_tx", "43313148"+m10[8:], "ErrGossipMagic"),
		dec("bad_version_0", "4331315000"+m10[10:], "ErrGossipVersion"),
		dec("bad_version_2", "4331315002"+m10[10:], "ErrGossipVersion"),
		dec("truncated_empty", "", "ErrGossipLength"),
		dec("truncated_in_header", m10[:32], "ErrGossipLength"),
		dec("truncated_header_only", hdr, "ErrTruncatedHeader"),
		dec("truncated_in_field", m10[:len(m10)-2], "ErrBitmapLength"),
		dec("trailing_byte", m10+"00", "ErrBitmapLength"),
		dec("n_mismatch_n_17", hdr[:len(hdr)-2]+"11"+f10, "ErrBitmapLength"),
		dec("n_mismatch_n_8", hdr[:len(hdr)-2]+"08"+f10, "ErrBitmapLength"),
		dec("n_mismatch_n_9_bit_9_set", hdr[:len(hdr)-2]+"09"+f10, "ErrBitBeyondRegistry"),
	}
	return seedFill(in, func(v *pgVector) error {
		out, err := pgEval(seedRawJSON(v))
		if err == nil {
			if v.Message == nil {
				v.Message = seedStr(out["message"].(string))
			}
			if v.Field == nil { // decode: the header's values are outputs
				v.Height = seedStr(out["height"].(string))
				n := int64(out["registry_size"].(int))
				v.RegistrySize = &n
			}
			idx := out["indices"].([]int)
			v.Indices = &idx
		}
		return seedExpect(v.Name, v.Error, err)
	})
}
