//go:build !linux

package grant

// treeFolds: masks are made on Linux alone, so elsewhere no tree is
// refused for folding case.
func treeFolds(string) (bool, string) { return false, "" }

// dirFolds is treeFolds for one directory.
func dirFolds(dir string) (bool, string) { return treeFolds(dir) }
