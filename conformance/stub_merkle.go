package conformance

// merkleFunctions lists the vector functions owned by package merkle.
func merkleFunctions() []Function { return nil }

// merkleSentinels lists package merkle's exported sentinels for negative vectors.
func merkleSentinels() []Sentinel { return nil }
