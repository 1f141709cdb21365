package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/cip11/cip11/seed"
)

// advance_round_height: advance_round on the D30 height schedule
// (seed.HeightSchedule, SPEC-NOTES C4), the CometBFT network's.

func scheduleFunction() Function {
	return Function{
		Name: "advance_round_height", Spec: "§9.2",
		Description: "advance_round(r, k) on the height schedule of DECISIONS D30 (SPEC-NOTES C4, the CometBFT network): the view is the block height; epoch e holds the views activations[e] … activations[e+1]−1 and the last epoch every view from its activation on. Inputs: activations (strictly ascending u64 decimal strings, at least one), known_through (u64: the last view whose epoch is final, not before the last activation), epoch, view (the round r; its epoch must be the one active at its view, and view ≤ known_through) and k (u64). Outputs: mappable, and when true next_epoch and next_view: next_view = view + k and next_epoch is the epoch active there. A target after known_through is mappable false (the pending selection waits, §9.2). Errors: ErrInvalidSchedule (no activations, not ascending, known_through before the last activation), ErrRoundOutsideSchedule (a view before the first activation or past known_through, or an epoch that is not the view's), ErrRoundOverflow (view + k overflows u64).",
		Generate:    schedGen, Eval: schedEval,
	}
}

type schedVector struct {
	Name         string   `json:"name"`
	Activations  []string `json:"activations"`
	KnownThrough string   `json:"known_through"`
	Epoch        string   `json:"epoch"`
	View         string   `json:"view"`
	K            string   `json:"k"`
	Mappable     *bool    `json:"mappable,omitempty"`
	NextEpoch    string   `json:"next_epoch,omitempty"`
	NextView     string   `json:"next_view,omitempty"`
	Error        string   `json:"error,omitempty"`
}

func schedGen() ([]any, error) {
	acts := []string{"1", "50", "90"}
	in := []schedVector{
		{Name: "inside_epoch_0", Activations: acts, KnownThrough: "200", Epoch: "0", View: "10", K: "5"},
		{Name: "k_zero", Activations: acts, KnownThrough: "200", Epoch: "0", View: "10", K: "0"},
		{Name: "last_view_of_epoch_0", Activations: acts, KnownThrough: "200", Epoch: "0", View: "40", K: "9"},
		{Name: "onto_the_activation_height", Activations: acts, KnownThrough: "200", Epoch: "0", View: "40", K: "10"},
		{Name: "across_two_activations", Activations: acts, KnownThrough: "200", Epoch: "0", View: "45", K: "50"},
		{Name: "at_the_known_horizon", Activations: acts, KnownThrough: "200", Epoch: "2", View: "190", K: "10"},
		{Name: "past_the_known_horizon_not_mappable", Activations: acts, KnownThrough: "200", Epoch: "2", View: "190", K: "11"},
		{Name: "one_epoch_static_network", Activations: []string{"1"}, KnownThrough: "4611686018427387904", Epoch: "0", View: "7", K: "2"},
		{Name: "epoch_not_the_views", Activations: acts, KnownThrough: "200", Epoch: "1", View: "10", K: "1", Error: "ErrRoundOutsideSchedule"},
		{Name: "view_before_first_activation", Activations: acts, KnownThrough: "200", Epoch: "0", View: "0", K: "1", Error: "ErrRoundOutsideSchedule"},
		{Name: "view_past_the_horizon", Activations: acts, KnownThrough: "200", Epoch: "2", View: "201", K: "0", Error: "ErrRoundOutsideSchedule"},
		{Name: "overflow", Activations: acts, KnownThrough: "200", Epoch: "2", View: "150", K: seedMaxU64, Error: "ErrRoundOverflow"},
		{Name: "no_activations", Activations: []string{}, KnownThrough: "10", Epoch: "0", View: "1", K: "1", Error: "ErrInvalidSchedule"},
		{Name: "activations_not_ascending", Activations: []string{"1", "5", "5"}, KnownThrough: "10", Epoch: "0", View: "1", K: "1", Error: "ErrInvalidSchedule"},
		{Name: "horizon_before_last_activation", Activations: []string{"1", "20"}, KnownThrough: "19", Epoch: "0", View: "1", K: "1", Error: "ErrInvalidSchedule"},
	}
	return seedFill(in, func(v *schedVector) error {
		out, err := schedEval(seedRawJSON(v))
		if v.Error != "" {
			return seedExpect(v.Name, v.Error, err)
		}
		if err != nil {
			return err
		}
		m := out["mappable"].(bool)
		v.Mappable = &m
		if m {
			v.NextEpoch, v.NextView = out["next_epoch"].(string), out["next_view"].(string)
		}
		return nil
	})
}

func schedEval(raw json.RawMessage) (map[string]any, error) {
	var v schedVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	if v.Activations == nil {
		return nil, fmt.Errorf("%w: activations is required", ErrMalformedVector)
	}
	var s seed.HeightSchedule
	for _, a := range v.Activations {
		x, err := parseU64(a)
		if err != nil {
			return nil, err
		}
		s.Activations = append(s.Activations, x)
	}
	var err error
	if s.KnownThrough, err = parseU64(v.KnownThrough); err != nil {
		return nil, err
	}
	r, err := seedRound(v.Epoch, v.View)
	if err != nil {
		return nil, err
	}
	k, err := parseU64(v.K)
	if err != nil {
		return nil, err
	}
	next, ok, err := s.Advance(r, k)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"mappable": ok}
	if ok {
		out["next_epoch"], out["next_view"] = fmt.Sprint(next.Epoch), fmt.Sprint(next.View)
	}
	return out, nil
}
