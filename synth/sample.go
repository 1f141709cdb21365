package synth

import (
	"bytes"
	_ "embed"
	"io"
)

// sampleLog is the shipped sample chain (docs/chainlog.md "The sample
// chain"). Read-only: the one package-level variable, required by
// go:embed. Regenerate only on purpose (it pins the engine's outputs):
//
//	go run ./cmd/cip11 gen -seed 1 -runners 5000 -blocks 1000 -o synth/testdata/sample.jsonl.gz
//
//go:embed testdata/sample.jsonl.gz
var sampleLog []byte

// Sample returns the embedded sample chain log (gzip JSON Lines).
func Sample() io.Reader { return bytes.NewReader(sampleLog) }
