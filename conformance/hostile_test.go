package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestHostileVectorsNeverPanic: `cip11 vectors check` reads untrusted files.
// Every field of every checked-in vector is replaced in turn by hostile
// values (wrong types, huge numbers, bad hex, nulls); evaluation must return
// a verdict or an error, never panic.
func TestHostileVectorsNeverPanic(t *testing.T) {
	hostile := []json.RawMessage{
		json.RawMessage(`null`), json.RawMessage(`""`), json.RawMessage(`"zz"`), json.RawMessage(`"0x00"`),
		json.RawMessage(`-1`), json.RawMessage(`4294967296`), json.RawMessage(`1e300`), json.RawMessage(`[]`),
		json.RawMessage(`{}`), json.RawMessage(`"18446744073709551616"`), json.RawMessage(`[null]`), json.RawMessage(`true`),
	}
	files, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	evaluated := 0
	for _, path := range files {
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
		for _, raw := range file.Vectors {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			keys := make([]string, 0, len(fields))
			for k := range fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				orig := fields[k]
				for _, h := range hostile {
					fields[k] = h
					mutated, _ := json.Marshal(fields)
					evalNoPanic(t, f, fmt.Sprintf("%s/%s", file.Function, k), mutated)
					evaluated++
				}
				fields[k] = orig
			}
		}
	}
	if evaluated < 1000 {
		t.Fatalf("only %d mutated vectors evaluated", evaluated)
	}
}

func evalNoPanic(t *testing.T, f Function, where string, raw json.RawMessage) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic on %s: %v", where, raw, r)
		}
	}()
	checkOne(f, 0, raw)
}
