package conformance

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/seed"
)

// blockheaderFunctions lists the vector functions owned by package blockheader.
func blockheaderFunctions() []Function {
	return []Function{{
		Name: "block_header", Spec: "§7.2, §9.2, §12.6, §17",
		Description: "The CIP-11 block header on CometBFT (DECISIONS D22, D30–D32; SPEC-NOTES H1–H4): the block's first transaction, \"C11H\" (43313148) followed by one §12.6 deterministic-CBOR map {0: version (1), 1: round {0: epoch, 1: view}, 2: parent_beacon {0: epoch, 1: view, 2: signature (48 bytes)} or null, 3: finalized (u64, 0 = none), 4: presence (PresenceInputV1 bytes, carried verbatim, at most 262144 bytes) or null, 5: consumed_seeds (the ConsumedSeedsV1 array, D11)}. Vectors with header encode it to encoding and check it at height; when they also carry encoding, it must decode back to exactly header. Vectors without header give encoding, which must be decoded strictly (decode→encode reproduces the input) and then checked at height. Check (stateless): version 1; height ≥ 1; round.view = height (D30); a parent beacon iff height > 1, of view height−1 and an epoch not after round.epoch; finalized = height−1; consumed seeds strictly ascending, every round before round. Signatures are not verified. A vector with schedule (the chain's D30 height schedule: activations, strictly ascending u64 decimal strings, epoch e active from activations[e] on; known_through, the last height whose epoch is final) then also checks the header against it (§9.2: R.round equals the expected absolute seed round, D31): round.view = height (ErrRoundView); the schedule valid (ErrInvalidSchedule) and height neither before activations[0] nor after known_through (ErrHeightUnscheduled); round.epoch = epoch_at(height) (ErrRoundEpoch); and a parent beacon, when present, of view height−1 (ErrBeaconRound), height−1 not before activations[0] (ErrHeightUnscheduled) and epoch epoch_at(height−1) (ErrBeaconEpoch).",
		Generate:    bhGen, Eval: bhEval,
	}}
}

// blockheaderSentinels lists package blockheader's sentinels.
func blockheaderSentinels() []Sentinel {
	return []Sentinel{
		{"ErrNotHeader", blockheader.ErrNotHeader},
		{"ErrHeaderTooLarge", blockheader.ErrHeaderTooLarge},
		{"ErrHeaderVersion", blockheader.ErrHeaderVersion},
		{"ErrPresenceTooLong", blockheader.ErrPresenceTooLong},
		{"ErrNilHeader", blockheader.ErrNilHeader},
		{"ErrZeroHeight", blockheader.ErrZeroHeight},
		{"ErrRoundView", blockheader.ErrRoundView},
		{"ErrBeaconMissing", blockheader.ErrBeaconMissing},
		{"ErrBeaconUnexpected", blockheader.ErrBeaconUnexpected},
		{"ErrBeaconRound", blockheader.ErrBeaconRound},
		{"ErrFinalized", blockheader.ErrFinalized},
		{"ErrSeedRound", blockheader.ErrSeedRound},
		{"ErrHeightUnscheduled", blockheader.ErrHeightUnscheduled},
		{"ErrRoundEpoch", blockheader.ErrRoundEpoch},
		{"ErrBeaconEpoch", blockheader.ErrBeaconEpoch},
	}
}

type bhRoundJSON struct {
	Epoch string `json:"epoch"`
	View  string `json:"view"`
}

type bhBeaconJSON struct {
	Epoch     string `json:"epoch"`
	View      string `json:"view"`
	Signature string `json:"signature"`
}

type bhHeaderJSON struct {
	Version       int             `json:"version"`
	Round         bhRoundJSON     `json:"round"`
	ParentBeacon  *bhBeaconJSON   `json:"parent_beacon"`
	Finalized     string          `json:"finalized"`
	Presence      *string         `json:"presence"`
	ConsumedSeeds []seedEntryJSON `json:"consumed_seeds"`
}

// bhScheduleJSON is a block_header vector's optional height schedule
// (seed.HeightSchedule, D30; the shape of advance_round_height's inputs).
type bhScheduleJSON struct {
	Activations  []string `json:"activations"`
	KnownThrough string   `json:"known_through"`
}

type bhVector struct {
	Name     string          `json:"name"`
	Height   string          `json:"height"`
	Schedule *bhScheduleJSON `json:"schedule,omitempty"`
	Header   *bhHeaderJSON   `json:"header,omitempty"`
	Encoding *string         `json:"encoding,omitempty"`
	Error    string          `json:"error,omitempty"`
}

func bhHeaderFromJSON(j *bhHeaderJSON) (*blockheader.Header, error) {
	if j.Version < 0 || j.Version > 255 {
		return nil, fmt.Errorf("%w: version %d", ErrMalformedVector, j.Version)
	}
	if j.ConsumedSeeds == nil {
		return nil, fmt.Errorf("%w: consumed_seeds is not an array", ErrMalformedVector)
	}
	r, err := seedRound(j.Round.Epoch, j.Round.View)
	if err != nil {
		return nil, err
	}
	f, err := parseU64(j.Finalized)
	if err != nil {
		return nil, err
	}
	h := &blockheader.Header{Version: uint8(j.Version), Round: r, Finalized: f, ConsumedSeeds: seed.ConsumedSeedsV1{}}
	if b := j.ParentBeacon; b != nil {
		e, err := seedEntryFromJSON(seedEntryJSON{b.Epoch, b.View, b.Signature})
		if err != nil {
			return nil, err
		}
		h.ParentBeacon = &seed.Beacon{Round: e.Round, Signature: e.Signature}
	}
	if j.Presence != nil {
		if h.Presence, err = Unhex(*j.Presence); err != nil {
			return nil, err
		}
	}
	for _, e := range j.ConsumedSeeds {
		c, err := seedEntryFromJSON(e)
		if err != nil {
			return nil, err
		}
		h.ConsumedSeeds = append(h.ConsumedSeeds, c)
	}
	return h, nil
}

func bhHeaderJSONOf(h *blockheader.Header) *bhHeaderJSON {
	j := &bhHeaderJSON{
		Version:       int(h.Version),
		Round:         bhRoundJSON{seedU64s(h.Round.Epoch), seedU64s(h.Round.View)},
		Finalized:     seedU64s(h.Finalized),
		ConsumedSeeds: seedEntriesJSON(h.ConsumedSeeds),
	}
	if b := h.ParentBeacon; b != nil {
		j.ParentBeacon = &bhBeaconJSON{seedU64s(b.Round.Epoch), seedU64s(b.Round.View), Hex(b.Signature[:])}
	}
	if h.Presence != nil {
		p := Hex(h.Presence)
		j.Presence = &p
	}
	return j
}

// bhScheduleFromJSON parses a vector's schedule (nil: none).
func bhScheduleFromJSON(j *bhScheduleJSON) (*seed.HeightSchedule, error) {
	if j == nil {
		return nil, nil
	}
	if j.Activations == nil {
		return nil, fmt.Errorf("%w: schedule.activations is required", ErrMalformedVector)
	}
	s := &seed.HeightSchedule{Activations: []uint64{}}
	for _, a := range j.Activations {
		x, err := parseU64(a)
		if err != nil {
			return nil, err
		}
		s.Activations = append(s.Activations, x)
	}
	var err error
	if s.KnownThrough, err = parseU64(j.KnownThrough); err != nil {
		return nil, err
	}
	return s, nil
}

// bhCheck is Check at height, then CheckSchedule when the vector has a
// schedule.
func bhCheck(h *blockheader.Header, height uint64, s *seed.HeightSchedule) error {
	if err := blockheader.Check(h, height); err != nil {
		return err
	}
	if s == nil {
		return nil
	}
	return blockheader.CheckSchedule(h, height, *s)
}

func bhEval(raw json.RawMessage) (map[string]any, error) {
	var v bhVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	height, err := parseU64(v.Height)
	if err != nil {
		return nil, err
	}
	sched, err := bhScheduleFromJSON(v.Schedule)
	if err != nil {
		return nil, err
	}
	var enc []byte
	if v.Encoding != nil {
		if enc, err = Unhex(*v.Encoding); err != nil {
			return nil, err
		}
	}
	if v.Header == nil {
		if v.Encoding == nil {
			return nil, fmt.Errorf("%w: neither header nor encoding", ErrMalformedVector)
		}
		h, err := blockheader.Decode(enc)
		if err != nil {
			return nil, err
		}
		if err := bhCheck(h, height, sched); err != nil {
			return nil, err
		}
		return map[string]any{"header": bhHeaderJSONOf(h)}, nil
	}
	h, err := bhHeaderFromJSON(v.Header)
	if err != nil {
		return nil, err
	}
	out, err := blockheader.Encode(h)
	if err != nil {
		return nil, err
	}
	if err := bhCheck(h, height, sched); err != nil {
		return nil, err
	}
	if v.Encoding != nil { // a positive vector: the decoder must agree with it
		dec, err := blockheader.Decode(enc)
		if err != nil {
			return nil, fmt.Errorf("decoding the vector's encoding: %v", err) // deliberately not a sentinel
		}
		return map[string]any{"encoding": Hex(out), "header": bhHeaderJSONOf(dec)}, nil
	}
	return map[string]any{"encoding": Hex(out)}, nil
}

// bhHeader builds a valid header at height (view = height, epoch 0).
func bhHeader(height uint64, presence *string, seeds ...seedEntryJSON) *bhHeaderJSON {
	j := &bhHeaderJSON{Version: 1, Round: bhRoundJSON{"0", seedU64s(height)}, Finalized: seedU64s(height - 1),
		Presence: presence, ConsumedSeeds: append([]seedEntryJSON{}, seeds...)}
	if height > 1 {
		s := seedSign(seed.Round{Epoch: 0, View: height - 1})
		j.ParentBeacon = &bhBeaconJSON{"0", seedU64s(height - 1), Hex(s[:])}
	}
	return j
}

func bhWith(j *bhHeaderJSON, mut func(*bhHeaderJSON)) *bhHeaderJSON {
	c := *j
	if j.ParentBeacon != nil {
		b := *j.ParentBeacon
		c.ParentBeacon = &b
	}
	c.ConsumedSeeds = append([]seedEntryJSON{}, j.ConsumedSeeds...)
	mut(&c)
	return &c
}

func bhGen() ([]any, error) {
	empty := seedStr("0100") // PresenceInputV1: an empty bitmap over an empty registry
	bitmap := seedStr("0100a5")
	genesis := bhHeader(1, empty)
	two := bhHeader(2, bitmap)
	ten := bhHeader(10, seedStr("010100000002000000030000000f"), seedEntry(0, 3), seedEntry(0, 5))
	max := ^uint64(0)
	top := bhWith(bhHeader(2, nil), func(j *bhHeaderJSON) {
		m := seedU64s(max)
		j.Round = bhRoundJSON{m, m}
		j.Finalized = seedU64s(max - 1)
		s := seedSign(seed.Round{Epoch: max, View: max - 1})
		j.ParentBeacon = &bhBeaconJSON{m, seedU64s(max - 1), Hex(s[:])}
	})
	epoch := bhWith(bhHeader(100, empty), func(j *bhHeaderJSON) { j.Round.Epoch = "1" })
	g, err := bhEncodeHex(genesis)
	if err != nil {
		return nil, err
	}
	t, err := bhEncodeHex(ten)
	if err != nil {
		return nil, err
	}
	// g = magic ‖ a6 0001 01a200000101 02f6 0300 04420100 0580
	rep := func(s, old, new string) *string {
		if !strings.Contains(s, old) {
			panic(fmt.Sprintf("generator: %q not in %q", old, s)) // generator only
		}
		return seedStr(strings.Replace(s, old, new, 1))
	}
	magic := "43313148"
	sig5 := ten.ConsumedSeeds[1].SeedSignature
	in := []bhVector{
		{Name: "genesis_height_1", Height: "1", Header: genesis},
		{Name: "height_2_beacon_and_bitmap", Height: "2", Header: two},
		{Name: "height_10_two_consumed_seeds_sparse_presence", Height: "10", Header: ten},
		{Name: "presence_absent_null", Height: "2", Header: bhHeader(2, nil)},
		{Name: "presence_empty_bytes_carried", Height: "2", Header: bhHeader(2, seedStr(""))},
		{Name: "presence_malformed_carried_verbatim", Height: "2", Header: bhHeader(2, seedStr("02ff"))},
		{Name: "epoch_change_beacon_of_previous_epoch", Height: "100", Header: epoch},
		{Name: "u64_max_round", Height: seedU64s(max), Header: top},
		{Name: "version_0", Height: "1", Header: bhWith(genesis, func(j *bhHeaderJSON) { j.Version = 0 }), Error: "ErrHeaderVersion"},
		{Name: "version_2", Height: "1", Header: bhWith(genesis, func(j *bhHeaderJSON) { j.Version = 2 }), Error: "ErrHeaderVersion"},
		{Name: "beacon_signature_47_bytes", Height: "2", Header: bhWith(two, func(j *bhHeaderJSON) {
			j.ParentBeacon.Signature = j.ParentBeacon.Signature[:94]
		}), Error: "ErrByteLength"},
		{Name: "consumed_seeds_unsorted", Height: "10", Header: bhWith(ten, func(j *bhHeaderJSON) {
			j.ConsumedSeeds[0], j.ConsumedSeeds[1] = j.ConsumedSeeds[1], j.ConsumedSeeds[0]
		}), Error: "ErrConsumedSeedsUnsorted"},
		{Name: "consumed_seeds_duplicate_round", Height: "10", Header: bhWith(ten, func(j *bhHeaderJSON) {
			j.ConsumedSeeds[1] = j.ConsumedSeeds[0]
		}), Error: "ErrConsumedSeedsDuplicateRound"},
		{Name: "height_0", Height: "0", Header: bhWith(genesis, func(j *bhHeaderJSON) { j.Round.View = "0" }), Error: "ErrZeroHeight"},
		{Name: "round_view_not_height", Height: "3", Header: two, Error: "ErrRoundView"},
		{Name: "missing_beacon_above_1", Height: "2", Header: bhWith(two, func(j *bhHeaderJSON) { j.ParentBeacon = nil }), Error: "ErrBeaconMissing"},
		{Name: "beacon_at_height_1", Height: "1", Header: bhWith(genesis, func(j *bhHeaderJSON) { j.ParentBeacon = two.ParentBeacon }), Error: "ErrBeaconUnexpected"},
		{Name: "beacon_view_not_parent", Height: "10", Header: bhWith(ten, func(j *bhHeaderJSON) {
			j.ParentBeacon.View = "8"
		}), Error: "ErrBeaconRound"},
		{Name: "beacon_epoch_after_round", Height: "10", Header: bhWith(ten, func(j *bhHeaderJSON) {
			j.ParentBeacon.Epoch = "1"
		}), Error: "ErrBeaconRound"},
		{Name: "finalized_not_h_minus_1", Height: "10", Header: bhWith(ten, func(j *bhHeaderJSON) { j.Finalized = "8" }), Error: "ErrFinalized"},
		{Name: "finalized_h", Height: "10", Header: bhWith(ten, func(j *bhHeaderJSON) { j.Finalized = "10" }), Error: "ErrFinalized"},
		{Name: "finalized_1_at_height_1", Height: "1", Header: bhWith(genesis, func(j *bhHeaderJSON) { j.Finalized = "1" }), Error: "ErrFinalized"},
		{Name: "consumed_seed_of_proposal_round", Height: "10", Header: bhWith(ten, func(j *bhHeaderJSON) {
			j.ConsumedSeeds[1] = seedEntry(0, 10)
		}), Error: "ErrSeedRound"},
		{Name: "decode_not_a_header_magic", Height: "1", Encoding: seedStr("43313154" + g[8:]), Error: "ErrNotHeader"},
		{Name: "decode_empty_input", Height: "1", Encoding: seedStr(""), Error: "ErrNotHeader"},
		{Name: "decode_magic_only", Height: "1", Encoding: seedStr(magic), Error: "ErrTruncated"},
		{Name: "decode_truncated", Height: "1", Encoding: seedStr(g[:len(g)-2]), Error: "ErrTruncated"},
		{Name: "decode_non_canonical_int", Height: "1", Encoding: rep(g, "0300", "031800"), Error: "ErrNonShortestInt"},
		{Name: "decode_non_canonical_map_head", Height: "1", Encoding: rep(g, "a6", "b806"), Error: "ErrNonShortestInt"},
		{Name: "decode_trailing_bytes", Height: "1", Encoding: seedStr(g + "00"), Error: "ErrTrailingBytes"},
		{Name: "decode_two_headers", Height: "1", Encoding: seedStr(g + g[8:]), Error: "ErrTrailingBytes"},
		{Name: "decode_missing_consumed_seeds", Height: "1", Encoding: seedStr(magic + "a5" + strings.TrimSuffix(g, "0580")[10:]), Error: "ErrMissingKey"},
		{Name: "decode_unknown_key_6", Height: "1", Encoding: seedStr(strings.Replace(g, "a6", "a7", 1) + "0600"), Error: "ErrUnknownKey"},
		{Name: "decode_keys_unsorted", Height: "1", Encoding: seedStr(magic + "a6" + "01a200000101" + "0001" + g[26:]), Error: "ErrKeyOrder"},
		{Name: "decode_duplicate_key", Height: "1", Encoding: rep(g, "02f6", "01f6"), Error: "ErrDuplicateKey"},
		{Name: "decode_indefinite_map", Height: "1", Encoding: seedStr(strings.Replace(g, "a6", "bf", 1) + "ff"), Error: "ErrIndefiniteLength"},
		{Name: "decode_tag_on_map", Height: "1", Encoding: rep(g, "a6", "d818a6"), Error: "ErrTag"},
		{Name: "decode_null_consumed_seeds", Height: "1", Encoding: rep(g, "0580", "05f6"), Error: "ErrUnexpectedType"},
		{Name: "decode_text_presence", Height: "1", Encoding: rep(g, "04420100", "04620100"), Error: "ErrUnexpectedType"},
		{Name: "decode_version_above_u8", Height: "1", Encoding: rep(g, "a60001", "a600190100"), Error: "ErrIntRange"},
		{Name: "decode_version_2", Height: "1", Encoding: rep(g, "a60001", "a60002"), Error: "ErrHeaderVersion"},
		{Name: "decode_beacon_signature_49_bytes", Height: "10", Encoding: rep(t, "025830", "025831"+"00"), Error: "ErrByteLength"},
		{Name: "decode_consumed_seeds_unsorted", Height: "10", Encoding: rep(t, "0582", "0583"+bhEntryHex(seedEntry(0, 7))), Error: "ErrConsumedSeedsUnsorted"},
		{Name: "decode_missing_beacon_above_1", Height: "2", Encoding: rep(*rep(g, "01a200000101", "01a200000102"), "0300", "0301"), Error: "ErrBeaconMissing"},
		{Name: "decode_finalized_not_h_minus_1", Height: "10", Encoding: rep(t, "0309", "0308"), Error: "ErrFinalized"},
		{Name: "decode_seed_round_not_before_round", Height: "10", Encoding: rep(t, "0105025830"+sig5, "010a025830"+sig5), Error: "ErrSeedRound"},
	}
	in = append(in, bhScheduleVectors(empty)...)
	return seedFill(in, func(v *bhVector) error {
		out, err := bhEval(seedRawJSON(v))
		if err == nil && v.Header != nil {
			v.Encoding = seedStr(out["encoding"].(string))
		}
		return seedExpect(v.Name, v.Error, err)
	})
}

func bhEncodeHex(j *bhHeaderJSON) (string, error) {
	h, err := bhHeaderFromJSON(j)
	if err != nil {
		return "", err
	}
	b, err := blockheader.Encode(h)
	return Hex(b), err
}

// bhEntryHex is one ConsumedSeedsV1 entry map, for building negatives.
func bhEntryHex(e seedEntryJSON) string {
	c, _ := seedEntryFromJSON(e)
	b, _ := seed.ConsumedSeedsV1{c}.Encode()
	return Hex(b[1:])
}

// bhScheduleVectors are the block_header vectors with a height schedule
// (§9.2, D30, D31; SPEC-NOTES H4): epoch 0 from height 1, epoch 1 from 50,
// epoch 2 from 90, known through 200. Every negative but the schedule's own
// passes the stateless check: only the schedule tells it apart.
func bhScheduleVectors(presence *string) []bhVector {
	acts := []string{"1", "50", "90"}
	sch := &bhScheduleJSON{Activations: acts, KnownThrough: "200"}
	// at is a header at height with round (re, height) and the seed of
	// (be, height−1), signed for that round, as its parent beacon.
	at := func(height, re, be uint64) *bhHeaderJSON {
		return bhWith(bhHeader(height, presence), func(j *bhHeaderJSON) {
			j.Round.Epoch = seedU64s(re)
			if j.ParentBeacon != nil {
				s := seedSign(seed.Round{Epoch: be, View: height - 1})
				j.ParentBeacon.Epoch, j.ParentBeacon.Signature = seedU64s(be), Hex(s[:])
			}
		})
	}
	v := func(name string, height uint64, s *bhScheduleJSON, h *bhHeaderJSON, err string) bhVector {
		return bhVector{Name: name, Height: seedU64s(height), Schedule: s, Header: h, Error: err}
	}
	static := &bhScheduleJSON{Activations: []string{"1"}, KnownThrough: "4611686018427387904"}
	late := &bhScheduleJSON{Activations: []string{"6"}, KnownThrough: "10"}
	return []bhVector{
		v("schedule_genesis_height_1", 1, sch, at(1, 0, 0), ""),
		v("schedule_inside_epoch_0", 10, sch, at(10, 0, 0), ""),
		v("schedule_last_height_before_activation", 49, sch, at(49, 0, 0), ""),
		v("schedule_activation_height_round_next_epoch_beacon_previous", 50, sch, at(50, 1, 0), ""),
		v("schedule_inside_epoch_1", 51, sch, at(51, 1, 1), ""),
		v("schedule_second_activation_height", 90, sch, at(90, 2, 1), ""),
		v("schedule_at_known_through", 200, sch, at(200, 2, 2), ""),
		v("schedule_one_epoch_static_network", 7, static, at(7, 0, 0), ""),
		v("schedule_stale_epoch_beacon_after_activation", 51, sch, at(51, 1, 0), "ErrBeaconEpoch"),
		v("schedule_stale_epoch_beacon_two_epochs_back", 95, sch, at(95, 2, 0), "ErrBeaconEpoch"),
		v("schedule_stale_epoch_beacon_after_second_activation", 95, sch, at(95, 2, 1), "ErrBeaconEpoch"),
		v("schedule_next_epoch_beacon_before_activation", 50, sch, at(50, 1, 1), "ErrBeaconEpoch"),
		v("schedule_round_epoch_too_low_at_activation", 50, sch, at(50, 0, 0), "ErrRoundEpoch"),
		v("schedule_round_epoch_too_low_after_activation", 60, sch, at(60, 0, 0), "ErrRoundEpoch"),
		v("schedule_round_epoch_too_high_before_activation", 49, sch, at(49, 1, 0), "ErrRoundEpoch"),
		v("schedule_round_epoch_beyond_the_schedule", 10, sch, at(10, 3, 0), "ErrRoundEpoch"),
		v("schedule_height_past_known_through", 201, sch, at(201, 2, 2), "ErrHeightUnscheduled"),
		v("schedule_height_before_first_activation", 5, late, at(5, 0, 0), "ErrHeightUnscheduled"),
		v("schedule_parent_height_before_first_activation", 6, late, at(6, 0, 0), "ErrHeightUnscheduled"),
		v("schedule_no_activations", 1, &bhScheduleJSON{Activations: []string{}, KnownThrough: "10"}, at(1, 0, 0), "ErrInvalidSchedule"),
		v("schedule_activations_not_ascending", 10, &bhScheduleJSON{Activations: []string{"1", "50", "50"}, KnownThrough: "200"}, at(10, 0, 0), "ErrInvalidSchedule"),
		v("schedule_known_through_before_last_activation", 10, &bhScheduleJSON{Activations: []string{"1", "50"}, KnownThrough: "49"}, at(10, 0, 0), "ErrInvalidSchedule"),
	}
}
