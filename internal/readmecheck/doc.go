// Package readmecheck holds the test that keeps the README's Go code blocks
// compiling (and its test blocks passing). It has no code of its own.
package readmecheck
