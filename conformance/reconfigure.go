package conformance

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// reconfigure_check: the rule a block's in-band reconfiguration must meet
// (SPEC-NOTES C11, blockexec.CheckScheduleChange) and its canonical bytes.

func reconfigureFunctions() []Function {
	return []Function{{
		Name: "reconfigure_check", Spec: "§5.3–§5.4",
		Description: "Whether block `height` may carry an in-band reconfiguration (DEVNET, SPEC-NOTES C11, docs/chainlog.md `reconfigure`), given the chain's schedule so far: activations (each epoch's activation height, ascending, the first \"1\"), known_through, the last epoch's set (last_set_size; last_set_peer_pubkeys when the chain has Mode-A peer keys, otherwise null and only the size is compared), overlap_blocks (OVERLAP_BLOCKS), seed_delay (SELECTION_SEED_DELAY_VIEWS) and namespace (hex, the seed namespace). Checks in order: epoch = len(activations); the last activation ≤ height; activation_height ≥ height + max(8, seed_delay + 1); activation_height ≥ last activation + overlap_blocks (every sum exact, never modulo 2^64: seed_delay + 1 does not wrap, and a bound above 2^64 - 1 is met by no activation_height); activation_height ≤ known_through; the set non-empty, ≤ 64, strictly ascending by peer_pubkey, every quic 1–255 bytes and http ≤ 255; its size the last set's ± 1 and, with peer keys, every common member kept (exactly one added or removed); every threshold_pubkey and the group_key a BLS12-381 G2 point (96-byte compressed). Any failure is ErrReconfigure. Outputs when valid: encoding (hex of the canonical bytes: the compact JSON of the reconfigure object in field order, as a chain-log block line writes it; the admin transaction's payload) and chain (hex of keccak256(32 zero bytes ‖ encoding): the state digest's reconfiguration term after a first reconfiguration).",
		Generate:    reconfGen, Eval: reconfEval,
	}}
}

func reconfigureSentinels() []Sentinel {
	return []Sentinel{{"ErrReconfigure", blockexec.ErrReconfigure}}
}

type reconfVector struct {
	Name               string                `json:"name"`
	Activations        []string              `json:"activations"`
	KnownThrough       string                `json:"known_through"`
	LastSetSize        string                `json:"last_set_size"`
	LastSetPeerPubKeys []chainlog.PeerKey    `json:"last_set_peer_pubkeys"`
	OverlapBlocks      string                `json:"overlap_blocks"`
	SeedDelay          string                `json:"seed_delay"`
	Namespace          chainlog.Bytes        `json:"namespace"`
	Height             string                `json:"height"`
	Reconfigure        *chainlog.Reconfigure `json:"reconfigure"`
	Encoding           string                `json:"encoding,omitempty"`
	Chain              string                `json:"chain,omitempty"`
	Error              string                `json:"error,omitempty"`
}

// reconfKey is a deterministic G2 public key (vector generation only).
func reconfKey(label string, i int) chainlog.PublicKey {
	return seed.DeriveSecretKey([]byte(fmt.Sprintf("cip11-vectors/reconfigure/%s/%d", label, i))).PublicKey()
}

func reconfPeer(i int) chainlog.PeerKey {
	return chainlog.PeerKey(cip11.Keccak256([]byte("cip11-vectors/reconfigure/peer"), []byte{byte(i)}))
}

// reconfSet is the set of pool members idx, ascending by peer key.
func reconfSet(idx ...int) []chainlog.SetMember {
	var out []chainlog.SetMember
	for _, i := range idx {
		out = append(out, chainlog.SetMember{PeerPubKey: reconfPeer(i), ThresholdPubKey: reconfKey("share", i),
			ConsensusPubKey: chainlog.PeerKey(cip11.Keccak256([]byte("cip11-vectors/reconfigure/vote"), []byte{byte(i)})),
			QUIC:            fmt.Sprintf("127.0.0.1:%d", 26601+10*i), HTTP: fmt.Sprintf("127.0.0.1:%d", 26602+10*i)})
	}
	slices.SortFunc(out, func(a, b chainlog.SetMember) int { return bytes.Compare(a.PeerPubKey[:], b.PeerPubKey[:]) })
	return out
}

func reconfPeers(idx ...int) []chainlog.PeerKey {
	var out []chainlog.PeerKey
	for _, m := range reconfSet(idx...) {
		out = append(out, m.PeerPubKey)
	}
	return out
}

func reconfGen() ([]any, error) {
	ns := chainlog.Bytes("cip11-network-7011")
	r := func(epoch, act uint64, members ...int) *chainlog.Reconfigure {
		return &chainlog.Reconfigure{Epoch: chainlog.U64(epoch), Activation: chainlog.U64(act), GroupKey: reconfKey("group", int(epoch)), Set: reconfSet(members...)}
	}
	base := func(name string, rc *chainlog.Reconfigure, mut func(*reconfVector)) reconfVector {
		v := reconfVector{Name: name, Activations: []string{"1"}, KnownThrough: "4611686018427387904", LastSetSize: "4",
			LastSetPeerPubKeys: reconfPeers(0, 1, 2, 3), OverlapBlocks: "15", SeedDelay: "3", Namespace: ns, Height: "18", Reconfigure: rc}
		if mut != nil {
			mut(&v)
		}
		return v
	}
	badKey := r(1, 30, 0, 1, 2, 3, 4)
	for i := range badKey.GroupKey { // the infinity flag with a non-zero rest: no point
		badKey.GroupKey[i] = 0xff
	}
	badShare := r(1, 30, 0, 1, 2, 3, 4)
	badShare.Set[2].ThresholdPubKey = chainlog.PublicKey{}
	unsorted := r(1, 30, 0, 1, 2, 3, 4)
	unsorted.Set[0], unsorted.Set[1] = unsorted.Set[1], unsorted.Set[0]
	noQUIC := r(1, 30, 0, 1, 2, 3, 4)
	noQUIC.Set[3].QUIC = ""
	const maxU64 = ^uint64(0)
	u64Max := seedU64s(maxU64)
	g2 := func(h string) chainlog.PublicKey { // a 96-byte compressed G2 encoding (generator only)
		b, err := Unhex(h)
		if err != nil || len(b) != 96 {
			panic(fmt.Sprintf("generator: G2 bytes %s", h))
		}
		return chainlog.PublicKey(b)
	}
	infinity := g2("c0" + strings.Repeat("00", 95))
	notInSubgroup := g2("80" + strings.Repeat("00", 94) + "02") // x = 2: on the curve, outside G2 (seed_verify)
	keyMut := func(f func(*chainlog.Reconfigure)) *chainlog.Reconfigure {
		rc := r(1, 30, 0, 1, 2, 3, 4)
		f(rc)
		return rc
	}
	escaped := keyMut(func(rc *chainlog.Reconfigure) {
		rc.Set[0].QUIC = "q\"\\\b\f\n\r\t\x01\x1f\x7f</>&\u2028\u2029é\U0001F600:1"
		rc.Set[1].HTTP = ""
	})
	second := func(v *reconfVector) {
		v.Activations, v.LastSetSize, v.LastSetPeerPubKeys, v.Height = []string{"1", "30"}, "5", reconfPeers(0, 1, 2, 3, 4), "40"
	}
	in := []reconfVector{
		base("add_one_validator", r(1, 30, 0, 1, 2, 3, 4), nil),
		base("add_at_the_least_lead", r(1, 26, 0, 1, 2, 3, 4), nil),
		base("add_without_peer_keys_size_only", r(1, 30, 0, 1, 2, 3, 5), func(v *reconfVector) { v.LastSetPeerPubKeys = nil }),
		base("remove_after_the_overlap", r(2, 52, 1, 2, 3, 4), second),
		base("lead_from_a_larger_seed_delay", r(1, 30, 0, 1, 2, 3, 4), func(v *reconfVector) { v.SeedDelay = "11"; v.Height = "18" }),
		base("activation_u64_max_at_the_least_lead", r(1, maxU64, 0, 1, 2, 3, 4), func(v *reconfVector) { v.Height, v.KnownThrough = seedU64s(maxU64-8), u64Max }),
		base("addresses_escaped_in_json", escaped, nil),
		base("quic_255_bytes", keyMut(func(rc *chainlog.Reconfigure) { rc.Set[2].QUIC = strings.Repeat("q", 255) }), nil),
		base("wrong_epoch", r(2, 30, 0, 1, 2, 3, 4), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("lead_one_short", r(1, 25, 0, 1, 2, 3, 4), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("lead_short_of_seed_delay_plus_one", r(1, 30, 0, 1, 2, 3, 4), func(v *reconfVector) { v.SeedDelay = "12"; v.Error = "ErrReconfigure" }),
		base("previous_still_pending", r(2, 60, 1, 2, 3, 4), func(v *reconfVector) { second(v); v.Height = "29"; v.Error = "ErrReconfigure" }),
		base("inside_the_previous_overlap", r(2, 44, 1, 2, 3, 4), func(v *reconfVector) { second(v); v.Height = "31"; v.Error = "ErrReconfigure" }),
		base("after_known_through", r(1, 30, 0, 1, 2, 3, 4), func(v *reconfVector) { v.KnownThrough = "29"; v.Error = "ErrReconfigure" }),
		base("two_added", r(1, 30, 0, 1, 2, 3, 4, 5), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("same_size_one_swapped", r(1, 30, 0, 1, 2, 4), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("added_but_one_replaced", r(1, 30, 0, 1, 2, 4, 5), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("group_key_not_a_point", badKey, func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("share_not_a_point", badShare, func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("set_not_ascending", unsorted, func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("member_without_quic", noQUIC, func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("not_a_height_schedule", r(0, 30, 0, 1, 2, 3, 4), func(v *reconfVector) { v.Activations = []string{}; v.Error = "ErrReconfigure" }),
		base("group_key_infinity", keyMut(func(rc *chainlog.Reconfigure) { rc.GroupKey = infinity }), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("group_key_not_in_subgroup", keyMut(func(rc *chainlog.Reconfigure) { rc.GroupKey = notInSubgroup }), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("share_infinity", keyMut(func(rc *chainlog.Reconfigure) { rc.Set[4].ThresholdPubKey = infinity }), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("share_not_in_subgroup", keyMut(func(rc *chainlog.Reconfigure) { rc.Set[1].ThresholdPubKey = notInSubgroup }), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		base("quic_256_bytes_in_128_characters", keyMut(func(rc *chainlog.Reconfigure) { rc.Set[2].QUIC = strings.Repeat("é", 128) }), func(v *reconfVector) { v.Error = "ErrReconfigure" }),
		// No bound wraps (the sums are exact; one past 2^64−1 meets no activation):
		base("seed_delay_u64_max_lead_does_not_wrap", r(1, 30, 0, 1, 2, 3, 4), func(v *reconfVector) { v.SeedDelay = u64Max; v.Error = "ErrReconfigure" }),
		base("seed_delay_u64_max_activation_u64_max", r(1, maxU64, 0, 1, 2, 3, 4), func(v *reconfVector) {
			v.SeedDelay, v.KnownThrough, v.Error = u64Max, u64Max, "ErrReconfigure"
		}),
		base("height_plus_lead_past_u64_max", r(1, maxU64, 0, 1, 2, 3, 4), func(v *reconfVector) {
			v.Height, v.KnownThrough, v.Error = seedU64s(maxU64-5), u64Max, "ErrReconfigure"
		}),
		base("last_activation_plus_overlap_past_u64_max", r(1, 30, 0, 1, 2, 3, 4), func(v *reconfVector) { v.OverlapBlocks = u64Max; v.Error = "ErrReconfigure" }),
	}
	return seedFill(in, func(v *reconfVector) error {
		out, err := reconfEval(seedRawJSON(v))
		if v.Error != "" {
			return seedExpect(v.Name, v.Error, err)
		}
		if err != nil {
			return fmt.Errorf("vector %s: %w", v.Name, err)
		}
		v.Encoding, v.Chain = out["encoding"].(string), out["chain"].(string)
		return nil
	})
}

func reconfEval(raw json.RawMessage) (map[string]any, error) {
	var v reconfVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	if v.Activations == nil || v.Reconfigure == nil {
		return nil, fmt.Errorf("%w: activations and reconfigure are required", ErrMalformedVector)
	}
	h := chainlog.Header{Params: cip11.DefaultParams()}
	for _, a := range v.Activations {
		x, err := parseU64(a)
		if err != nil {
			return nil, err
		}
		h.Schedule.Activations = append(h.Schedule.Activations, chainlog.U64(x))
	}
	var known, size, height uint64
	for _, f := range []struct {
		s   string
		dst *uint64
	}{{v.KnownThrough, &known}, {v.LastSetSize, &size}, {v.OverlapBlocks, &h.Params.OverlapBlocks},
		{v.SeedDelay, &h.Params.SelectionSeedDelayViews}, {v.Height, &height}} {
		x, err := parseU64(f.s)
		if err != nil {
			return nil, err
		}
		*f.dst = x
	}
	if size > 64 {
		return nil, fmt.Errorf("%w: last_set_size %d", ErrMalformedVector, size)
	}
	h.Schedule.KnownThrough = chainlog.U64(known)
	last := chainlog.ValidatorSet{Participants: uint32(size)}
	if v.LastSetPeerPubKeys != nil {
		id := chainlog.U64(7011)
		h.ReceiptChainID = &id
		last.PeerPubKeys = v.LastSetPeerPubKeys
		if len(last.PeerPubKeys) != int(last.Participants) {
			return nil, fmt.Errorf("%w: %d peer keys for a set of %d", ErrMalformedVector, len(last.PeerPubKeys), last.Participants)
		}
	}
	h.Validators = []chainlog.ValidatorSet{last}
	h.Namespace = v.Namespace
	if err := blockexec.CheckScheduleChange(h, height, v.Reconfigure); err != nil {
		return nil, err
	}
	enc, err := chainlog.EncodeReconfigure(v.Reconfigure)
	if err != nil {
		return nil, err
	}
	c := blockexec.ReconfigureChain(cip11.Hash{}, v.Reconfigure)
	return map[string]any{"encoding": hex.EncodeToString(enc), "chain": hex.EncodeToString(c[:])}, nil
}
