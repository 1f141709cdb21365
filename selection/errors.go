package selection

import "errors"

// ErrUnknownBranch is returned by [ParseBranch] for a name that is not one
// of the three §9.2 branches.
var ErrUnknownBranch = errors.New("selection: unknown branch")
