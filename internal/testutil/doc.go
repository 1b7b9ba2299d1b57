// Package testutil holds the helpers that tests of more than one package share, so that
// no test imports another package's test code. It imports only the standard library and
// is imported only by _test.go files.
package testutil
