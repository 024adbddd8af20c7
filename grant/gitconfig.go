package grant

import (
	"os"
	"path/filepath"
	"strings"
)

// gitConfigRefs are what git configuration files name that can make a file
// outside the repository's .git run code: the hooks directories
// (core.hooksPath) and the files they include (include.path,
// includeIf.*.path, whose conditions are taken to hold).
type gitConfigRefs struct {
	hooksPaths []string // "~/" expanded; a relative one is relative to where hooks run
	includes   []string // absolute, clean
}

// maxGitInclude bounds how deep includes are followed, as git's own limit
// of 10 does.
const maxGitInclude = 10

// readGitConfig adds to refs what the git configuration file p and the
// files it includes name. A file that cannot be read names nothing. Only
// what this needs of git's syntax is read: sections, keys, quoted values
// and comments.
func readGitConfig(p, home string, depth int, refs *gitConfigRefs) {
	if depth > maxGitInclude {
		return
	}
	b, err := readAtMost(p, maxGitConfig)
	if err != nil {
		return
	}
	// git skips a UTF-8 byte-order mark, and joins a line that ends in a
	// backslash with the next.
	text := strings.TrimPrefix(string(b), "\ufeff")
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\\\n", "")
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSpace(line[1:end]), " ")
			name, _, _ = strings.Cut(name, "\"")
			name, _, _ = strings.Cut(name, ".")
			section = strings.ToLower(strings.TrimSpace(name))
			// "[core] hooksPath = x" is one line to git.
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, value, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		value = gitValue(value)
		switch {
		case section == "core" && key == "hookspath" && value != "":
			refs.hooksPaths = append(refs.hooksPaths, gitPath(value, home, ""))
		case (section == "include" || section == "includeif") && key == "path" && value != "":
			inc := gitPath(value, home, filepath.Dir(p))
			refs.includes = append(refs.includes, inc)
			readGitConfig(inc, home, depth+1, refs)
		}
	}
}

// maxGitConfig bounds how much of a configuration file is read.
const maxGitConfig = 16 << 20

// gitValue is a configuration value as git reads it: quotes removed,
// backslash escapes applied, and a comment outside quotes dropped.
func gitValue(v string) string {
	v = strings.TrimLeft(v, " \t")
	var b strings.Builder
	keep := 0 // the length up to the last character that is not unquoted space
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
			continue
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(v[i])
			}
			keep = b.Len()
			continue
		case (c == '#' || c == ';') && !quoted:
			return b.String()[:keep]
		}
		b.WriteByte(c)
		if quoted || (c != ' ' && c != '\t') {
			keep = b.Len()
		}
	}
	return b.String()[:keep]
}

// gitPath is a path value as git takes it: "~/" is the home directory, and
// a relative path is relative to dir (left relative where dir is "").
func gitPath(v, home, dir string) string {
	switch {
	case v == "~" && home != "":
		return home
	case strings.HasPrefix(v, "~/") && home != "":
		return filepath.Join(home, v[2:])
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	}
	if dir == "" {
		return filepath.Clean(v)
	}
	return filepath.Join(dir, v)
}

// globalGitConfigs are the files git reads for every repository: the
// system's (GIT_CONFIG_SYSTEM where set, none with GIT_CONFIG_NOSYSTEM),
// and the user's (GIT_CONFIG_GLOBAL where set, else ~/.gitconfig and the
// XDG one).
func globalGitConfigs(home string) []string {
	var files []string
	switch sys := os.Getenv("GIT_CONFIG_SYSTEM"); {
	case os.Getenv("GIT_CONFIG_NOSYSTEM") != "":
	case sys != "":
		files = append(files, sys)
	default:
		files = append(files, "/etc/gitconfig")
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		return append(files, g)
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	return files
}

// gitGlobals is what the user's and the system's git configuration say,
// read once for a grant: its files (globalGitConfigs), what they name
// (includes, hooks paths) and, of those, the absolute hooks directories,
// resolved, where git runs hooks in every repository.
type gitGlobals struct {
	home      string
	files     []string
	refs      gitConfigRefs
	hooksDirs []string
}

// readGitGlobals reads the user's and the system's git configuration.
func readGitGlobals() *gitGlobals {
	home, _ := os.UserHomeDir()
	gl := &gitGlobals{home: home, files: globalGitConfigs(home)}
	for _, f := range gl.files {
		readGitConfig(f, home, 0, &gl.refs)
	}
	for _, hp := range gl.refs.hooksPaths {
		if !filepath.IsAbs(hp) {
			continue
		}
		if res, err := resolve(filepath.Clean(hp)); err == nil {
			gl.hooksDirs = append(gl.hooksDirs, res.path)
		}
	}
	return gl
}
