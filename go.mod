module github.com/cip11/cip11

go 1.26.8

require (
	github.com/holiman/uint256 v1.3.2
	golang.org/x/crypto v0.59.0
)

require (
	github.com/consensys/gnark-crypto v0.22.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
