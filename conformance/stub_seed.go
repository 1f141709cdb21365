package conformance

// seedFunctions lists the vector functions owned by package seed.
func seedFunctions() []Function { return nil }

// seedSentinels lists package seed's exported sentinels for negative vectors.
func seedSentinels() []Sentinel { return nil }
