package modea

import (
	"errors"
	"testing"

	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// fuzzCertificate turns bytes into a certificate over w: byte 0 picks the
// budget and current height, then 4 bytes per receipt (validator, flags,
// age, mutation).
func fuzzCertificate(t *testing.T, w *modeAWorld, data []byte) (cur, budget uint64, rs []wire.PresenceReceipt) {
	if len(data) == 0 {
		return 1100, plenty, nil
	}
	cur = []uint64{999, 1000, 1100, 1159, 1160, 2000, 0, 5}[data[0]&7]
	budget = []uint64{plenty, 0, 20_000, 25_000, 31_999, 40_000, 60_000, 1 << 63}[data[0]>>5]
	data = data[1:]
	for len(data) >= 4 && len(rs) < 24 {
		b := data[:4]
		data = data[4:]
		s := receiptSpec{validator: int(b[0]) % 13, epochE1: b[1]&1 != 0, accepting: b[1]&2 == 0,
			forged: b[1]&4 != 0, otherRunner: b[1]&8 != 0, offset: int(int8(b[2]))}
		r := w.build(t, cur, s)
		switch b[3] % 8 {
		case 1:
			r.RunnerPubKey = wire.PubKey{}
		case 2:
			r.ValidatorPubKey = wire.PubKey{}
		case 3:
			r.NonceEcho ^= 1
		case 4:
			r.BlockHeight = ^uint64(0) - uint64(b[2])
		case 5:
			r.SubsetEpoch = ^uint64(0)
		}
		rs = append(rs, r)
	}
	return cur, budget, rs
}

// FuzzProcessCertificate: no input panics; the cycles charged never exceed
// the budget; an accepted certificate counts ≥ t_hard distinct validators
// and moves the anchor strictly forward; a rejected one leaves state alone.
func FuzzProcessCertificate(f *testing.F) {
	w := newModeAWorld(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		w.st = NewMemState()
		if err := w.st.Block(0).PutPresenceAnchor(w.addr, Record{Anchor: 1000, ProvenUntil: 1060}); err != nil {
			t.Fatal(err)
		}
		cur, budget, rs := fuzzCertificate(t, w, data)
		m := &CycleMeter{Limit: budget}
		c := &CertificateContext{Params: w.p, ChainID: testChainID, CurrentHeight: cur, Epochs: w.e,
			Registry: regAt(t, w.reg, max(cur, 1)), Store: w.st.Block(cur), Meter: m}
		height := cur - uint64(len(data)%3)
		if cur < 3 {
			height = cur
		}
		res, err := ProcessCertificate(c, &Certificate{Runner: w.addr, Height: height, Receipts: rs})
		if res.Cycles != m.Used || m.Used > budget {
			t.Fatalf("cycles %d, meter %d, budget %d", res.Cycles, m.Used, budget)
		}
		if len(res.Verdicts) != 0 && len(res.Verdicts) != len(rs) {
			t.Fatalf("%d verdicts for %d receipts", len(res.Verdicts), len(rs))
		}
		rec, _, _ := w.st.At(cur).PresenceAnchor(w.addr)
		if err != nil {
			if rec.Anchor != 1000 {
				t.Fatalf("rejected (%v) but anchor moved to %d", err, rec.Anchor)
			}
			return
		}
		seen := map[validators.PeerKey]bool{}
		for _, i := range res.Counted() {
			k := validators.PeerKey(rs[i].ValidatorPubKey.Raw())
			if seen[k] {
				t.Fatal("a validator counted twice")
			}
			seen[k] = true
		}
		if len(seen) < int(w.p.THard) || rec.Anchor <= 1000 || rec != res.Record {
			t.Fatalf("accepted with %d validators, anchor %d, record %+v", len(seen), rec.Anchor, res.Record)
		}
		if errors.Is(err, ErrOutOfCycles) {
			t.Fatal("unreachable")
		}
	})
}
