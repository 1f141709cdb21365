package presence

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
)

func params(presentFirst, shadow bool) cip11.Params {
	p := cip11.DefaultParams()
	p.PresentFirstEnabled, p.PresenceShadowEnabled = presentFirst, shadow
	return p
}

// TestResolveBlockPresence covers the §7.2 flag- and mode-scoped rules.
func TestResolveBlockPresence(t *testing.T) {
	valid := []byte{0x01, 0x00, 0x09, 0x02} // {0,3,9} of 10
	bad := []byte{0x01, 0x00, 0x09}         // ErrBitmapLength
	cases := []struct {
		name         string
		p            cip11.Params
		modeA        bool
		field        []byte
		source       Source
		present      []int
		shadow       []int // nil: no shadow
		shadowErr    error
		err, errCase error
	}{
		{"rule1_valid_no_shadow", params(false, false), false, valid, SourceNone, []int{}, nil, nil, nil, nil},
		{"rule1_valid_shadow", params(false, true), false, valid, SourceNone, []int{}, []int{0, 3, 9}, nil, nil, nil},
		{"rule1_malformed_shadow", params(false, true), false, bad, SourceNone, []int{}, nil, ErrBitmapLength, nil, nil},
		{"rule1_absent_shadow", params(false, true), false, nil, SourceNone, []int{}, nil, ErrFieldAbsent, nil, nil},
		{"rule1_malformed", params(false, false), false, bad, SourceNone, []int{}, nil, nil, nil, nil},
		{"rule1_precedes_mode_a", params(false, false), true, valid, SourceNone, []int{}, nil, nil, nil, nil},
		{"rule2_valid", params(true, false), false, valid, SourceBlockField, []int{0, 3, 9}, nil, nil, nil, nil},
		{"rule2_valid_empty", params(true, false), false, []byte{0x01, 0x01, 0, 0, 0, 0}, SourceBlockField, []int{}, nil, nil, nil, nil},
		{"rule2_absent", params(true, false), false, nil, 0, nil, nil, nil, ErrBlockPresenceInvalid, ErrFieldAbsent},
		{"rule2_empty_bytes", params(true, false), false, []byte{}, 0, nil, nil, nil, ErrBlockPresenceInvalid, ErrTruncatedHeader},
		{"rule2_malformed", params(true, true), false, bad, 0, nil, nil, nil, ErrBlockPresenceInvalid, ErrBitmapLength},
		{"rule3_valid_ignored", params(true, false), true, valid, SourceModeAState, []int{}, nil, nil, nil, nil},
		{"rule3_absent", params(true, false), true, nil, SourceModeAState, []int{}, nil, nil, nil, nil},
		{"rule3_malformed_ignored", params(true, false), true, bad, SourceModeAState, []int{}, nil, nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bp, err := ResolveBlockPresence(c.p, c.modeA, c.field, 10)
			if c.err != nil {
				if !errors.Is(err, c.err) || !errors.Is(err, c.errCase) {
					t.Fatalf("err = %v, want %v wrapping %v", err, c.err, c.errCase)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bp.Source != c.source || !slices.Equal(bp.Present.Indices(), c.present) || bp.Present.RegistrySize() != 10 {
				t.Fatalf("source %d present %v/%d, want %d %v/10", bp.Source, bp.Present.Indices(), bp.Present.RegistrySize(), c.source, c.present)
			}
			if bp.HasShadow != (c.shadow != nil) || (c.shadow != nil && !slices.Equal(bp.Shadow.Indices(), c.shadow)) {
				t.Fatalf("shadow %v %v, want %v", bp.HasShadow, bp.Shadow.Indices(), c.shadow)
			}
			if !errors.Is(bp.ShadowErr, c.shadowErr) || (c.shadowErr == nil) != (bp.ShadowErr == nil) {
				t.Fatalf("ShadowErr %v, want %v", bp.ShadowErr, c.shadowErr)
			}
		})
	}
	if _, err := ResolveBlockPresence(params(false, false), false, nil, -1); !errors.Is(err, ErrRegistrySize) {
		t.Errorf("negative registry size: %v", err)
	}
}
