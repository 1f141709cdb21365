package node

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
)

// TestPollNamesItsKey: a validator learns runner keys from transactions
// and forgets them when it restarts; a poll that names the runner's public
// key (GET /runner/{addr}/jobs?pubkey=HEX, KeyedChain) is answered at once
// with the signed assignment (§14), and a key that is not the runner's is
// refused with 400.
func TestPollNamesItsKey(t *testing.T) {
	d, err := GenerateGenesis(GenesisOptions{Seed: 41, Runners: 2, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ProduceBlock(); err != nil {
		t.Fatal(err)
	}
	id, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{4}, Kind: 1, Runners: 1, TimeoutBlocks: 50})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	jv, _ := v.Job(id)
	if jv.State != job.StateAssigned || len(jv.Committee) != 1 {
		t.Fatalf("job %s before the restart", jv.State)
	}
	v.Close()
	v, err = NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	h, err := httpapi.NewHandler(Backend{v}, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := HTTPChain{Base: srv.URL}
	k0, k1 := d.RunnerKeys[0], d.RunnerKeys[1] // k0: the seated runner
	if k1.Address() == jv.Committee[0] {
		k0, k1 = k1, k0
	}
	if as, err := c.Poll(context.Background(), k0.Address()); err != nil || len(as) != 0 {
		t.Fatalf("poll without a key after the restart: %d assignments, %v (the key is not known yet)", len(as), err)
	}
	as, err := c.PollKeyed(context.Background(), k0.Address(), k0.PubKey())
	if err != nil || len(as) != 1 || as[0].JobID != id {
		t.Fatalf("poll naming its key: %d assignments, %v", len(as), err)
	}
	if err := as[0].Verify(uint64(d.Genesis.ChainID)); err != nil {
		t.Fatalf("the assignment does not verify: %v", err)
	}
	resp, err := http.Get(srv.URL + "/runner/" + k0.Address().String() + "/jobs?pubkey=" + hex.EncodeToString(k1.PubKey().Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("another runner's key: %d, want 400", resp.StatusCode)
	}
}
