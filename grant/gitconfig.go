package grant

import (
	"os"
	"path/filepath"
	"strings"
)

// gitConfigRefs are what git configuration files name that can make a file
// outside the repository's .git run code: the hooks directories
// (core.hooksPath), the template directories whose hooks are copied into
// every new repository (init.templateDir), the files they include
// (include.path, includeIf.*.path, whose conditions are taken to hold),
// and the commands and programs git runs (gitProgramKeys), each as its
// words.
type gitConfigRefs struct {
	hooksPaths   []string   // "~/" expanded; a relative one is relative to where hooks run
	templateDirs []string   // as hooksPaths
	includes     []string   // absolute, clean
	commands     [][]string // commandWords of each
}

// gitProgramKeys are the keys, as "section.key" whatever the subsection,
// whose values name a program git runs or a command it gives the shell:
// a sandbox that could write what one names in a read-write tree would
// have host git run its code. (Any key of the pager section is one, and
// any of the alias section whose value starts with "!".)
var gitProgramKeys = map[string]bool{
	"core.fsmonitor": true, "core.pager": true, "core.editor": true, "core.sshcommand": true,
	"core.askpass": true, "core.gitproxy": true, "sequence.editor": true,
	"credential.helper": true, "gpg.program": true, "gpg.defaultkeycommand": true,
	"diff.external": true, "diff.command": true, "diff.textconv": true,
	"difftool.cmd": true, "difftool.path": true, "mergetool.cmd": true, "mergetool.path": true,
	"merge.driver": true, "filter.clean": true, "filter.smudge": true, "filter.process": true,
	"interactive.difffilter": true, "uploadpack.packobjectshook": true,
	"remote.uploadpack": true, "remote.receivepack": true,
	"sendemail.sendmailcmd": true, "sendemail.smtpserver": true,
	"browser.cmd": true, "browser.path": true, "man.cmd": true, "man.path": true,
}

// commandWords splits a command or program value into the words that may
// name files: at spaces and at what the shell takes for an operator, a
// quote or an assignment (so "!f() { ./x.sh; }; f", "sh -c 'bin/y'" and
// "--opt=/z" give ./x.sh, bin/y and /z), a leading "!" dropped.
func commandWords(v string) []string {
	return strings.FieldsFunc(strings.TrimPrefix(v, "!"), func(c rune) bool {
		return strings.ContainsRune(" \t\n\r;|&(){}<>`'\"=", c)
	})
}

// Bounds on reading configuration files a sandbox may have written: a
// file includes itself, or a dozen files each including the dozen, and
// an unbounded walk reads 12^10 of them.
const (
	// maxGitInclude bounds how deep includes are followed, as git's own
	// limit of 10 does.
	maxGitInclude = 10
	// maxConfigFile bounds the bytes read of one configuration file.
	maxConfigFile = 1 << 20
	// maxWalkFiles bounds the files one walk reads: a configuration file
	// and those it includes, each once.
	maxWalkFiles = 256
	// maxConfigFiles, maxConfigBytes and maxConfigRefs bound all that one
	// configReader reads (every repository of a tree) and takes from it
	// (includes, hooks and template directories, the words of commands).
	maxConfigFiles = maxProtectedScan
	maxConfigBytes = 64 << 20
	maxConfigRefs  = maxProtectedScan
)

// configReader reads configuration files (git's, Mercurial's) for one
// read-write tree, or the user's and the system's, within bounds: each
// file once (what it names is kept for the next walk that reaches it), at
// most maxConfigFiles files and maxConfigBytes bytes, and at most
// maxConfigRefs things taken from them. short records that a bound left
// something unread or untaken, which leaves the tree's scan incomplete.
type configReader struct {
	home  string
	files int   // files left to read
	bytes int64 // bytes left to read
	refs  int   // references left to take
	short bool
	// parsed holds each file read, by kind ('g' git's configuration, 'c'
	// a commondir, 'h' Mercurial's configuration) and path; nil for one
	// that is not a regular file or could not be read.
	parsed map[string]*configFile
}

// configFile is what one configuration file names.
type configFile struct {
	includes []string
	refs     gitConfigRefs // but includes
}

func newConfigReader(home string) *configReader {
	return &configReader{home: home, files: maxConfigFiles, bytes: maxConfigBytes, refs: maxConfigRefs, parsed: map[string]*configFile{}}
}

// take spends n of the references c may take, and reports whether there
// were that many left.
func (c *configReader) take(n int) bool {
	if n > c.refs {
		c.refs, c.short = 0, true
		return false
	}
	c.refs -= n
	return true
}

// file returns what the configuration file p of the kind names, reading
// it once. A file that is not a regular file or cannot be read names
// nothing (git ignores a missing include; a fifo would block git too, but
// must not block the broker).
func (c *configReader) file(kind byte, p string) *configFile {
	key := string(kind) + p
	if f, ok := c.parsed[key]; ok {
		return f
	}
	if c.files == 0 || c.bytes == 0 {
		c.short = true
		return nil
	}
	c.files--
	b, whole, err := readTreeFile(p, true, min(maxConfigFile, c.bytes))
	c.bytes -= int64(len(b))
	var f *configFile
	if err == nil {
		if !whole {
			c.short = true
		}
		switch kind {
		case 'h':
			f = parseHgConfig(p, c.home, b)
		case 'c':
			f = parseCommondir(p, b)
		default:
			f = parseGitConfig(p, c.home, b)
		}
	}
	c.parsed[key] = f
	return f
}

// walk adds to refs what the configuration files start and the files they
// include name, breadth first, to depth maxGitInclude (an include beyond
// it is named but not read: git refuses it), each file once and at most
// maxWalkFiles of them.
func (c *configReader) walk(kind byte, start []string, refs *gitConfigRefs) {
	type item struct {
		p     string
		depth int
	}
	seen := map[string]bool{}
	var queue []item
	for _, p := range start {
		if !seen[p] {
			seen[p] = true
			queue = append(queue, item{p, 0})
		}
	}
	for i := 0; i < len(queue); i++ {
		it := queue[i]
		f := c.file(kind, it.p)
		if f == nil {
			continue
		}
		r := &f.refs
		n := len(r.hooksPaths) + len(r.templateDirs)
		for _, cmd := range r.commands {
			n += len(cmd)
		}
		if !c.take(n) {
			return
		}
		refs.hooksPaths = append(refs.hooksPaths, r.hooksPaths...)
		refs.templateDirs = append(refs.templateDirs, r.templateDirs...)
		refs.commands = append(refs.commands, r.commands...)
		for _, inc := range f.includes {
			if seen[inc] {
				continue
			}
			if len(seen) >= maxWalkFiles || !c.take(1) {
				c.short = true
				return
			}
			seen[inc] = true
			refs.includes = append(refs.includes, inc)
			if it.depth < maxGitInclude {
				queue = append(queue, item{inc, it.depth + 1})
			}
		}
	}
}

// readGitConfig adds to refs what the git configuration file p and the
// files it includes name.
func (c *configReader) readGitConfig(p string, refs *gitConfigRefs) {
	c.walk('g', []string{p}, refs)
}

// parseGitConfig returns what the git configuration file p, whose content
// is b, names. Only what this needs of git's syntax is read: sections,
// keys, quoted values and comments. Each name is taken once.
func parseGitConfig(p, home string, b []byte) *configFile {
	f := &configFile{}
	seen := map[*[]string]map[string]bool{}
	seenCmd := map[string]bool{}
	note := func(list *[]string, v string) {
		if seen[list] == nil {
			seen[list] = map[string]bool{}
		}
		if !seen[list][v] {
			seen[list][v] = true
			*list = append(*list, v)
		}
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
		if value == "" {
			continue
		}
		switch {
		case section == "core" && key == "hookspath":
			note(&f.refs.hooksPaths, gitPath(value, home, ""))
		case section == "init" && key == "templatedir":
			note(&f.refs.templateDirs, gitPath(value, home, ""))
		case (section == "include" || section == "includeif") && key == "path":
			note(&f.includes, gitPath(value, home, filepath.Dir(p)))
		case section == "alias" && !strings.HasPrefix(value, "!"):
		case section == "alias" || section == "pager" || gitProgramKeys[section+"."+key]:
			if !seenCmd[value] {
				seenCmd[value] = true
				f.refs.commands = append(f.refs.commands, commandWords(value))
			}
		}
	}
	return f
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
// (includes, hooks and template directories, commands) and, of those, the
// absolute hooks directories, resolved, where git runs hooks in every
// repository, and template directories, whose hooks git copies into every
// new one.
type gitGlobals struct {
	home         string
	files        []string
	refs         gitConfigRefs
	hooksDirs    []string
	templateDirs []string
	// short says a bound left some of the configuration unread
	// (configReader), so that what it names is not all protected.
	short bool
}

// readGitGlobals reads the user's and the system's git configuration.
func readGitGlobals() *gitGlobals {
	home, _ := os.UserHomeDir()
	gl := &gitGlobals{home: home, files: globalGitConfigs(home)}
	c := newConfigReader(home)
	for _, f := range gl.files {
		c.readGitConfig(f, &gl.refs)
	}
	gl.short = c.short
	abs := func(list []string) []string {
		var out []string
		for _, p := range list {
			if !filepath.IsAbs(p) {
				continue
			}
			if res, err := resolve(filepath.Clean(p)); err == nil {
				out = append(out, res.path)
			}
		}
		return out
	}
	gl.hooksDirs, gl.templateDirs = abs(gl.refs.hooksPaths), abs(gl.refs.templateDirs)
	return gl
}

// hgIncludes returns the files a Mercurial repository's .hg directory hg
// configuration includes ("%include PATH", relative to the including
// file, "~" its user's home), following includes to depth 10, read by c.
func (c *configReader) hgIncludes(hg string) []string {
	var refs gitConfigRefs
	c.walk('h', []string{filepath.Join(hg, "hgrc"), filepath.Join(hg, "hgrc-not-shared")}, &refs)
	return refs.includes
}

// parseHgConfig returns the files the Mercurial configuration file p,
// whose content is b, includes.
func parseHgConfig(p, home string, b []byte) *configFile {
	f := &configFile{}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "%include")
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' {
			continue
		}
		if inc := gitPath(strings.TrimSpace(rest), home, filepath.Dir(p)); !seen[inc] {
			seen[inc] = true
			f.includes = append(f.includes, inc)
		}
	}
	return f
}

// parseCommondir returns the directory a repository's commondir file p,
// whose content is b, names (relative to the directory holding p) as its
// one include, or none.
func parseCommondir(p string, b []byte) *configFile {
	c := strings.TrimSpace(string(b))
	if c == "" {
		return &configFile{}
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(filepath.Dir(p), c)
	}
	return &configFile{includes: []string{filepath.Clean(c)}}
}
