package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/textform"
)

// TestUppercaseHexRejected pins D18's "lowercase hex": a copy of a vector
// file whose signature was uppercased must not agree.
func TestUppercaseHexRejected(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(vectorDir, "seed_verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file File
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Name      string `json:"name"`
		Signature string `json:"signature"`
	}
	if err := json.Unmarshal(file.Vectors[0], &v); err != nil || strings.ToUpper(v.Signature) == v.Signature {
		t.Fatalf("first seed_verify vector has no lowercase signature to uppercase (%v)", err)
	}
	tampered := bytes.Replace(b, []byte(`"`+v.Signature+`"`), []byte(`"`+strings.ToUpper(v.Signature)+`"`), 1)
	_, results, err := CheckBytes(tampered)
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Name != v.Name || results[0].Agree {
		t.Fatalf("uppercased signature of %s accepted: %+v", v.Name, results[0])
	}
	if _, err := Unhex(strings.ToUpper(v.Signature)); !errors.Is(err, textform.ErrUppercaseHex) || !errors.Is(err, ErrMalformedVector) {
		t.Fatalf("Unhex(uppercase) = %v", err)
	}
}

// textMutation rewrites one canonical D18 string into a non-canonical one.
type textMutation struct {
	name   string
	match  *regexp.Regexp
	mutate func(string) string
}

var textMutations = []textMutation{
	{
		name:   "uppercase_hex",
		match:  regexp.MustCompile(`^(?:[0-9a-f]{2})*[a-f][0-9a-f]*$`),
		mutate: strings.ToUpper,
	},
	{
		name:   "leading_zero",
		match:  regexp.MustCompile(`^(?:0|[1-9][0-9]*)$`),
		mutate: func(s string) string { return "0" + s },
	},
}

// TestNonCanonicalTextInputsRejected rewrites, one at a time, every hex or
// decimal string among the inputs of every positive vector (nested ones
// included) into a non-canonical form: no such copy may agree.
func TestNonCanonicalTextInputsRejected(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	for _, m := range textMutations {
		t.Run(m.name, func(t *testing.T) {
			tried, accepted := map[string]bool{}, map[string]bool{}
			for _, path := range files {
				checkMutatedFile(t, path, m, tried, accepted)
			}
			for _, p := range sortedKeys(accepted) {
				t.Errorf("%s: non-canonical input accepted", p)
			}
			if len(tried) < 50 {
				t.Fatalf("only %d input fields mutated", len(tried))
			}
		})
	}
}

// checkMutatedFile evaluates every single-leaf mutation of the inputs of
// every positive vector in the file at path, recording the paths it mutated
// in tried and those whose mutation still agreed in accepted.
func checkMutatedFile(t *testing.T, path string, m textMutation, tried, accepted map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file File
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	f, err := Lookup(file.Function)
	if err != nil {
		t.Fatal(err)
	}
	for i, raw := range file.Vectors {
		var fields map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&fields); err != nil {
			t.Fatal(err)
		}
		outs, err := f.Eval(raw)
		if _, neg := fields["error"]; neg || err != nil {
			continue
		}
		eachStringLeaf(fields, "", func(path, s string, set func(string)) {
			top, _, _ := strings.Cut(strings.TrimPrefix(path, "."), ".")
			top = strings.TrimSuffix(top, "[]")
			if _, isOut := outs[top]; isOut || top == "name" || !m.match.MatchString(s) {
				return
			}
			set(m.mutate(s))
			b, err := json.Marshal(fields)
			set(s)
			if err != nil {
				t.Fatal(err)
			}
			tried[f.Name+path] = true
			if checkOne(f, i, b).Agree {
				accepted[f.Name+path] = true
			}
		})
	}
}

// eachStringLeaf calls fn for every string value in v (objects in key
// order) with its path (".key", "[]" for any array index) and a setter for
// its slot. Object keys themselves are not visited.
func eachStringLeaf(v any, path string, fn func(path, s string, set func(string))) {
	visit := func(child any, path string, set func(string)) {
		if s, ok := child.(string); ok {
			fn(path, s, set)
			return
		}
		eachStringLeaf(child, path, fn)
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			visit(x[k], path+"."+k, func(s string) { x[k] = s })
		}
	case []any:
		for i := range x {
			visit(x[i], path+"[]", func(s string) { x[i] = s })
		}
	}
}

// TestDecodeVectorRejectsNonCanonicalText: whatever type decodes a field,
// DecodeVector holds the vector to the canonical spelling of what it read.
func TestDecodeVectorRejectsNonCanonicalText(t *testing.T) {
	type vec struct {
		Name   string      `json:"name"`
		Height uint64      `json:"height,string"`
		Hash   *cip11.Hash `json:"hash,omitempty"`
		List   []string    `json:"list,omitempty"`
		Out    string      `json:"out"`
	}
	const h = "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
	for _, ok := range []string{
		`{"name":"a","height":"7"}`,
		`{"name":"a","height":"0","hash":"` + h + `","list":[],"out":""}`,
	} {
		var v vec
		if err := DecodeVector(json.RawMessage(ok), &v); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		`{"name":"a","height":"07"}`,
		`{"name":"a","height":"7","hash":"` + strings.ToUpper(h) + `"}`,
		`{"Name":"a","height":"7"}`,
		`{"name":"a","height":"7","extra":1}`,
	} {
		var v vec
		if err := DecodeVector(json.RawMessage(bad), &v); !errors.Is(err, ErrMalformedVector) {
			t.Errorf("%s: %v, want ErrMalformedVector", bad, err)
		}
	}
}
