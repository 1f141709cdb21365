package conformance

// presenceFunctions lists the vector functions owned by package presence.
func presenceFunctions() []Function { return nil }

// presenceSentinels lists package presence's exported sentinels for negative vectors.
func presenceSentinels() []Sentinel { return nil }
