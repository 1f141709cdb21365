package node

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cip11/cip11"
)

func newTestDevnet(t *testing.T, s uint64, runners int, extra []GenesisRunner) *GeneratedGenesis {
	t.Helper()
	d, err := GenerateGenesis(GenesisOptions{Seed: s, Runners: runners, QUIC: "127.0.0.1:0", Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDevnetWriteRefusesExisting (issue 18 #13): Write never replaces a
// genesis or key file (a new genesis orphans the old chain's data
// directory); Overwrite does, and removes runner keys beyond its runners.
func TestDevnetWriteRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	if err := newTestDevnet(t, 1, 3, nil).Write(dir, 1); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, n := range []string{"genesis.json", "validator.key", "runner-0000.key", "runner-0002.key"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		before[n] = b
	}
	other := newTestDevnet(t, 2, 1, nil)
	if err := other.Write(dir, 2); !errors.Is(err, ErrGenesisExists) {
		t.Fatalf("second Write: %v, want ErrGenesisExists", err)
	}
	for n, b := range before {
		if got, _ := os.ReadFile(filepath.Join(dir, n)); !bytes.Equal(got, b) {
			t.Errorf("%s changed by a refused Write", n)
		}
	}
	// Only a stale runner key is enough to refuse.
	only := t.TempDir()
	if err := os.WriteFile(filepath.Join(only, "runner-0007.key"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := other.Write(only, 2); !errors.Is(err, ErrGenesisExists) {
		t.Errorf("Write over a runner key: %v, want ErrGenesisExists", err)
	}
	if err := other.Overwrite(dir, 2); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "validator.key")); bytes.Equal(got, before["validator.key"]) {
		t.Error("Overwrite kept the old validator key")
	}
	if _, err := os.Stat(filepath.Join(dir, "runner-0002.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale runner-0002.key after Overwrite with 1 runner: %v", err)
	}
	if _, err := LoadRunnerKey(filepath.Join(dir, "runner-0000.key")); err != nil {
		t.Error(err)
	}
	if g, err := LoadGenesis(filepath.Join(dir, "genesis.json")); err != nil || len(g.Runners) != 1 {
		t.Errorf("genesis after Overwrite: %v", err)
	}
}

const addrA = "00112233445566778899aabbccddeeff00112233"

func TestParseGenesisRunner(t *testing.T) {
	want, _ := cip11.ParseU128("5000")
	for _, tc := range []struct {
		in    string
		stake cip11.U128
	}{
		{addrA, cip11.U128From64(DefaultRunnerStake)},
		{addrA + ":5000", want},
		{"0x" + addrA + ":5000", want},
		{strings.ToUpper(addrA), cip11.U128From64(DefaultRunnerStake)},
	} {
		r, err := ParseGenesisRunner(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if r.Address.String() != addrA || r.Stake != tc.stake || r.ReputationX1e9 != DefaultRunnerReputation {
			t.Errorf("%q: %+v", tc.in, r)
		}
	}
	for _, bad := range []string{
		"", "xyz", addrA[:38], addrA + "00", "0g" + addrA[2:], addrA + ":0", addrA + ":-5", addrA + ":1e18",
		addrA + ":", addrA + ":007", addrA + ":340282366920938463463374607431768211456",
	} {
		if _, err := ParseGenesisRunner(bad); !errors.Is(err, ErrRunnerSpec) {
			t.Errorf("%q: %v, want ErrRunnerSpec", bad, err)
		}
	}
}

func TestReadGenesisRunners(t *testing.T) {
	addrB := strings.Repeat("ab", 20)
	rs, err := ReadGenesisRunners(strings.NewReader("# runners\n\n" + addrA + "  7\n\t0x" + addrB + " # default stake\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Address.String() != addrA || rs[0].Stake != cip11.U128From64(7) ||
		rs[1].Address.String() != addrB || rs[1].Stake != cip11.U128From64(DefaultRunnerStake) {
		t.Errorf("%+v", rs)
	}
	for _, tc := range []struct{ in, line string }{
		{addrA + "\n" + addrA + " 5\n", "line 2"},
		{"# x\n" + addrA + " 0\n", "line 2"},
		{"nothex\n", "line 1"},
		{addrA + " 5 6\n", "line 1"},
		{addrA + ":5\n", "line 1"},
	} {
		_, err := ReadGenesisRunners(strings.NewReader(tc.in))
		if !errors.Is(err, ErrRunnerSpec) || !strings.Contains(err.Error(), tc.line) {
			t.Errorf("%q: %v, want ErrRunnerSpec at %s", tc.in, err, tc.line)
		}
	}
}

// TestGenerateGenesisExtraRunners: runners without key files are registered after
// the derived ones and survive the genesis file's round trip; a zero stake
// or an address given twice is an invalid genesis.
func TestGenerateGenesisExtraRunners(t *testing.T) {
	x, err := ParseGenesisRunner(addrA + ":123")
	if err != nil {
		t.Fatal(err)
	}
	d := newTestDevnet(t, 1, 2, []GenesisRunner{x})
	dir := t.TempDir()
	if err := d.Write(dir, 1); err != nil {
		t.Fatal(err)
	}
	g, err := LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Runners) != 3 || g.Runners[2] != x || len(d.RunnerKeys) != 2 {
		t.Errorf("runners %+v", g.Runners)
	}
	if _, err := os.Stat(filepath.Join(dir, "runner-0002.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key file for the extra runner: %v", err)
	}
	if _, err := GenerateGenesis(GenesisOptions{Seed: 1, Extra: []GenesisRunner{x, x}}); !errors.Is(err, ErrGenesis) {
		t.Errorf("duplicate extra runner: %v", err)
	}
	zero := x
	zero.Stake = cip11.U128{}
	if _, err := GenerateGenesis(GenesisOptions{Seed: 1, Extra: []GenesisRunner{zero}}); !errors.Is(err, ErrGenesis) {
		t.Errorf("zero stake: %v", err)
	}
}

// FuzzReadGenesisRunners: the runners-file decoder never panics, and what
// it accepts is strict: non-zero stakes, distinct addresses, and the same
// runners again when written back in canonical form.
func FuzzReadGenesisRunners(f *testing.F) {
	f.Add([]byte("# runners\n" + addrA + " 7\n0x" + strings.Repeat("ab", 20) + "\n"))
	f.Add([]byte(addrA + " 0\n"))
	f.Add([]byte(addrA + "\n" + addrA + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := ReadGenesisRunners(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrRunnerSpec) {
				t.Fatalf("error without ErrRunnerSpec: %v", err)
			}
			return
		}
		var canon strings.Builder
		seen := map[cip11.Address]bool{}
		for _, r := range rs {
			if r.Stake.IsZero() || seen[r.Address] {
				t.Fatalf("accepted %+v", r)
			}
			seen[r.Address] = true
			canon.WriteString(r.Address.String() + " " + r.Stake.String() + "\n")
			if p, err := ParseGenesisRunner(r.Address.String() + ":" + r.Stake.String()); err != nil || p != r {
				t.Fatalf("ParseGenesisRunner of %+v: %+v, %v", r, p, err)
			}
		}
		again, err := ReadGenesisRunners(strings.NewReader(canon.String()))
		if err != nil || len(again) != len(rs) {
			t.Fatalf("canonical form %q: %v", canon.String(), err)
		}
		for i := range rs {
			if again[i] != rs[i] {
				t.Fatalf("round trip %d: %+v != %+v", i, again[i], rs[i])
			}
		}
	})
}

// FuzzDecodeGenesis: the genesis-file decoder (an operator's file, and on
// a network one written by another machine's `cip11 genesis`) never
// panics; what it refuses it refuses with ErrGenesis; what it accepts
// encodes to bytes that decode to the same genesis and encode to the same
// bytes again. Seeds: a single validator's genesis here, a 4-validator
// network's (`cip11 genesis -validators 4`) in testdata/fuzz.
func FuzzDecodeGenesis(f *testing.F) {
	d, err := GenerateGenesis(GenesisOptions{Seed: 3, Runners: 2, QUIC: "127.0.0.1:0"})
	if err != nil {
		f.Fatal(err)
	}
	b, err := d.Genesis.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add(bytes.Replace(b, []byte(`"chain_id"`), []byte(`"chain_id" `), 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := DecodeGenesis(b)
		if err != nil {
			if !errors.Is(err, ErrGenesis) {
				t.Fatalf("refused without ErrGenesis: %v", err)
			}
			return
		}
		e, err := g.Encode()
		if err != nil {
			t.Fatalf("accepted genesis does not encode: %v", err)
		}
		g2, err := DecodeGenesis(e)
		if err != nil {
			t.Fatalf("its encoding is refused: %v\n%s", err, e)
		}
		e2, err := g2.Encode()
		if err != nil || !bytes.Equal(e, e2) {
			t.Fatalf("encode, decode, encode differs (%v):\n%s\n%s", err, e, e2)
		}
	})
}
