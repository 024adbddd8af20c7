package grant

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// MaxFileSize is the largest grant file Load and Parse accept.
const MaxFileSize = 1 << 20

// maxErrors caps how many problems one Parse reports.
const maxErrors = 20

// Load reads the grant file at path and parses it with relative paths
// resolved against the file's directory.
func Load(path string) (*Grant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening grant: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading grant %q: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("locating grant %q: %w", path, err)
	}
	return parse(data, path, filepath.Dir(abs), abs)
}

// Parse parses and validates a grant. name labels errors (usually the file
// name); relative paths in the grant are resolved against baseDir, which must
// be absolute. name is also taken for the grant's file (Files), which
// sessions keep read-only to their sandboxes: a relative name as a file in
// baseDir, where the grant's own relative paths start. Every problem found
// is reported, each as an *Error naming the key and its line.
func Parse(data []byte, name, baseDir string) (*Grant, error) {
	file := name
	if !filepath.IsAbs(file) {
		file = filepath.Join(baseDir, file)
	}
	return parse(data, name, baseDir, file)
}

// parse is Parse, with file the grant's file, absolute.
func parse(data []byte, name, baseDir, file string) (*Grant, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("grant file is larger than %d bytes", MaxFileSize)}
	}
	doc := string(data)
	if err := checkNesting(doc); err != nil {
		err.File = name
		return nil, err
	}
	var top map[string]toml.Primitive
	md, err := toml.Decode(doc, &top)
	if err != nil {
		e := &Error{File: name, Msg: err.Error()}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			e.Line = pe.Position.Line
			e.Msg = pe.Message
		}
		return nil, e
	}
	tree := make(map[string]any, len(top))
	for k, p := range top {
		var v any
		if err := md.PrimitiveDecode(p, &v); err != nil {
			return nil, &Error{File: name, Key: joinKey([]string{k}), Msg: err.Error()}
		}
		tree[k] = v
	}
	var ps problems
	s := specFromTOML(tree, &ps)
	s.source = name
	s.base = baseDir
	if filepath.IsAbs(file) {
		s.files = []string{filepath.Clean(file)}
	}
	var g *Grant
	if len(ps.list) == 0 {
		g = build(s, &ps)
	}
	if len(ps.list) > 0 {
		return nil, report(name, &lines{md: md, top: top, text: strings.Split(doc, "\n")}, &ps)
	}
	return g, nil
}

// report turns problems into Errors in document order, the problems past
// the first maxErrors counted in a last line. at finds lines; nil for none.
func report(name string, at *lines, ps *problems) error {
	errs := make([]*Error, 0, len(ps.list)+1)
	for _, p := range ps.list {
		errs = append(errs, &Error{File: name, Key: joinKey(p.key), Msg: p.msg, Line: at.problemLine(p)})
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	if more := ps.n - len(ps.list); more > 0 {
		errs = append(errs, &Error{File: name, Msg: fmt.Sprintf("and %d more problems", more)})
	}
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return errors.Join(joined...)
}

// specFromTOML walks a decoded TOML tree into a spec, recording every key
// that is unknown or holds a value of the wrong type.
func specFromTOML(tree map[string]any, ps *problems) *spec {
	s := &spec{}
	for _, k := range sortedKeys(tree) {
		key := []string{k}
		v := tree[k]
		switch k {
		case "paths":
			walkTable(v, key, ps, map[string]func(any, []string){
				"read_write":         func(v any, key []string) { s.readWrite = stringList(v, key, ps) },
				"read_only":          func(v any, key []string) { s.readOnly = stringList(v, key, ps) },
				"deny":               func(v any, key []string) { s.deny = stringList(v, key, ps) },
				"writable_protected": func(v any, key []string) { s.writableProtected = stringList(v, key, ps) },
			})
		case "network":
			walkTable(v, key, ps, map[string]func(any, []string){
				"hosts":      func(v any, key []string) { s.hosts = stringList(v, key, ps) },
				"private":    func(v any, key []string) { s.private = stringList(v, key, ps) },
				"plain_http": func(v any, key []string) { s.plainHTTP = stringList(v, key, ps) },
			})
		case "limits":
			v = unenforcedFromTOML(s, v, key, ps)
			v = searchesFromTOML(s, v, ps)
			s.limits = limitsFromTOML(v, key, ps)
		case "tools":
			toolsFromTOML(s, v, key, ps)
		case "secrets":
			secretsFromTOML(s, v, key, ps)
		case "remote":
			remoteFromTOML(s, v, key, ps)
		case "runner":
			runnerFromTOML(s, v, key, ps)
		default:
			unknownKey(key, k, []string{"paths", "network", "limits", "tools", "secrets", "remote", "runner"}, ps)
		}
	}
	return s
}

// stringField is a walkTable handler that stores a string value in dst,
// and reports any other type at its key.
func stringField(ps *problems, dst *string) func(any, []string) {
	return func(v any, key []string) {
		x, ok := v.(string)
		if !ok {
			ps.add(key, "must be a string, not %s", tomlType(v))
			return
		}
		*dst = x
	}
}

// walkTable calls the handler of each key of the table v, reporting unknown keys.
func walkTable(v any, key []string, ps *problems, handlers map[string]func(any, []string)) {
	t, ok := v.(map[string]any)
	if !ok {
		ps.add(key, "must be a table, not %s", tomlType(v))
		return
	}
	known := sortedKeys(handlers)
	for _, k := range sortedKeys(t) {
		sub := append(slices.Clip(key), k)
		h, ok := handlers[k]
		if !ok {
			unknownKey(sub, k, known, ps)
			continue
		}
		h(t[k], sub)
	}
}

func unknownKey(key []string, k string, known []string, ps *problems) {
	for _, c := range known {
		if strings.EqualFold(c, k) {
			ps.add(key, "unknown key (did you mean %q?)", c)
			return
		}
	}
	ps.add(key, "unknown key (known keys: %s)", strings.Join(known, ", "))
}

// stringList reads a TOML array of strings.
func stringList(v any, key []string, ps *problems) []string {
	arr, ok := v.([]any)
	if !ok {
		ps.add(key, "must be a list of strings, not %s", tomlType(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			ps.add(key, "must be a list of strings, but holds %s", tomlType(e))
			return nil
		}
		out = append(out, s)
	}
	return out
}

// tomlType names the TOML type of a decoded value for error messages.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	default:
		return "a date or time"
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
