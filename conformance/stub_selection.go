package conformance

// selectionFunctions lists the vector functions owned by package selection.
func selectionFunctions() []Function { return nil }

// selectionSentinels lists package selection's exported sentinels for negative vectors.
func selectionSentinels() []Sentinel { return nil }
