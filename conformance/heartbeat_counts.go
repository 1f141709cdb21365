package conformance

import (
	"encoding/json"

	"github.com/cip11/cip11/nodetx"
)

// ---- heartbeat_counts (§7.1, SPEC-NOTES C7) ----

func heartbeatCountsFunction() Function {
	return Function{
		Name: "heartbeat_counts", Spec: "§7.1",
		Description: "Whether block `height` may count an on-chain heartbeat transaction whose nonce (its signing height) is `nonce`, for a runner whose on-chain last_heartbeat at the end of block height − 1 is `last_heartbeat` (0 for a runner the block itself registers). In order: nonce ≤ height (ErrHeartbeatEarly); height − nonce ≤ 256, the heartbeat window (ErrStaleTx); nonce > last_heartbeat (ErrHeartbeatSpent). A block that counts a heartbeat sets last_heartbeat to its own height (≥ nonce), so one signed heartbeat counts at most once. Output when it counts: counts = true.",
		Generate:    hbCountsGen, Eval: hbCountsEval,
	}
}

func heartbeatCountsSentinels() []Sentinel {
	return []Sentinel{
		{"ErrHeartbeatEarly", nodetx.ErrHeartbeatEarly},
		{"ErrHeartbeatSpent", nodetx.ErrHeartbeatSpent},
		{"ErrStaleTx", nodetx.ErrStaleTx},
	}
}

type hbCountsIn struct {
	Name          string `json:"name"`
	Nonce         uint64 `json:"nonce,string"`
	LastHeartbeat uint64 `json:"last_heartbeat,string"`
	Height        uint64 `json:"height,string"`
}

type hbCountsOut struct {
	Counts bool `json:"counts"`
}

type hbCountsVector struct {
	hbCountsIn
	hbCountsOut
	Error string `json:"error"`
}

func hbCounts(in hbCountsIn) (hbCountsOut, error) {
	err := nodetx.HeartbeatCounts(in.Nonce, in.LastHeartbeat, in.Height)
	return hbCountsOut{err == nil}, err
}

func hbCountsGen() ([]any, error) {
	const max = ^uint64(0)
	specs := []struct {
		in   hbCountsIn
		want string // the expected error, frozen by hand from the rule's text
	}{
		{hbCountsIn{"signed_at_parent_counts", 99, 10, 100}, ""},
		{hbCountsIn{"signed_at_own_height_counts", 100, 10, 100}, ""},
		{hbCountsIn{"new_runner_last_0", 5, 0, 6}, ""},
		{hbCountsIn{"window_edge_256_counts", 44, 10, 300}, ""},
		{hbCountsIn{"nonce_just_after_last", 11, 10, 12}, ""},
		{hbCountsIn{"u64_max_height_and_nonce", max, max - 1, max}, ""},
		{hbCountsIn{"replayed_nonce_equals_last", 10, 10, 12}, "ErrHeartbeatSpent"},
		{hbCountsIn{"replayed_90_blocks_later", 99, 100, 190}, "ErrHeartbeatSpent"},
		{hbCountsIn{"nonce_before_last", 3, 10, 12}, "ErrHeartbeatSpent"},
		{hbCountsIn{"window_257_stale", 43, 10, 300}, "ErrStaleTx"},
		{hbCountsIn{"stale_before_spent", 1, 10, 300}, "ErrStaleTx"},
		{hbCountsIn{"nonce_after_height", 101, 10, 100}, "ErrHeartbeatEarly"},
		{hbCountsIn{"nonce_u64_max_early", max, 0, 5}, "ErrHeartbeatEarly"},
		{hbCountsIn{"early_before_spent", 50, 60, 40}, "ErrHeartbeatEarly"},
		{hbCountsIn{"height_0_nonce_0", 0, 0, 0}, "ErrHeartbeatSpent"},
	}
	out := make([]any, len(specs))
	for i, s := range specs {
		o, err := hbCounts(s.in)
		v, err := pmMerge(s.in, o, err, s.want)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func hbCountsEval(raw json.RawMessage) (map[string]any, error) {
	var v hbCountsVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	o, err := hbCounts(v.hbCountsIn)
	if err != nil {
		return nil, err
	}
	return pmOutputs(o)
}
