package grant

import (
	"bufio"
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
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSpace(line[1:end]), " ")
			name, _, _ = strings.Cut(name, "\"")
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
// system's, and the user's (GIT_CONFIG_GLOBAL where set, else
// ~/.gitconfig and the XDG one).
func globalGitConfigs(home string) []string {
	files := []string{"/etc/gitconfig"}
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
