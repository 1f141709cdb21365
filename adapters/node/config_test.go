package node

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestConfigsValidate: each config refuses an out-of-range value with a
// typed error before anything starts (issue 17 §5: one Validate per
// config; the devnet's: cmd/internal/devnet TestConfigValidate).
func TestConfigsValidate(t *testing.T) {
	d, err := GenerateGenesis(GenesisOptions{Seed: 1, Runners: 1, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewValidator(ValidatorConfig{Genesis: d.Genesis}); !errors.Is(err, ErrNilConfig) {
		t.Errorf("validator without keys: %v", err)
	}
	if _, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, SkipPerMille: 1001}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("validator skip 1001: %v", err)
	}
	if _, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, BlockTime: -time.Second}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("validator negative block time: %v", err)
	}
	rc := RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[0], Chain: HTTPChain{Base: "http://127.0.0.1:9"}}
	for name, f := range map[string]func(*RunnerConfig){
		"negative work": func(c *RunnerConfig) { c.WorkTime = -1 },
		"negative tick": func(c *RunnerConfig) { c.Tick = -1 },
		"fail 1001":     func(c *RunnerConfig) { c.FailPerMille = 1001 },
		"no chain":      func(c *RunnerConfig) { c.Chain = nil },
	} {
		c := rc
		f(&c)
		if _, err := NewRunner(context.Background(), c); err == nil {
			t.Errorf("runner %s: accepted", name)
		}
	}
}
