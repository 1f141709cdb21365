package conformance

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/textform"
	"github.com/cip11/cip11/selection"
	"github.com/cip11/cip11/selection/engine"
)

func selectionSentinels() []Sentinel {
	return []Sentinel{
		{"ErrZeroNormalizer", selection.ErrZeroNormalizer},
		{"ErrUnknownBranch", selection.ErrUnknownBranch},
		{"ErrPendingVersion", engine.ErrPendingVersion},
		{"ErrPendingStateHeight", engine.ErrPendingStateHeight},
		{"ErrPendingCommitteeSize", engine.ErrPendingCommitteeSize},
	}
}

func selectionFunctions() []Function {
	return []Function{
		{Name: "base_weight", Spec: "§9.3",
			Description: "CIP-2 v3 base weight at Q1e6 with integer isqrt; u128 result saturates at 2^128-1 (DECISIONS D3).",
			Generate:    genBaseWeight, Eval: evalBaseWeight},
		{Name: "weighted_draw", Spec: "§9.2",
			Description: "weighted_draw steps 1-7: weights in pool order (u128 decimal strings), fixed seed, global iteration i; index is null when the pool is empty or its total is 0.",
			Generate:    genWeightedDraw, Eval: evalWeightedDraw},
		{Name: "committee_draw", Spec: "§9.2, §9.3",
			Description: "The committee loop: branch present_first | full_set | mode_a over eligible (in eligible order) with one fixed seed, global i, present-first pools, swap_remove, MRU multiplier once at global i == 0 (saturating).",
			Generate:    genCommitteeDraw, Eval: evalCommitteeDraw},
		{Name: "committee_draw_accumulated", Spec: "§9.2",
			Description: accumulatedDescription,
			Generate:    genAccumulated, Eval: evalAccumulated},
		{Name: "pending_selection", Spec: "§9.2",
			Description: "PendingSelectionV1 in the deterministic CBOR profile (map keys 0-10) and its two storage keys. Negative vectors give cbor (hex) and the decode error.",
			Generate:    genPending, Eval: evalPending},
	}
}

// ---- base_weight

type baseWeightVector struct {
	Name                 string  `json:"name"`
	EffectiveStake       string  `json:"effective_stake"`
	ReputationX1e9       string  `json:"reputation_x1e9"`
	ReputationNormalizer string  `json:"reputation_normalizer"`
	WMinFloorX1e6        string  `json:"w_min_floor_x1e6"`
	BaseWeight           *string `json:"base_weight,omitempty"`
	Error                string  `json:"error,omitempty"`
}

func genBaseWeight() ([]any, error) {
	max := cip11.MaxU128().String()
	half := cip11.U128{Hi: 1 << 63}.Sub(cip11.U128From64(1)).String() // 2^127-1
	cases := []struct{ name, stake, rep, norm, floor string }{
		{"factor_one", "1000", "1000000000", "1", "100000"},
		{"factor_half", "1000", "250000000", "1", "100000"},
		{"floor_applies", "1000", "100000", "1", "100000"},
		{"zero_reputation_floor", "1000", "0", "1", "100000"},
		{"zero_floor_zero_reputation", "1000", "0", "1", "0"},
		{"isqrt_truncates", "1000000", "2000000000", "1", "100000"},
		{"normalizer_100", "1000", "100000000000", "100", "100000"},
		{"division_truncates", "7", "250000000", "1", "100000"},
		{"zero_stake", "0", "1000000000", "1", "100000"},
		{"wei_scale_stake", "5000000000000000000000", "810000000", "1", "100000"},
		{"max_stake_factor_one", max, "1000000000", "1", "100000"},
		{"just_below_saturation", half, "4000000000", "1", "100000"},
		{"saturates_at_u128_max", cip11.U128{Hi: 1 << 63}.String(), "4000000000", "1", "100000"},
		{"max_reputation", "1", "18446744073709551615", "1", "0"},
		{"max_everything", max, "18446744073709551615", "1", "18446744073709551615"},
	}
	var out []any
	for _, c := range cases {
		v := baseWeightVector{Name: c.name, EffectiveStake: c.stake, ReputationX1e9: c.rep, ReputationNormalizer: c.norm, WMinFloorX1e6: c.floor}
		w, err := baseWeightOf(v)
		if err != nil {
			return nil, err
		}
		s := w.String()
		v.BaseWeight = &s
		out = append(out, v)
	}
	out = append(out, baseWeightVector{Name: "zero_normalizer", EffectiveStake: "1000", ReputationX1e9: "1000000000",
		ReputationNormalizer: "0", WMinFloorX1e6: "100000", Error: "ErrZeroNormalizer"})
	return out, nil
}

func baseWeightOf(v baseWeightVector) (cip11.U128, error) {
	stake, err := cip11.ParseU128(v.EffectiveStake)
	if err != nil {
		return cip11.U128{}, err
	}
	var nums [3]uint64
	for i, s := range []string{v.ReputationX1e9, v.ReputationNormalizer, v.WMinFloorX1e6} {
		if nums[i], err = parseU64(s); err != nil {
			return cip11.U128{}, err
		}
	}
	return selection.BaseWeight(stake, nums[0], nums[1], nums[2])
}

func evalBaseWeight(raw json.RawMessage) (map[string]any, error) {
	var v baseWeightVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	w, err := baseWeightOf(v)
	if err != nil {
		return nil, err
	}
	return map[string]any{"base_weight": w.String()}, nil
}

// ---- weighted_draw

type weightedDrawVector struct {
	Name    string   `json:"name"`
	Weights []string `json:"weights"`
	Seed    string   `json:"seed"`
	I       uint64   `json:"i"`
	Index   *int     `json:"index"`
}

func genWeightedDraw() ([]any, error) {
	h := func(s string) string { return cip11.Keccak256([]byte(s)).String() }
	cases := []struct {
		name    string
		weights []string
		seed    string
		i       uint64
	}{
		{"empty_pool", nil, h("a"), 0},
		{"zero_total", []string{"0", "0", "0"}, h("a"), 0},
		{"single", []string{"5"}, h("a"), 0},
		{"zero_weights_skipped", []string{"0", "0", "9", "0"}, h("b"), 3},
		{"three_i0", []string{"1000", "200", "1500"}, h("c"), 0},
		{"three_i1", []string{"1000", "200", "1500"}, h("c"), 1},
		{"three_i2", []string{"1000", "200", "1500"}, h("c"), 2},
		{"zero_seed_i0", []string{"1000", "200", "1500"}, cip11.Hash{}.String(), 0},
		{"iteration_le8_high", []string{"1", "1", "1", "1", "1", "1", "1"}, h("d"), 1 << 40},
		{"uniform_ten", []string{"1", "1", "1", "1", "1", "1", "1", "1", "1", "1"}, h("e"), 4},
		{"total_exactly_2_64", []string{"9223372036854775808", "9223372036854775808"}, h("f"), 0},
		{"d19_first_entry_wins_above_2_64", []string{"18446744073709551616", "340282366920938463463374607431768211455"}, h("g"), 0},
		{"d19_u64_ticket_never_reaches_second", []string{"18446744073709551616", "18446744073709551616"}, h("h"), 9},
		{"saturating_total", []string{"340282366920938463463374607431768211455", "340282366920938463463374607431768211455"}, h("i"), 0},
		{"wei_stakes", []string{"1000000000000000000000", "2000000000000000000000", "500000000000000000000"}, h("j"), 0},
	}
	var out []any
	for _, c := range cases {
		v := weightedDrawVector{Name: c.name, Weights: c.weights, Seed: c.seed, I: c.i}
		if v.Weights == nil {
			v.Weights = []string{}
		}
		got, err := evalWeightedDraw(mustJSON(v))
		if err != nil {
			return nil, err
		}
		v.Index = got["index"].(*int)
		out = append(out, v)
	}
	return out, nil
}

func evalWeightedDraw(raw json.RawMessage) (map[string]any, error) {
	var v weightedDrawVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	weights, err := parseU128s(v.Weights)
	if err != nil {
		return nil, err
	}
	seed, err := parseHash(v.Seed)
	if err != nil {
		return nil, err
	}
	var idx *int
	if j, ok := selection.WeightedDraw(weights, seed, v.I); ok {
		idx = &j
	}
	return map[string]any{"index": idx}, nil
}

// ---- committee_draw

type eligibleJSON struct {
	Address    string `json:"address"`
	BaseWeight string `json:"base_weight"`
	Present    bool   `json:"present"`
}

type committeeVector struct {
	Name          string         `json:"name"`
	Branch        string         `json:"branch"`
	Eligible      []eligibleJSON `json:"eligible"`
	Seed          string         `json:"seed"`
	CommitteeSize uint32         `json:"committee_size"`
	MRUAddress    *string        `json:"mru_address"`
	MRUMultiplier string         `json:"mru_multiplier"`
	Selected      *[]string      `json:"selected,omitempty"`
	Error         string         `json:"error,omitempty"`
}

func committeeOf(v committeeVector) ([]cip11.Address, error) {
	branch, err := selection.ParseBranch(v.Branch)
	if err != nil {
		return nil, err
	}
	el := make([]selection.Eligible, len(v.Eligible))
	for i, e := range v.Eligible {
		if el[i].Address, err = parseAddress(e.Address); err != nil {
			return nil, err
		}
		if el[i].BaseWeight, err = cip11.ParseU128(e.BaseWeight); err != nil {
			return nil, err
		}
		el[i].Present = e.Present
	}
	seed, err := parseHash(v.Seed)
	if err != nil {
		return nil, err
	}
	mult, err := parseU64(v.MRUMultiplier) // parsed even when unused: every input is strict
	if err != nil {
		return nil, err
	}
	var mru *selection.MRU
	if v.MRUAddress != nil {
		a, err := parseAddress(*v.MRUAddress)
		if err != nil {
			return nil, err
		}
		mru = &selection.MRU{Address: a, Multiplier: mult}
	}
	return selection.NewPools(branch, el).Draw(seed, v.CommitteeSize, mru), nil
}

func evalCommitteeDraw(raw json.RawMessage) (map[string]any, error) {
	var v committeeVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	sel, err := committeeOf(v)
	if err != nil {
		return nil, err
	}
	return map[string]any{"selected": addrStrings(sel)}, nil
}

func addrStrings(as []cip11.Address) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

// pinEligible is the §9.2 pin-test population: addresses not in weight
// order, distinct weights, mixed presence.
func pinEligible() []eligibleJSON {
	mk := func(b byte, w string, p bool) eligibleJSON {
		var a cip11.Address
		for i := range a {
			a[i] = b
		}
		return eligibleJSON{a.String(), w, p}
	}
	return []eligibleJSON{
		mk(0x11, "1000", false), mk(0x22, "200", true), mk(0x33, "1500", false),
		mk(0x44, "700", true), mk(0x55, "0", false), mk(0x66, "3000", false),
	}
}

func genCommitteeDraw() ([]any, error) {
	seed := cip11.Keccak256([]byte("cip11/committee_draw")).String()
	pin := pinEligible()
	allAbsent := make([]eligibleJSON, len(pin))
	for i, e := range pin {
		e.Present = false
		allAbsent[i] = e
	}
	mru := func(i int) *string { s := pin[i].Address; return &s }
	outsider := cip11.Address{0x99}.String()
	cases := []committeeVector{
		{Name: "present_first_m1", Branch: "present_first", CommitteeSize: 1},
		{Name: "present_first_m3_crosses_to_fallback", Branch: "present_first", CommitteeSize: 3},
		{Name: "present_first_m6_all", Branch: "present_first", CommitteeSize: 6},
		{Name: "present_first_m10_underfill_stops_at_zero_weight", Branch: "present_first", CommitteeSize: 10},
		{Name: "present_first_no_presence_is_full_draw", Branch: "present_first", CommitteeSize: 4, Eligible: allAbsent},
		{Name: "full_set_m3_ignores_presence", Branch: "full_set", CommitteeSize: 3},
		{Name: "mode_a_m3_present_only", Branch: "mode_a", CommitteeSize: 3},
		{Name: "mode_a_nobody_present_underfills", Branch: "mode_a", CommitteeSize: 2, Eligible: allAbsent},
		{Name: "mru_in_active_pool", Branch: "present_first", CommitteeSize: 2, MRUAddress: mru(3), MRUMultiplier: "4"},
		{Name: "mru_in_fallback_not_active_at_i0", Branch: "present_first", CommitteeSize: 3, MRUAddress: mru(5), MRUMultiplier: "4"},
		{Name: "mru_full_set", Branch: "full_set", CommitteeSize: 2, MRUAddress: mru(2), MRUMultiplier: "1000000"},
		{Name: "mru_saturating_mul", Branch: "full_set", CommitteeSize: 1, MRUAddress: mru(5), MRUMultiplier: "18446744073709551615"},
		{Name: "mru_not_eligible", Branch: "present_first", CommitteeSize: 1, MRUAddress: &outsider, MRUMultiplier: "4"},
		{Name: "committee_size_zero", Branch: "present_first", CommitteeSize: 0},
		{Name: "empty_eligible", Branch: "present_first", CommitteeSize: 3, Eligible: []eligibleJSON{}},
	}
	var out []any
	for _, c := range cases {
		if c.Eligible == nil {
			c.Eligible = pin
		}
		c.Seed = seed
		if c.MRUMultiplier == "" {
			c.MRUMultiplier = "4"
		}
		sel, err := committeeOf(c)
		if err != nil {
			return nil, err
		}
		names := addrStrings(sel)
		c.Selected = &names
		out = append(out, c)
	}
	bad := committeeVector{Name: "unknown_branch", Branch: "present_last", Eligible: pin, Seed: seed, CommitteeSize: 1, MRUMultiplier: "4", Error: "ErrUnknownBranch"}
	return append(out, bad), nil
}

// ---- committee_draw_accumulated

const accumulatedDescription = "Accumulated committee draws. For k in 0..count-1: r = keccak256(\"cip11/accumulated/committee_draw/v1\" || k_be8); " +
	"n = 1 + r[0] % 48 eligible runners; m = r[1] % 9; branch = [present_first, full_set, mode_a][r[2] % 3]; seed = keccak256(r); " +
	"MRU iff r[3] odd: address of eligible[r[4] % n], multiplier = 1 + r[5] % 8. Eligible e in 0..n-1: x = keccak256(r || e_be4); " +
	"address = x[0..20]; present = x[20] & 1; weight by x[21] % 4: 0 -> 0, 1 -> u16_be(x[22..24]), 2 -> u64_be(x[24..32]), 3 -> u128_be(x[16..32]). " +
	"acc starts as 32 zero bytes; after each case acc = keccak256(acc || k_be8 || len(selected)_be4 || selected addresses). digest = final acc."

type accumulatedVector struct {
	Name   string `json:"name"`
	Count  int    `json:"count"`
	Digest string `json:"digest"`
}

// AccumulatedCommitteeDigest computes the accumulated committee-draw digest
// over count derived cases (see the vector description).
func AccumulatedCommitteeDigest(count int) cip11.Hash {
	var acc cip11.Hash
	var kb [8]byte
	for k := 0; k < count; k++ {
		binary.BigEndian.PutUint64(kb[:], uint64(k))
		r := cip11.Keccak256([]byte("cip11/accumulated/committee_draw/v1"), kb[:])
		n := 1 + int(r[0])%48
		el := make([]selection.Eligible, n)
		var eb [4]byte
		for e := range el {
			binary.BigEndian.PutUint32(eb[:], uint32(e))
			x := cip11.Keccak256(r[:], eb[:])
			copy(el[e].Address[:], x[:20])
			el[e].Present = x[20]&1 == 1
			switch x[21] % 4 {
			case 1:
				el[e].BaseWeight = cip11.U128From64(uint64(binary.BigEndian.Uint16(x[22:24])))
			case 2:
				el[e].BaseWeight = cip11.U128From64(binary.BigEndian.Uint64(x[24:32]))
			case 3:
				el[e].BaseWeight = cip11.U128{Hi: binary.BigEndian.Uint64(x[16:24]), Lo: binary.BigEndian.Uint64(x[24:32])}
			}
		}
		var mru *selection.MRU
		if r[3]&1 == 1 {
			mru = &selection.MRU{Address: el[int(r[4])%n].Address, Multiplier: 1 + uint64(r[5]%8)}
		}
		sel := selection.NewPools(selection.Branch(r[2]%3), el).Draw(cip11.Keccak256(r[:]), uint32(r[1]%9), mru)
		var lb [4]byte
		binary.BigEndian.PutUint32(lb[:], uint32(len(sel)))
		parts := [][]byte{acc[:], kb[:], lb[:]}
		for i := range sel {
			parts = append(parts, sel[i][:])
		}
		acc = cip11.Keccak256(parts...)
	}
	return acc
}

func genAccumulated() ([]any, error) {
	var out []any
	for _, c := range []struct {
		name  string
		count int
	}{{"short_1000", 1000}, {"full_10000", 10000}} {
		out = append(out, accumulatedVector{c.name, c.count, AccumulatedCommitteeDigest(c.count).String()})
	}
	return out, nil
}

func evalAccumulated(raw json.RawMessage) (map[string]any, error) {
	var v accumulatedVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	if v.Count < 0 || v.Count > 1_000_000 {
		return nil, fmt.Errorf("%w: count %d", ErrMalformedVector, v.Count)
	}
	return map[string]any{"digest": AccumulatedCommitteeDigest(v.Count).String()}, nil
}

// ---- pending_selection

type pendingRecordJSON struct {
	Version                uint8  `json:"version"`
	JobID                  string `json:"job_id"`
	SubmittedAt            string `json:"submitted_at"`
	SelectionStateHeight   string `json:"selection_state_height"`
	CommitteeSize          uint32 `json:"committee_size"`
	SubmissionEpoch        string `json:"submission_epoch"`
	SubmissionView         string `json:"submission_view"`
	SeedEpoch              string `json:"seed_epoch"`
	SeedView               string `json:"seed_view"`
	SeedDelayViews         string `json:"seed_delay_views"`
	CandidatesSnapshotRoot string `json:"candidates_snapshot_root"`
}

type pendingVector struct {
	Name                    string             `json:"name"`
	Record                  *pendingRecordJSON `json:"record,omitempty"`
	CBOR                    string             `json:"cbor,omitempty"`
	PendingByJobKey         string             `json:"pending_by_job_key,omitempty"`
	PendingDueRoundIndexKey string             `json:"pending_due_round_index_key,omitempty"`
	Error                   string             `json:"error,omitempty"`
}

func recordJSON(r engine.PendingSelectionV1) *pendingRecordJSON {
	d := func(v uint64) string { return fmt.Sprint(v) }
	return &pendingRecordJSON{
		Version: r.Version, JobID: Hex(r.JobID[:]), SubmittedAt: d(r.SubmittedAt), SelectionStateHeight: d(r.SelectionStateHeight),
		CommitteeSize: r.CommitteeSize, SubmissionEpoch: d(r.SubmissionEpoch), SubmissionView: d(r.SubmissionView),
		SeedEpoch: d(r.SeedEpoch), SeedView: d(r.SeedView), SeedDelayViews: d(r.SeedDelayViews),
		CandidatesSnapshotRoot: r.CandidatesSnapshotRoot.String(),
	}
}

func recordFromJSON(j *pendingRecordJSON) (engine.PendingSelectionV1, error) {
	r := engine.PendingSelectionV1{Version: j.Version, CommitteeSize: j.CommitteeSize}
	id, err := parseHash(j.JobID)
	if err != nil {
		return r, err
	}
	r.JobID = id
	if r.CandidatesSnapshotRoot, err = parseHash(j.CandidatesSnapshotRoot); err != nil {
		return r, err
	}
	for _, f := range []struct {
		dst *uint64
		s   string
	}{{&r.SubmittedAt, j.SubmittedAt}, {&r.SelectionStateHeight, j.SelectionStateHeight}, {&r.SubmissionEpoch, j.SubmissionEpoch},
		{&r.SubmissionView, j.SubmissionView}, {&r.SeedEpoch, j.SeedEpoch}, {&r.SeedView, j.SeedView}, {&r.SeedDelayViews, j.SeedDelayViews}} {
		if *f.dst, err = parseU64(f.s); err != nil {
			return r, err
		}
	}
	return r, r.Validate()
}

func genPending() ([]any, error) {
	mk := func(id string, s, m, se, sv, ke, kv, k uint64) engine.PendingSelectionV1 {
		r := engine.PendingSelectionV1{Version: 1, JobID: cip11.Keccak256([]byte(id)), SubmittedAt: s, SelectionStateHeight: s,
			CommitteeSize: uint32(m), SubmissionEpoch: se, SubmissionView: sv, SeedEpoch: ke, SeedView: kv, SeedDelayViews: k}
		r.CandidatesSnapshotRoot = cip11.Keccak256([]byte("root:" + id))
		return r
	}
	recs := []struct {
		name string
		r    engine.PendingSelectionV1
	}{
		{"small_values", mk("job-1", 300, 3, 0, 300, 0, 303, 3)},
		{"epoch_carry", mk("job-2", 1_000_000, 5, 7, 998, 8, 1, 3)},
		{"max_u64_fields", mk("job-3", ^uint64(0), 0xffffffff, ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0))},
		{"int_width_boundaries", mk("job-4", 23, 24, 255, 256, 65535, 65536, 4294967296)},
	}
	var out []any
	for _, c := range recs {
		v, err := evalPending(mustJSON(pendingVector{Name: c.name, Record: recordJSON(c.r)}))
		if err != nil {
			return nil, err
		}
		out = append(out, pendingVector{Name: c.name, Record: recordJSON(c.r), CBOR: v["cbor"].(string),
			PendingByJobKey: v["pending_by_job_key"].(string), PendingDueRoundIndexKey: v["pending_due_round_index_key"].(string)})
	}
	good := Hex(recs[0].r.Encode())
	for _, n := range pendingNegatives(good) {
		out = append(out, n)
	}
	return out, nil
}

func pendingNegatives(g string) []pendingVector {
	// g: a b 0 0 0 1 ... "ab0001" + "01" "5820" job(64 hex) + "02" "19012c" ...
	jobEnd := 6 + 2 + 4 + 64
	rest := g[jobEnd:]
	return []pendingVector{
		{Name: "empty_input", CBOR: "", Error: "ErrTruncated"},
		{Name: "non_shortest_int", CBOR: g[:jobEnd] + "021a0000012c" + rest[len("0219012c"):], Error: "ErrNonShortestInt"},
		{Name: "trailing_byte", CBOR: g + "00", Error: "ErrTrailingBytes"},
		{Name: "truncated", CBOR: g[:len(g)-2], Error: "ErrTruncated"},
		{Name: "indefinite_map", CBOR: "bf" + g[2:] + "ff", Error: "ErrIndefiniteLength"},
		{Name: "tagged", CBOR: "c0" + g, Error: "ErrTag"},
		{Name: "extra_key_11", CBOR: "ac" + g[2:] + "0b00", Error: "ErrUnknownKey"},
		{Name: "job_id_31_bytes", CBOR: g[:6] + "01581f" + g[12:12+62] + rest, Error: "ErrByteLength"},
		{Name: "version_2", CBOR: "ab0002" + g[6:], Error: "ErrPendingVersion"},
		{Name: "state_height_not_submitted_at", CBOR: g[:jobEnd] + "0219012c0319012d" + rest[len("0219012c0319012c"):], Error: "ErrPendingStateHeight"},
	}
}

func evalPending(raw json.RawMessage) (map[string]any, error) {
	var v pendingVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	var r engine.PendingSelectionV1
	var err error
	if v.Record != nil {
		r, err = recordFromJSON(v.Record)
	} else {
		var b []byte
		if b, err = Unhex(v.CBOR); err == nil {
			r, err = engine.DecodePending(b)
		}
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"cbor":                        Hex(r.Encode()),
		"pending_by_job_key":          engine.PendingByJobKey(r.JobID).String(),
		"pending_due_round_index_key": Hex(engine.PendingDueRoundKey(r)),
	}, nil
}

// ---- shared parsing helpers

// The parsers below accept only the D18 text form (package textform); their
// errors wrap ErrMalformedVector and the textform sentinel.

func parseU64(s string) (uint64, error) {
	v, err := textform.ParseU64(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformedVector, err)
	}
	return v, nil
}

func parseU128s(ss []string) ([]cip11.U128, error) {
	out := make([]cip11.U128, len(ss))
	for i, s := range ss {
		u, err := cip11.ParseU128(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformedVector, err)
		}
		out[i] = u
	}
	return out, nil
}

func parseHash(s string) (cip11.Hash, error) {
	var h cip11.Hash
	if err := h.UnmarshalText([]byte(s)); err != nil {
		return h, fmt.Errorf("%w: %w", ErrMalformedVector, err)
	}
	return h, nil
}

func parseAddress(s string) (cip11.Address, error) {
	var a cip11.Address
	if err := a.UnmarshalText([]byte(s)); err != nil {
		return a, fmt.Errorf("%w: %w", ErrMalformedVector, err)
	}
	return a, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // generator-only: our own vector structs always marshal
	}
	return b
}
