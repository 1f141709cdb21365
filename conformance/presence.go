package conformance

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
)

// presenceFunctions lists the vector functions owned by package presence.
func presenceFunctions() []Function {
	return []Function{
		{
			Name: "presence_input", Spec: "§7.2",
			Description: "PresenceInputV1 decoding against |registry(H−1)| = registry_size: version 0x01 ‖ kind ‖ body; kind 0x00 bitmap of exactly ceil(n/8) bytes, LSB-first, no bit ≥ n set; kind 0x01 sparse u32 BE count ‖ count strictly ascending u32 BE indices < n, body exactly 4+4·count bytes. present lists the decoded indices ascending; canonical_encoding is the proposer encoder's output for that set (shorter kind, bitmap on a tie: DECISIONS D17) — decoders accept either valid kind and never re-canonicalize. Negative vectors name the §7.2 malformation; when several apply, the first met reading the bytes in order (within one sparse index: order before range).",
			Generate:    presenceGenInput, Eval: presenceEvalInput,
		},
		{
			Name: "presence_block", Spec: "§7.2",
			Description: "The §7.2 flag- and mode-scoped PresenceInput validity rules for one block. field is the proposer's PresenceInputV1 (hex) or null when the block has none. Rule 1 (present_first_enabled false, taking precedence over mode_a_effective): source none, present empty, and shadow the decoded field when shadow_enabled and it decodes (else null); never an error. Rule 2 (present_first_enabled, not mode_a_effective): source block_field and the decoded set; absent or malformed is ErrBlockPresenceInvalid. Rule 3 (present_first_enabled and mode_a_effective): source mode_a_state, the field ignored even if malformed, present empty here (derived from presence_proven_until by the caller).",
			Generate:    presenceGenBlock, Eval: presenceEvalBlock,
		},
	}
}

// presenceSentinels lists package presence's exported sentinels for negative
// vectors. ErrBlockPresenceInvalid comes first: it wraps the malformation
// that caused it, and a presence_block vector names the block-level verdict.
func presenceSentinels() []Sentinel {
	return []Sentinel{
		{"ErrBlockPresenceInvalid", presence.ErrBlockPresenceInvalid},
		{"ErrTruncatedHeader", presence.ErrTruncatedHeader},
		{"ErrUnknownVersion", presence.ErrUnknownVersion},
		{"ErrUnknownKind", presence.ErrUnknownKind},
		{"ErrBitmapLength", presence.ErrBitmapLength},
		{"ErrSparseLength", presence.ErrSparseLength},
		{"ErrBitBeyondRegistry", presence.ErrBitBeyondRegistry},
		{"ErrSparseNotAscending", presence.ErrSparseNotAscending},
		{"ErrIndexBeyondRegistry", presence.ErrIndexBeyondRegistry},
		{"ErrFieldAbsent", presence.ErrFieldAbsent},
	}
}

// presenceInputIn is the input half of a presence_input vector.
type presenceInputIn struct {
	Name         string `json:"name"`
	RegistrySize int    `json:"registry_size"`
	Encoding     string `json:"encoding"`
}

// presenceInputVector is a whole vector as read back: inputs plus either the
// outputs or the error.
type presenceInputVector struct {
	presenceInputIn
	Present           []int  `json:"present"`
	CanonicalEncoding string `json:"canonical_encoding"`
	Error             string `json:"error"`
}

type presenceInputOK struct {
	presenceInputIn
	Present           []int  `json:"present"`
	CanonicalEncoding string `json:"canonical_encoding"`
}

type presenceInputErr struct {
	presenceInputIn
	Error string `json:"error"`
}

// maxVectorRegistry bounds registry_size in vectors: a vector file is
// untrusted input to `cip11 vectors check`, and decoding allocates n/8 bytes.
const maxVectorRegistry = 1 << 26

func presenceDecode(registrySize int, encoding string) (map[string]any, error) {
	if registrySize > maxVectorRegistry {
		return nil, fmt.Errorf("%w: registry_size %d above %d", ErrMalformedVector, registrySize, maxVectorRegistry)
	}
	b, err := Unhex(encoding)
	if err != nil {
		return nil, err
	}
	s, err := presence.Decode(b, registrySize)
	if err != nil {
		return nil, err
	}
	return map[string]any{"present": s.Indices(), "canonical_encoding": Hex(presence.Encode(s))}, nil
}

// presenceCat joins hex pieces: version, kind, body parts.
func presenceCat(parts ...string) string { return strings.Join(parts, "") }

func presenceGenInput() ([]any, error) {
	const sp = "0101" // version ‖ sparse kind
	const bm = "0100" // version ‖ bitmap kind
	type spec struct {
		presenceInputIn
		err string
	}
	in := func(name string, n int, enc string) presenceInputIn { return presenceInputIn{name, n, enc} }
	vs := []spec{
		// {0,3,9} of 10: bitmap byte 0 = bits 0,3 = 0x09, byte 1 = bit 1 (index 9) = 0x02.
		{in("bitmap_0_3_9_of_10", 10, bm+"0902"), ""},
		{in("sparse_0_3_9_of_10_same_set", 10, presenceCat(sp, "00000003", "00000000", "00000003", "00000009")), ""},
		{in("bitmap_empty_of_10", 10, bm+"0000"), ""},
		{in("sparse_empty_of_10", 10, sp+"00000000"), ""},
		{in("bitmap_empty_of_40_non_minimal", 40, bm+"0000000000"), ""},
		{in("sparse_empty_of_40_canonical", 40, sp+"00000000"), ""},
		{in("bitmap_registry_0", 0, bm), ""},
		{in("sparse_registry_0", 0, sp+"00000000"), ""},
		{in("bitmap_registry_1_present", 1, bm+"01"), ""},
		{in("bitmap_all_of_8", 8, bm+"ff"), ""},
		{in("bitmap_all_of_13_not_multiple_of_8", 13, bm+"ff1f"), ""},
		{in("sparse_all_of_13", 13, presenceCat(sp, "0000000d", "00000000", "00000001", "00000002", "00000003", "00000004", "00000005", "00000006", "00000007", "00000008", "00000009", "0000000a", "0000000b", "0000000c")), ""},
		{in("bitmap_last_of_65", 65, bm+"0000000000000000"+"01"), ""},
		{in("bitmap_63_64_of_70", 70, bm+"0000000000000080"+"01"), ""},
		{in("tie_64_one_present_bitmap", 64, bm+"2000000000000000"), ""},
		{in("tie_64_one_present_sparse", 64, sp+"00000001"+"00000005"), ""},
		{in("sparse_1_of_65_canonical", 65, sp+"00000001"+"00000005"), ""},
		{in("sparse_last_of_5000", 5000, sp+"00000001"+"00001387"), ""},

		{in("empty_input", 10, ""), "ErrTruncatedHeader"},
		{in("version_only", 10, "01"), "ErrTruncatedHeader"},
		{in("wrong_version_single_byte", 10, "02"), "ErrUnknownVersion"},
		{in("wrong_version_0x00", 10, "00000000"), "ErrUnknownVersion"},
		{in("wrong_version_0x02", 10, "02000902"), "ErrUnknownVersion"},
		{in("unknown_kind_0x02", 10, "01020902"), "ErrUnknownKind"},
		{in("unknown_kind_0xff_no_body", 0, "01ff"), "ErrUnknownKind"},
		{in("bitmap_one_byte_short", 10, bm+"09"), "ErrBitmapLength"},
		{in("bitmap_one_byte_long", 10, bm+"090200"), "ErrBitmapLength"},
		{in("bitmap_body_for_registry_0", 0, bm+"00"), "ErrBitmapLength"},
		{in("bitmap_missing_body", 1, bm), "ErrBitmapLength"},
		{in("bitmap_bit_10_of_10", 10, bm+"0904"), "ErrBitBeyondRegistry"},
		{in("bitmap_bit_7_of_1", 1, bm+"80"), "ErrBitBeyondRegistry"},
		{in("bitmap_bit_69_of_69", 69, bm+"0000000000000000"+"20"), "ErrBitBeyondRegistry"},
		{in("sparse_missing_count", 10, sp), "ErrSparseLength"},
		{in("sparse_count_truncated", 10, sp+"000000"), "ErrSparseLength"},
		{in("sparse_count_1_no_index", 10, sp+"00000001"), "ErrSparseLength"},
		{in("sparse_count_0_with_index", 10, sp+"00000000"+"00000003"), "ErrSparseLength"},
		{in("sparse_trailing_byte", 10, sp+"00000001"+"00000003"+"00"), "ErrSparseLength"},
		{in("sparse_count_u32_max", 10, sp+"ffffffff"), "ErrSparseLength"},
		{in("sparse_duplicate_index", 10, presenceCat(sp, "00000002", "00000003", "00000003")), "ErrSparseNotAscending"},
		{in("sparse_descending_index", 10, presenceCat(sp, "00000002", "00000003", "00000002")), "ErrSparseNotAscending"},
		{in("sparse_index_equals_registry_size", 10, sp+"00000001"+"0000000a"), "ErrIndexBeyondRegistry"},
		{in("sparse_index_registry_0", 0, sp+"00000001"+"00000000"), "ErrIndexBeyondRegistry"},
		{in("sparse_index_u32_max", 10, sp+"00000001"+"ffffffff"), "ErrIndexBeyondRegistry"},
		{in("precedence_descending_before_later_out_of_range", 10, presenceCat(sp, "00000003", "00000005", "00000003", "0000000b")), "ErrSparseNotAscending"},
		{in("precedence_out_of_range_before_later_descending", 10, presenceCat(sp, "00000002", "0000000b", "00000003")), "ErrIndexBeyondRegistry"},
		{in("precedence_length_before_order", 10, presenceCat(sp, "00000003", "00000003", "00000003")), "ErrSparseLength"},
		{in("precedence_bitmap_length_before_bits", 10, bm+"ffffff"), "ErrBitmapLength"},
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		got, err := presenceDecode(v.RegistrySize, v.Encoding)
		if err := presenceCheckNegative(v.Name, v.err, err); err != nil {
			return nil, err
		}
		if err != nil {
			out[i] = presenceInputErr{v.presenceInputIn, v.err}
			continue
		}
		out[i] = presenceInputOK{v.presenceInputIn, got["present"].([]int), got["canonical_encoding"].(string)}
	}
	return out, nil
}

// presenceCheckNegative keeps the hand-written expectations honest: a
// generator fails rather than write a vector the implementation disagrees with.
func presenceCheckNegative(name, want string, err error) error {
	if err == nil && want == "" {
		return nil
	}
	if err == nil {
		return fmt.Errorf("presence vector %s: want %s, got success", name, want)
	}
	if got, _ := SentinelName(err); got != want {
		return fmt.Errorf("presence vector %s: want %q, got %v", name, want, err)
	}
	return nil
}

func presenceEvalInput(raw json.RawMessage) (map[string]any, error) {
	var v presenceInputVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	return presenceDecode(v.RegistrySize, v.Encoding)
}

// presenceBlockIn is the input half of a presence_block vector.
type presenceBlockIn struct {
	Name                string  `json:"name"`
	PresentFirstEnabled bool    `json:"present_first_enabled"`
	ShadowEnabled       bool    `json:"shadow_enabled"`
	ModeAEffective      bool    `json:"mode_a_effective"`
	RegistrySize        int     `json:"registry_size"`
	Field               *string `json:"field"`
}

type presenceBlockVector struct {
	presenceBlockIn
	Source  string `json:"source"`
	Present []int  `json:"present"`
	Shadow  []int  `json:"shadow"`
	Error   string `json:"error"`
}

type presenceBlockOK struct {
	presenceBlockIn
	Source  string `json:"source"`
	Present []int  `json:"present"`
	Shadow  *[]int `json:"shadow"`
}

type presenceBlockErr struct {
	presenceBlockIn
	Error string `json:"error"`
}

var presenceSourceNames = map[presence.Source]string{
	presence.SourceNone: "none", presence.SourceBlockField: "block_field", presence.SourceModeAState: "mode_a_state",
}

func presenceResolve(v presenceBlockIn) (map[string]any, error) {
	var field []byte
	if v.Field != nil {
		b, err := Unhex(*v.Field)
		if err != nil {
			return nil, err
		}
		field = append([]byte{}, b...) // non-nil even when empty: present but empty
	}
	p := cip11.DefaultParams()
	p.PresentFirstEnabled, p.PresenceShadowEnabled = v.PresentFirstEnabled, v.ShadowEnabled
	if v.RegistrySize > maxVectorRegistry {
		return nil, fmt.Errorf("%w: registry_size %d above %d", ErrMalformedVector, v.RegistrySize, maxVectorRegistry)
	}
	bp, err := presence.ResolveBlockPresence(p, v.ModeAEffective, field, v.RegistrySize)
	if err != nil {
		return nil, err
	}
	var shadow *[]int
	if bp.HasShadow {
		s := bp.Shadow.Indices()
		shadow = &s
	}
	return map[string]any{"source": presenceSourceNames[bp.Source], "present": bp.Present.Indices(), "shadow": shadow}, nil
}

func presenceGenBlock() ([]any, error) {
	hex := func(s string) *string { return &s }
	valid, malformed, empty := hex("01000902"), hex("010009"), hex("010100000000")
	type flags struct{ pf, sh, ma bool }
	cases := []struct {
		name  string
		f     flags
		field *string
		err   string
	}{
		{"rule1_flags_off_valid_field", flags{}, valid, ""},
		{"rule1_shadow_valid_field", flags{sh: true}, valid, ""},
		{"rule1_shadow_malformed_field", flags{sh: true}, malformed, ""},
		{"rule1_shadow_absent_field", flags{sh: true}, nil, ""},
		{"rule1_malformed_field_not_invalid", flags{}, malformed, ""},
		{"rule1_precedes_mode_a_effective", flags{sh: true, ma: true}, valid, ""},
		{"rule2_valid_field", flags{pf: true}, valid, ""},
		{"rule2_valid_empty_set", flags{pf: true}, empty, ""},
		{"rule2_shadow_flag_irrelevant", flags{pf: true, sh: true}, valid, ""},
		{"rule2_absent_field_block_invalid", flags{pf: true}, nil, "ErrBlockPresenceInvalid"},
		{"rule2_empty_bytes_block_invalid", flags{pf: true}, hex(""), "ErrBlockPresenceInvalid"},
		{"rule2_malformed_field_block_invalid", flags{pf: true}, malformed, "ErrBlockPresenceInvalid"},
		{"rule2_index_beyond_registry_block_invalid", flags{pf: true}, hex("0101000000010000000a"), "ErrBlockPresenceInvalid"},
		{"rule3_valid_field_ignored", flags{pf: true, ma: true}, valid, ""},
		{"rule3_absent_field_allowed", flags{pf: true, ma: true}, nil, ""},
		{"rule3_malformed_field_ignored", flags{pf: true, ma: true}, malformed, ""},
	}
	out := make([]any, len(cases))
	for i, c := range cases {
		v := presenceBlockIn{Name: c.name, PresentFirstEnabled: c.f.pf, ShadowEnabled: c.f.sh, ModeAEffective: c.f.ma, RegistrySize: 10, Field: c.field}
		got, err := presenceResolve(v)
		if err := presenceCheckNegative(v.Name, c.err, err); err != nil {
			return nil, err
		}
		if err != nil {
			out[i] = presenceBlockErr{v, c.err}
			continue
		}
		out[i] = presenceBlockOK{v, got["source"].(string), got["present"].([]int), got["shadow"].(*[]int)}
	}
	return out, nil
}

func presenceEvalBlock(raw json.RawMessage) (map[string]any, error) {
	var v presenceBlockVector
	if err := DecodeVector(raw, &v); err != nil {
		return nil, err
	}
	return presenceResolve(v.presenceBlockIn)
}
