package selection

import (
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
	"pgregory.net/rapid"
)

// plainView hides a view's state.SortedView fast path.
type plainView struct{ v state.RegistryView }

func (p plainView) Height() uint64                              { return p.v.Height() }
func (p plainView) ActiveRunners() []cip11.Address              { return p.v.ActiveRunners() }
func (p plainView) Runner(a cip11.Address) (state.Runner, bool) { return p.v.Runner(a) }
func (p plainView) ReputationConfig() state.ReputationConfig    { return p.v.ReputationConfig() }

// TestSortedViewSnapshotEqual: a snapshot built through the registry's
// address-ordered fast path, or reusing the previous height's weights,
// equals the one built by lookup and sort, at the newest height and at
// every historical one.
func TestSortedViewSnapshotEqual(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reg := state.NewMemRegistry(state.DefaultReputationConfig())
		var addrs []cip11.Address
		heights := rapid.IntRange(1, 8).Draw(t, "heights")
		for h := uint64(1); h <= uint64(heights); h++ {
			for range rapid.IntRange(0, 6).Draw(t, "registrations") {
				var a cip11.Address
				a[0], a[1] = rapid.Byte().Draw(t, "a0"), byte(len(addrs))
				if slices.Contains(addrs, a) {
					continue
				}
				addrs = append(addrs, a)
				_ = reg.Register(h, state.Runner{Address: a, LastHeartbeat: h, Stake: cip11.U128From64(rapid.Uint64Range(0, 1e6).Draw(t, "stake")), ReputationX1e9: 1e9})
			}
			for range rapid.IntRange(0, 4).Draw(t, "updates") {
				if len(addrs) == 0 {
					break
				}
				r, _ := reg.Latest(addrs[rapid.IntRange(0, len(addrs)-1).Draw(t, "who")])
				r.Health = state.Health(rapid.IntRange(0, 3).Draw(t, "health"))
				r.Stake = cip11.U128From64(rapid.Uint64Range(0, 1e6).Draw(t, "stake2"))
				_ = reg.Update(h, r)
			}
		}
		p := cip11.DefaultParams()
		var prev *Snapshot
		for h := uint64(0); h <= uint64(heights); h++ {
			v, _ := reg.At(h)
			a, err1 := BuildSnapshot(v, h+1, p)
			b, err2 := BuildSnapshot(plainView{v}, h+1, p)
			c, err3 := BuildSnapshotFrom(v, h+1, p, prev) // weights reused from the previous height
			if err1 != nil || err2 != nil || err3 != nil || !slices.Equal(a.Leaves, b.Leaves) || !slices.Equal(a.Leaves, c.Leaves) {
				t.Fatalf("height %d: snapshots differ (%v, %v, %v)", h, err1, err2, err3)
			}
			prev = c
		}
	})
}
