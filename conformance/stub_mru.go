package conformance

// mruFunctions lists the vector functions owned by package mru.
func mruFunctions() []Function { return nil }

// mruSentinels lists package mru's exported sentinels for negative vectors.
func mruSentinels() []Sentinel { return nil }
