package conformance

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
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
)

// Functions lists every function with vectors, in file-name order.
func Functions() []Function {
	var all []Function
	for _, group := range [][]Function{
		seedFunctions(), merkleFunctions(), presenceFunctions(), presenceMachineryFunctions(), mruFunctions(),
		selectionFunctions(), wireFunctions(),
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
		seedSentinels(), merkleSentinels(), presenceSentinels(), presenceMachinerySentinels(), mruSentinels(),
		selectionSentinels(), wireSentinels(),
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
// returns the file's function name and one result per vector.
func CheckBytes(b []byte) (string, []Result, error) {
	var file File
	if err := json.Unmarshal(b, &file); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrMalformedVector, err)
	}
	f, err := Lookup(file.Function)
	if err != nil {
		return file.Function, nil, err
	}
	results := make([]Result, 0, len(file.Vectors))
	for i, raw := range file.Vectors {
		results = append(results, checkOne(f, i, raw))
	}
	return file.Function, results, nil
}

func checkOne(f Function, i int, raw json.RawMessage) Result {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Result{Name: fmt.Sprintf("#%d", i), Detail: "not a JSON object"}
	}
	r := Result{Name: fmt.Sprintf("#%d", i)}
	if n, ok := fields["name"]; ok {
		_ = json.Unmarshal(n, &r.Name)
	}
	got, evalErr := f.Eval(raw)
	if wantRaw, isNeg := fields["error"]; isNeg {
		var want string
		_ = json.Unmarshal(wantRaw, &want)
		if evalErr == nil {
			r.Detail = fmt.Sprintf("want error %s, got success", want)
			return r
		}
		name, err := SentinelName(evalErr)
		if err != nil || name != want {
			r.Detail = fmt.Sprintf("want error %s, got %v", want, evalErr)
			return r
		}
		r.Agree = true
		return r
	}
	if evalErr != nil {
		r.Detail = fmt.Sprintf("unexpected error: %v", evalErr)
		return r
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		wantRaw, ok := fields[k]
		if !ok {
			r.Detail = fmt.Sprintf("vector lacks output field %q", k)
			return r
		}
		if !jsonEqual(got[k], wantRaw) {
			g, _ := json.Marshal(got[k])
			r.Detail = fmt.Sprintf("field %q: want %s, got %s", k, wantRaw, g)
			return r
		}
	}
	r.Agree = true
	return r
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
// covering both its inputs and outputs).
func DecodeVector(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedVector, err)
	}
	return nil
}

// Hex is lowercase hex without 0x (DECISIONS D18).
func Hex(b []byte) string { return hex.EncodeToString(b) }

// Unhex decodes a D18 byte string.
func Unhex(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: bad hex: %v", ErrMalformedVector, err)
	}
	return b, nil
}
