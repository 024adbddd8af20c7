//go:build !linux

package grant

// scanNested is walkNested where no faster scan is written.
func scanNested(r string, rootIsGit bool, others []string, found nestedFound) bool {
	return walkNested(r, rootIsGit, others, found)
}

// markedPlaceholder reports whether p carries PlaceholderXattr: never
// where placeholders are not made.
func markedPlaceholder(string) bool { return false }
