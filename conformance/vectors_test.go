package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

const vectorDir = "testdata/vectors"

// TestVectorsUpToDate fails when a checked-in vector file differs from what
// its generator writes: vectors change only on purpose.
func TestVectorsUpToDate(t *testing.T) {
	for _, f := range Functions() {
		t.Run(f.Name, func(t *testing.T) {
			want, err := Render(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(vectorDir, f.Name+".json"))
			if err != nil {
				t.Fatalf("%v (run go generate ./conformance)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s.json is stale or was edited by hand (go generate ./conformance rewrites it)", f.Name)
			}
		})
	}
}

// TestVectorsAgree evaluates every checked-in vector file with this implementation.
func TestVectorsAgree(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		fn, results, err := CheckFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(results) == 0 {
			t.Errorf("%s (%s): no vectors", path, fn)
		}
		for _, r := range results {
			if !r.Agree {
				t.Errorf("%s/%s: %s", fn, r.Name, r.Detail)
			}
		}
	}
}
