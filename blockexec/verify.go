package blockexec

import (
	"sync"

	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// preVerified is a seed.ThresholdKeys that answers signature checks the
// pipeline already made ahead of execution, on another core, and
// remembers recent answers (a round's seed is typically checked twice: as
// a parent beacon and later as a consumed seed). Every answer is exactly
// the wrapped Verifier's: a check not made before is made on the spot.
type preVerified struct {
	keys seed.MemoryThresholdKeys
	mu   sync.Mutex
	done map[sigKey]error
}

type sigKey struct {
	epoch uint64 // the key's epoch
	round seed.Round
	sig   seed.Signature
}

func newPreVerified(keys seed.MemoryThresholdKeys) *preVerified {
	return &preVerified{keys: keys, done: make(map[sigKey]error)}
}

// KeyForEpoch implements seed.ThresholdKeys.
func (p *preVerified) KeyForEpoch(epoch uint64) (seed.SeedVerifier, error) {
	p.mu.Lock()
	v, err := p.keys.KeyForEpoch(epoch)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return preVerifier{p, epoch, v}, nil
}

type preVerifier struct {
	p     *preVerified
	epoch uint64
	v     seed.SeedVerifier
}

// Verify implements seed.SeedVerifier.
func (pv preVerifier) Verify(r seed.Round, sig []byte) error {
	if len(sig) == seed.SignatureSize {
		k := sigKey{pv.epoch, r, seed.Signature(sig)}
		pv.p.mu.Lock()
		err, ok := pv.p.done[k]
		pv.p.mu.Unlock()
		if ok {
			return err
		}
	}
	return pv.v.Verify(r, sig)
}

// add installs epoch's key (an in-band reconfiguration, reconfig.go); the
// keys are read under mu because VerifyAhead runs on another goroutine.
func (p *preVerified) add(epoch uint64, v *seed.Verifier) {
	p.mu.Lock()
	p.keys[epoch] = v
	p.mu.Unlock()
}

// memoLimit bounds the remembered answers; the memo restarts when full.
const memoLimit = 1 << 14

// ahead verifies block b's parent beacon and consumed seeds, as the engine
// will, and stores the answers. Undecodable or keyless inputs are left to
// the engine, which reports them.
func (p *preVerified) ahead(b *chainlog.Block) {
	var checks []seed.Beacon
	if pb := beaconFrom(b.ParentBeacon); pb != nil {
		checks = append(checks, *pb)
	}
	if cs, err := seed.DecodeConsumedSeedsV1(b.ConsumedSeeds); err == nil {
		for _, e := range cs {
			checks = append(checks, seed.Beacon(e))
		}
	}
	for _, c := range checks {
		k := sigKey{c.Round.Epoch, c.Round, c.Signature}
		p.mu.Lock()
		_, seen := p.done[k]
		v, err := p.keys.KeyForEpoch(c.Round.Epoch)
		p.mu.Unlock()
		if seen || err != nil {
			continue
		}
		err = v.Verify(c.Round, c.Signature[:])
		p.mu.Lock()
		if len(p.done) >= memoLimit {
			clear(p.done)
		}
		p.done[k] = err
		p.mu.Unlock()
	}
}
