// Package repotest holds tests about the repository as a whole: every package
// has a doc comment, and the packages that cross the sandbox boundary import
// only what DESIGN.md §8 allows.
package repotest
