package presence_test

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/state"
)

func ExampleDecode() {
	// Registry of 10 runners; indices 0, 3 and 9 present, as a bitmap and as a sparse list.
	bitmap := []byte{0x01, 0x00, 0x09, 0x02}
	sparse := []byte{0x01, 0x01, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 9}
	a, _ := presence.Decode(bitmap, 10)
	b, _ := presence.Decode(sparse, 10)
	fmt.Println(a.Indices(), b.Indices(), a.Equal(b))

	_, err := presence.Decode([]byte{0x01, 0x00, 0x09, 0x06}, 10) // bit 10 set
	fmt.Println(err)
	// Output:
	// [0 3 9] [0 3 9] true
	// presence: bitmap bit set beyond the registry: bit 10, registry size 10
}

func ExampleEncode() {
	few, _ := presence.NewSet(5000, []int{17, 4999})
	many, _ := presence.NewSet(16, []int{1, 2, 3})
	fmt.Printf("%x\n%x\n", presence.Encode(few), presence.Encode(many))
	// Output:
	// 0101000000020000001100001387
	// 01000e00
}

func ExampleNewView() {
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	a, b, c := cip11.Address{0xaa}, cip11.Address{0xbb}, cip11.Address{0xcc}
	for _, r := range []cip11.Address{a, b, c} {
		_ = reg.Register(1, state.Runner{Address: r})
	}
	parent, _ := reg.At(1) // registry(H−1) for block H = 2

	// Proposer side: local presence → PresenceInputV1 bytes.
	field := presence.Encode(presence.FromAddresses(parent, []cip11.Address{c, a}))

	// Every node: decode once per block, then O(1) membership for selection.
	bp, err := presence.ResolveBlockPresence(cip11.Params{PresentFirstEnabled: true}, false, field, len(parent.ActiveRunners()))
	if err != nil {
		panic(err)
	}
	view, _ := presence.NewView(bp.Present, parent)
	fmt.Printf("%x %v %v %v\n", field, view.IsPresent(a), view.IsPresent(b), view.IsPresent(c))
	// Output:
	// 010005 true false true
}

func ExampleResolveBlockPresence() {
	field := []byte{0x01, 0x00, 0x09, 0x02} // {0, 3, 9} of 10
	off := cip11.Params{PresenceShadowEnabled: true}
	modeB := cip11.Params{PresentFirstEnabled: true}

	bp, _ := presence.ResolveBlockPresence(off, false, field, 10) // rule 1: shadow only
	fmt.Println(bp.Source == presence.SourceNone, bp.Present.Len(), bp.Shadow.Indices())

	bp, _ = presence.ResolveBlockPresence(modeB, false, field, 10) // rule 2: the field is the present set
	fmt.Println(bp.Source == presence.SourceBlockField, bp.Present.Indices())

	_, err := presence.ResolveBlockPresence(modeB, false, nil, 10) // rule 2: absent ⇒ block-invalid
	fmt.Println(errors.Is(err, presence.ErrBlockPresenceInvalid))

	bp, _ = presence.ResolveBlockPresence(modeB, true, nil, 10) // rule 3: Mode A effective, field ignored
	fmt.Println(bp.Source == presence.SourceModeAState)
	// Output:
	// true 0 [0 3 9]
	// true [0 3 9]
	// true
	// true
}
