package conformance

// wireFunctions lists the vector functions owned by package wire.
func wireFunctions() []Function { return nil }

// wireSentinels lists package wire's exported sentinels for negative vectors.
func wireSentinels() []Sentinel { return nil }
