package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/cip11/cip11/internal/textform"
)

// Function describes one vector file.
type Function struct {
	Name        string // top-level "function" and file stem
	Spec        string // e.g. "§9.2"
	Description string
	// Generate returns the vectors in file order. Each element marshals to a
	// JSON object whose first field is "name"; a negative vector carries
	// "error" instead of outputs.
	Generate func() ([]any, error)
	// Eval recomputes a vector's outputs from its inputs. It returns the
	// outputs by field name, or an error wrapping one of [Sentinels].
	Eval func(vector json.RawMessage) (map[string]any, error)
}

// Sentinel names an exported sentinel error for negative vectors.
type Sentinel struct {
	Name string
	Err  error
}

// File is the on-disk shape of a vector file (DECISIONS D18 plus "function").
type File struct {
	Function    string            `json:"function"`
	Spec        string            `json:"spec"`
	Description string            `json:"description"`
	Vectors     []json.RawMessage `json:"vectors"`
}

// Errors returned by the checker itself.
var (
	ErrUnknownFunction = errors.New("conformance: unknown function")
	ErrMalformedVector = errors.New("conformance: malformed vector")
	ErrUnknownSentinel = errors.New("conformance: error is not a known sentinel")
	ErrNoVectors       = errors.New("conformance: file has no vectors")
)

// Functions lists every function with vectors, in file-name order.
func Functions() []Function {
	var all []Function
	for _, group := range [][]Function{
		seedFunctions(), merkleFunctions(), presenceFunctions(), presenceMachineryFunctions(), mruFunctions(),
		selectionFunctions(), wireFunctions(), blockheaderFunctions(), cometbftFunctions(), reconfigureFunctions(),
	} {
		all = append(all, group...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// Sentinels lists every sentinel a negative vector may name. Order matters
// only when one error wraps two sentinels: the first match wins.
func Sentinels() []Sentinel {
	var all []Sentinel
	for _, group := range [][]Sentinel{
		reconfigureSentinels(), cometbftSentinels(), seedSentinels(), merkleSentinels(), presenceSentinels(), presenceMachinerySentinels(), mruSentinels(),
		selectionSentinels(), wireSentinels(), blockheaderSentinels(), dcborSentinels(), gossipSentinels(),
	} {
		all = append(all, group...)
	}
	return all
}

// SentinelName returns the exported name of the first sentinel err wraps.
func SentinelName(err error) (string, error) {
	for _, s := range Sentinels() {
		if errors.Is(err, s.Err) {
			return s.Name, nil
		}
	}
	return "", fmt.Errorf("%w: %v", ErrUnknownSentinel, err)
}

// Lookup finds a function by name.
func Lookup(name string) (Function, error) {
	for _, f := range Functions() {
		if f.Name == name {
			return f, nil
		}
	}
	return Function{}, fmt.Errorf("%w: %q", ErrUnknownFunction, name)
}

// Render produces the canonical bytes of f's vector file.
func Render(f Function) ([]byte, error) {
	vs, err := f.Generate()
	if err != nil {
		return nil, fmt.Errorf("generate %s: %w", f.Name, err)
	}
	out := struct {
		Function    string `json:"function"`
		Spec        string `json:"spec"`
		Description string `json:"description"`
		Vectors     []any  `json:"vectors"`
	}{f.Name, f.Spec, f.Description, vs}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode %s: %w", f.Name, err)
	}
	return buf.Bytes(), nil
}

// WriteAll renders every function into dir as NAME.json.
func WriteAll(dir string) error {
	for _, f := range Functions() {
		b, err := Render(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Result is the verdict on one vector.
type Result struct {
	Name   string
	Agree  bool
	Detail string // why it disagrees
}

// CheckFile evaluates every vector of the file at path.
func CheckFile(path string) (string, []Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	return CheckBytes(b)
}

// CheckBytes evaluates every vector of a vector file held in memory and
// returns the file's function name and one result per vector. A file with
// no vectors is an error ([ErrNoVectors]): it checks nothing.
func CheckBytes(b []byte) (string, []Result, error) {
	var file File
	if err := json.Unmarshal(b, &file); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrMalformedVector, err)
	}
	f, err := Lookup(file.Function)
	if err != nil {
		return file.Function, nil, err
	}
	if len(file.Vectors) == 0 {
		return file.Function, nil, fmt.Errorf("%w: %s", ErrNoVectors, file.Function)
	}
	results := make([]Result, 0, len(file.Vectors))
	for i, raw := range file.Vectors {
		results = append(results, checkOne(f, i, raw))
	}
	return file.Function, results, nil
}

// checkOne evaluates vector i. A negative vector agrees when the evaluator
// fails with the named sentinel; a positive one when every output it carries
// equals the evaluator's. Outputs the evaluator returns but the vector omits
// (derived extras such as canonical_encoding) are not compared, but a vector
// must carry at least one output or "error".
func checkOne(f Function, i int, raw json.RawMessage) Result {
	r := Result{Name: fmt.Sprintf("#%d", i)}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		r.Detail = "not a JSON object"
		return r
	}
	if n, ok := fields["name"]; ok {
		_ = json.Unmarshal(n, &r.Name)
	}
	got, evalErr := f.Eval(raw)
	if wantRaw, isNeg := fields["error"]; isNeg {
		r.Detail = checkError(wantRaw, evalErr)
	} else if evalErr != nil {
		r.Detail = fmt.Sprintf("unexpected error: %v", evalErr)
	} else {
		r.Detail = checkOutputs(got, fields)
	}
	r.Agree = r.Detail == ""
	return r
}

// checkError returns why evalErr is not the sentinel named by wantRaw, or "".
func checkError(wantRaw json.RawMessage, evalErr error) string {
	var want string
	if err := json.Unmarshal(wantRaw, &want); err != nil {
		return fmt.Sprintf("\"error\" is not a string: %s", wantRaw)
	}
	if evalErr == nil {
		return fmt.Sprintf("want error %s, got success", want)
	}
	if name, err := SentinelName(evalErr); err != nil || name != want {
		return fmt.Sprintf("want error %s, got %v", want, evalErr)
	}
	return ""
}

// checkOutputs returns why the outputs in fields differ from got, or "".
func checkOutputs(got map[string]any, fields map[string]json.RawMessage) string {
	keys := sortedKeys(got)
	compared := 0
	for _, k := range keys {
		wantRaw, ok := fields[k]
		if !ok {
			continue
		}
		compared++
		if !jsonEqual(got[k], wantRaw) {
			g, _ := json.Marshal(got[k])
			return fmt.Sprintf("field %q: want %s, got %s", k, wantRaw, g)
		}
	}
	if compared == 0 {
		return fmt.Sprintf("vector carries no output (%s) and no \"error\"", strings.Join(keys, ", "))
	}
	return ""
}

func jsonEqual(got any, want json.RawMessage) bool {
	g, err := json.Marshal(got)
	if err != nil {
		return false
	}
	return reflect.DeepEqual(normalize(g), normalize(want))
}

func normalize(b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return struct{}{} // never equal to a decoded value
	}
	return v
}

// DecodeVector strictly decodes a vector into dst (a struct with json tags
// covering both its inputs and outputs): unknown fields are rejected, and
// every field the vector carries must re-encode from dst to exactly the
// value it was read from, so a non-canonical spelling (uppercase hex, a
// decimal with a leading zero, a key in the wrong case) is
// [ErrMalformedVector] whichever type decoded it.
func DecodeVector(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedVector, err)
	}
	re, err := json.Marshal(dst)
	if err != nil {
		return fmt.Errorf("%w: re-encoding: %v", ErrMalformedVector, err)
	}
	if path := nonCanonical(normalize(raw), normalize(re), ""); path != "" {
		return fmt.Errorf("%w: %s is not in canonical form", ErrMalformedVector, path)
	}
	return nil
}

// nonCanonical returns the path of the first value in read that its
// re-encoding re does not reproduce, or "". A key re lacks is fine when
// read holds an empty value there (an omitempty field).
func nonCanonical(read, re any, path string) string {
	switch r := read.(type) {
	case map[string]any:
		m, ok := re.(map[string]any)
		if !ok {
			return orRoot(path)
		}
		for _, k := range sortedKeys(r) {
			e, ok := m[k]
			if !ok {
				if isEmptyJSON(r[k]) {
					continue
				}
				return path + "." + k
			}
			if p := nonCanonical(r[k], e, path+"."+k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		l, ok := re.([]any)
		if !ok || len(l) != len(r) {
			return orRoot(path)
		}
		for i := range r {
			if p := nonCanonical(r[i], l[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	}
	if !reflect.DeepEqual(read, re) {
		return orRoot(path)
	}
	return ""
}

func orRoot(path string) string {
	if path == "" {
		return "the vector"
	}
	return path
}

func isEmptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		return x == "0"
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Hex is lowercase hex without 0x (DECISIONS D18).
func Hex(b []byte) string { return textform.Hex(b) }

// Unhex strictly decodes a D18 byte string (lowercase hex, even length); the
// error wraps [ErrMalformedVector] and the textform sentinel.
func Unhex(s string) ([]byte, error) {
	b, err := textform.ParseHex(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedVector, err)
	}
	return b, nil
}
