package conformance

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/textform"
	"github.com/cip11/cip11/mru"
)

// mruFunctions lists the vector functions owned by package mru.
func mruFunctions() []Function {
	return []Function{
		{
			Name: "mru_lookup", Spec: "§9.3",
			Description: "lookup_mru at an active height (MRU_ACTIVATION_HEIGHT ≤ current_height): applies is true iff record is non-null and current_height −(saturating) set_at_block ≤ ttl_blocks (MRU_TTL_BLOCKS). u64 values are decimal strings.",
			Generate:    mruGenLookup, Eval: mruEvalLookup,
		},
		{
			Name: "mru_winner", Spec: "§9.4",
			Description: "MRU write-path winner: the first runner of committee (stored selection order) that is in matching and in neither runners_to_slash nor runners_unrewarded; null if none (then nothing is written). The order of matching, runners_to_slash and runners_unrewarded never matters.",
			Generate:    mruGenWinner, Eval: mruEvalWinner,
		},
		{
			Name: "mru_record", Spec: "§9.4",
			Description: "mru_key storage layout (DECISIONS D15): key = \"cip11:mru:v1\" ‖ submitter_20 ‖ job_kind_u8 with the §9.4 job_kind table (Llm 0, Http 1, Mcp 2, Custom 3, PublishChainRoot 4, Agent 5); value = runner_address_20 ‖ set_at_block_be8 (28 bytes). Positive vectors map (submitter, job_kind, value) to key and the decoded record; negative vectors reject an unknown job_kind or a value that is not 28 bytes.",
			Generate:    mruGenRecord, Eval: mruEvalRecord,
		},
	}
}

// mruSentinels lists package mru's exported sentinels for negative vectors.
func mruSentinels() []Sentinel {
	return []Sentinel{
		{"ErrRecordLength", mru.ErrRecordLength},
		{"ErrUnknownJobKind", mru.ErrUnknownJobKind},
	}
}

// decimalU64 is a u64 carried as a canonical decimal string (DECISIONS D18).
type decimalU64 uint64

func (d decimalU64) MarshalText() ([]byte, error) { return textform.AppendU64(nil, uint64(d)), nil }

func (d *decimalU64) UnmarshalText(b []byte) error {
	v, err := parseU64(string(b))
	if err != nil {
		return err
	}
	*d = decimalU64(v)
	return nil
}

type mruRecordJSON struct {
	RunnerAddress cip11.Address `json:"runner_address"`
	SetAtBlock    decimalU64    `json:"set_at_block"`
}

type mruLookupVector struct {
	Name          string         `json:"name"`
	Record        *mruRecordJSON `json:"record"`
	CurrentHeight decimalU64     `json:"current_height"`
	TTLBlocks     decimalU64     `json:"ttl_blocks"`
	Applies       bool           `json:"applies"`
}

func mruAddr(b byte) cip11.Address { return cip11.Address{b, 19: b} }

func mruGenLookup() ([]any, error) {
	rec := func(setAt uint64) *mruRecordJSON { return &mruRecordJSON{mruAddr(0xa1), decimalU64(setAt)} }
	const ttl = 1280
	vs := []mruLookupVector{
		{Name: "no_record", Record: nil, CurrentHeight: 5000, TTLBlocks: ttl},
		{Name: "same_block", Record: rec(5000), CurrentHeight: 5000, TTLBlocks: ttl},
		{Name: "age_ttl_minus_1", Record: rec(5000), CurrentHeight: 5000 + ttl - 1, TTLBlocks: ttl},
		{Name: "age_exactly_ttl_applies", Record: rec(5000), CurrentHeight: 5000 + ttl, TTLBlocks: ttl},
		{Name: "age_ttl_plus_1_expired", Record: rec(5000), CurrentHeight: 5000 + ttl + 1, TTLBlocks: ttl},
		{Name: "long_expired", Record: rec(1), CurrentHeight: 1_000_000, TTLBlocks: ttl},
		{Name: "set_at_after_current_saturates_to_0", Record: rec(5001), CurrentHeight: 5000, TTLBlocks: ttl},
		{Name: "set_at_max_current_0_saturates", Record: rec(math.MaxUint64), CurrentHeight: 0, TTLBlocks: 0},
		{Name: "genesis_set_0_current_0", Record: rec(0), CurrentHeight: 0, TTLBlocks: ttl},
		{Name: "genesis_range_age_ttl", Record: rec(0), CurrentHeight: ttl, TTLBlocks: ttl},
		{Name: "genesis_range_age_ttl_plus_1", Record: rec(0), CurrentHeight: ttl + 1, TTLBlocks: ttl},
		{Name: "ttl_0_same_block_applies", Record: rec(77), CurrentHeight: 77, TTLBlocks: 0},
		{Name: "ttl_0_next_block_expired", Record: rec(77), CurrentHeight: 78, TTLBlocks: 0},
		{Name: "ttl_max_age_max_applies", Record: rec(0), CurrentHeight: math.MaxUint64, TTLBlocks: math.MaxUint64},
		{Name: "ttl_max_minus_1_age_max_expired", Record: rec(0), CurrentHeight: math.MaxUint64, TTLBlocks: math.MaxUint64 - 1},
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		res, err := mruLookup(v)
		if err != nil {
			return nil, err
		}
		v.Applies = res
		out[i] = v
	}
	return out, nil
}

// mruLookup runs the full read path — D15 store, activation gate, TTL — at an
// active height.
func mruLookup(v mruLookupVector) (bool, error) {
	p := cip11.DefaultParams()
	p.MRUActivationHeight, p.MRUTTLBlocks = 0, uint64(v.TTLBlocks)
	store, submitter := mru.NewMemStore(), mruAddr(0x5b)
	if v.Record != nil {
		if err := store.Put(submitter, mru.Llm, mru.Record{Runner: v.Record.RunnerAddress, SetAt: uint64(v.Record.SetAtBlock)}); err != nil {
			return false, err
		}
	}
	rec, ok, err := mru.Lookup(store, p, submitter, mru.Llm, uint64(v.CurrentHeight))
	if ok && rec.Runner != v.Record.RunnerAddress {
		return false, fmt.Errorf("lookup returned %s", rec.Runner)
	}
	return ok, err
}

func mruEvalLookup(raw json.RawMessage) (map[string]any, error) {
	var v mruLookupVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	applies, err := mruLookup(v)
	if err != nil {
		return nil, err
	}
	return map[string]any{"applies": applies}, nil
}

type mruWinnerVector struct {
	Name              string          `json:"name"`
	Committee         []cip11.Address `json:"committee"`
	Matching          []cip11.Address `json:"matching"`
	RunnersToSlash    []cip11.Address `json:"runners_to_slash"`
	RunnersUnrewarded []cip11.Address `json:"runners_unrewarded"`
	Winner            *cip11.Address  `json:"winner"`
}

func mruWinner(v mruWinnerVector) *cip11.Address {
	w, ok := mru.Winner(v.Committee, v.Matching, v.RunnersToSlash, v.RunnersUnrewarded)
	if !ok {
		return nil
	}
	return &w
}

func mruGenWinner() ([]any, error) {
	a, b, c, d, e := mruAddr(0xa1), mruAddr(0xb2), mruAddr(0xc3), mruAddr(0xd4), mruAddr(0xe5)
	l := func(xs ...cip11.Address) []cip11.Address { return append([]cip11.Address{}, xs...) }
	vs := []mruWinnerVector{
		{Name: "single_runner_none_mode", Committee: l(a), Matching: l(a), RunnersToSlash: l(), RunnersUnrewarded: l()},
		{Name: "committee_order_not_address_order", Committee: l(c, a, b), Matching: l(a, b, c), RunnersToSlash: l(), RunnersUnrewarded: l()},
		{Name: "matching_arrival_order_irrelevant", Committee: l(c, a, b), Matching: l(b, c, a), RunnersToSlash: l(), RunnersUnrewarded: l()},
		{Name: "first_not_matching_skipped", Committee: l(c, a, b), Matching: l(b, a), RunnersToSlash: l(), RunnersUnrewarded: l()},
		{Name: "slashed_excluded", Committee: l(c, a, b), Matching: l(a, b, c), RunnersToSlash: l(c), RunnersUnrewarded: l()},
		{Name: "unrewarded_excluded_not_only_slashed", Committee: l(c, a, b), Matching: l(a, b, c), RunnersToSlash: l(), RunnersUnrewarded: l(c, a)},
		{Name: "union_of_slash_and_unrewarded", Committee: l(d, c, a, b), Matching: l(a, b, c, d), RunnersToSlash: l(d), RunnersUnrewarded: l(c)},
		{Name: "all_excluded_no_winner", Committee: l(a, b, c), Matching: l(a, b), RunnersToSlash: l(a), RunnersUnrewarded: l(b)},
		{Name: "no_matching_no_winner", Committee: l(a, b, c), Matching: l(), RunnersToSlash: l(), RunnersUnrewarded: l()},
		{Name: "matching_outside_committee_ignored", Committee: l(a, b), Matching: l(e), RunnersToSlash: l(), RunnersUnrewarded: l()},
		{Name: "empty_committee", Committee: l(), Matching: l(a), RunnersToSlash: l(), RunnersUnrewarded: l()},
		{Name: "winning_cluster_of_five", Committee: l(e, d, c, b, a), Matching: l(a, c, d), RunnersToSlash: l(e), RunnersUnrewarded: l(e, b)},
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		v.Winner = mruWinner(v)
		out[i] = v
	}
	return out, nil
}

func mruEvalWinner(raw json.RawMessage) (map[string]any, error) {
	var v mruWinnerVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	return map[string]any{"winner": mruWinner(v)}, nil
}

type mruRecordVector struct {
	Name          string         `json:"name"`
	Submitter     cip11.Address  `json:"submitter"`
	JobKind       int            `json:"job_kind"`
	Value         string         `json:"value"`
	Key           string         `json:"key,omitempty"`
	RunnerAddress *cip11.Address `json:"runner_address,omitempty"`
	SetAtBlock    *decimalU64    `json:"set_at_block,omitempty"`
	Error         string         `json:"error,omitempty"`
}

func mruRecordOutputs(v mruRecordVector) (map[string]any, error) {
	if v.JobKind < 0 || v.JobKind > 255 {
		return nil, fmt.Errorf("%w: job_kind %d is not a byte", ErrMalformedVector, v.JobKind)
	}
	kind, err := mru.JobKindFromByte(byte(v.JobKind))
	if err != nil {
		return nil, err
	}
	value, err := Unhex(v.Value)
	if err != nil {
		return nil, err
	}
	rec, err := mru.DecodeRecord(value)
	if err != nil {
		return nil, err
	}
	key, setAt := mru.Key(v.Submitter, kind), decimalU64(rec.SetAt)
	return map[string]any{"key": Hex(key[:]), "runner_address": rec.Runner, "set_at_block": setAt}, nil
}

func mruGenRecord() ([]any, error) {
	submitter := cip11.Address{0x5b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0x19}
	val := func(r cip11.Address, setAt uint64) string {
		b := mru.Record{Runner: r, SetAt: setAt}.Encode()
		return Hex(b[:])
	}
	good := val(mruAddr(0xa1), 1_234_567)
	vs := []mruRecordVector{
		{Name: "llm", JobKind: 0, Value: good},
		{Name: "http", JobKind: 1, Value: good},
		{Name: "mcp", JobKind: 2, Value: good},
		{Name: "custom", JobKind: 3, Value: good},
		{Name: "publish_chain_root", JobKind: 4, Value: good},
		{Name: "agent", JobKind: 5, Value: val(mruAddr(0xff), math.MaxUint64)},
		{Name: "set_at_zero", JobKind: 0, Value: val(cip11.Address{}, 0)},
		{Name: "unknown_job_kind_6", JobKind: 6, Value: good, Error: "ErrUnknownJobKind"},
		{Name: "unknown_job_kind_255", JobKind: 255, Value: good, Error: "ErrUnknownJobKind"},
		{Name: "value_empty", JobKind: 0, Value: "", Error: "ErrRecordLength"},
		{Name: "value_27_bytes", JobKind: 0, Value: good[:54], Error: "ErrRecordLength"},
		{Name: "value_29_bytes", JobKind: 0, Value: good + "00", Error: "ErrRecordLength"},
		{Name: "value_address_only", JobKind: 0, Value: good[:40], Error: "ErrRecordLength"},
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		v.Submitter = submitter
		got, err := mruRecordOutputs(v)
		if err != nil {
			if name, _ := SentinelName(err); name != v.Error {
				return nil, fmt.Errorf("mru_record %s: %v, want %s", v.Name, err, v.Error)
			}
			out[i] = v
			continue
		}
		r, s := got["runner_address"].(cip11.Address), got["set_at_block"].(decimalU64)
		v.Key, v.RunnerAddress, v.SetAtBlock = got["key"].(string), &r, &s
		out[i] = v
	}
	return out, nil
}

func mruEvalRecord(raw json.RawMessage) (map[string]any, error) {
	var v mruRecordVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	return mruRecordOutputs(v)
}
