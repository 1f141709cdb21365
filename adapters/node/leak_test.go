package node

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cip11/cip11"
)

// TestValidatorLifecycleLeaksNoGoroutine starts a validator with runners,
// runs jobs through it and closes everything, 50 times; afterwards no
// goroutine of the validator, its QUIC server, the runners or their
// clients is left (issue 17: every goroutine tracked and stopped on Close).
func TestValidatorLifecycleLeaksNoGoroutine(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	defer goleak.VerifyNone(t)
	d, err := GenerateGenesis(GenesisOptions{Seed: 5, Runners: 3, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, NoSync: true, BlockTime: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		rs := startRunners(t, ctx, d, v)
		if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{byte(i)}, Kind: 1, Runners: 1, TimeoutBlocks: 5, Nonce: uint64(i)}); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if err := v.ProduceBlock(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if i%2 == 0 { // half the time the context ends first, half Close alone
			cancel()
		}
		for _, r := range rs {
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
}
