// Package ci holds the tests of the scripts in .ci/ that `make test` runs: a directory whose name
// begins with a dot is one `go test ./...` does not enter.
package ci
