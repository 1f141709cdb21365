package mru_test

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
)

func ExampleRecordResult() {
	p := cip11.DefaultParams()
	p.MRUActivationHeight = 1_000 // governance flag day (§9.4)
	store := mru.NewMemStore()
	submitter := cip11.Address{0x5a}
	a, b, c := cip11.Address{0xa}, cip11.Address{0xb}, cip11.Address{0xc}

	// Committee stored in selection order [c, a, b]; c's bundle did not verify.
	o := mru.Outcome{Committee: []cip11.Address{c, a, b}, Matching: []cip11.Address{b, a, c}, RunnersUnrewarded: []cip11.Address{c}}
	_, wrote, _ := mru.RecordResult(store, p, submitter, mru.Llm, o, 999) // below activation: no write
	rec, wrote2, _ := mru.RecordResult(store, p, submitter, mru.Llm, o, 1_000)
	fmt.Println(wrote, wrote2, rec.Runner == a, rec.SetAt)
	// Output: false true true 1000
}

func ExampleLookup() {
	p := cip11.DefaultParams()
	p.MRUActivationHeight = 0
	store := mru.NewMemStore()
	submitter, runner := cip11.Address{0x5a}, cip11.Address{0xa}
	_ = store.Put(submitter, mru.Http, mru.Record{Runner: runner, SetAt: 100})

	for _, h := range []uint64{50, 100 + p.MRUTTLBlocks, 101 + p.MRUTTLBlocks} {
		_, ok, _ := mru.Lookup(store, p, submitter, mru.Http, h)
		fmt.Println(h, ok)
	}
	// Output:
	// 50 true
	// 1380 true
	// 1381 false
}

func ExampleWinner() {
	a, b, c := cip11.Address{0xa}, cip11.Address{0xb}, cip11.Address{0xc}
	w, ok := mru.Winner([]cip11.Address{c, a, b}, []cip11.Address{a, c}, []cip11.Address{c}, nil)
	fmt.Println(w == a, ok)
	// Output: true true
}
