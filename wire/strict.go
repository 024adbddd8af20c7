package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// A FieldError names the JSON key that strict decoding refused and why.
type FieldError struct {
	Key    string // dotted path of the key, e.g. "args.path"
	Reason string // "unknown field", "duplicate key", "key differs only in case from a field"
	Field  string // for a case-only match, the field's real name
}

func (e *FieldError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s %q: %q (use %q)", e.Reason, e.Field, e.Key, e.Field)
	}
	return fmt.Sprintf("%s %q", e.Reason, e.Key)
}

// An EncodingError names a JSON string (a key or a value) that is not text:
// invalid UTF-8 bytes, or a \u escape of a lone UTF-16 surrogate. encoding/json
// would turn either into U+FFFD, so a path "f\xff" would silently name "f\uFFFD".
type EncodingError struct {
	Key    string // dotted path of the value's key, or of the key itself when InKey
	InKey  bool   // the key, not its value, is badly encoded
	Detail string // what is wrong, e.g. "byte 0xff at offset 1 is not valid UTF-8"
}

func (e *EncodingError) Error() string {
	if e.InKey {
		return fmt.Sprintf("key %s: %s; JSON text must be UTF-8", e.Key, e.Detail)
	}
	key := e.Key
	if key == "" {
		key = "(top level)"
	}
	return fmt.Sprintf("field %q: %s; JSON text must be UTF-8", key, e.Detail)
}

// DecodeStrict decodes data into v, which must be a pointer to a struct (or a
// value whose nested structs follow the same rules). It refuses, naming the key:
// unknown fields, duplicate keys at any depth, keys that match a field only when
// case is ignored (encoding/json would silently accept them), strings (keys or
// values, at any depth, raw or not) that hold invalid UTF-8 or a lone UTF-16
// surrogate escape (an *EncodingError), and trailing data.
// json.RawMessage values are checked for duplicate keys and encoding but not
// against a struct.
func DecodeStrict(data []byte, v any) error {
	// Valid JSON, the usual case, is decoded once and its keys and strings
	// walked over its bytes (scanWalker), and what the walk refuses is the
	// error before anything the decoding met (a wrong type), as below.
	derr := json.Unmarshal(data, v)
	var se *json.SyntaxError
	var ie *json.InvalidUnmarshalError
	switch {
	case errors.As(derr, &ie):
		return derr
	case !errors.As(derr, &se):
		w := scanWalker{data: data}
		if err := w.walk(reflect.TypeOf(v), ""); err != nil {
			return err
		}
		if derr != nil {
			return describeJSONError(derr)
		}
		return nil
	}
	return decodeStrictTokens(data, v)
}

// decodeStrictTokens is DecodeStrict through the json.Decoder's tokens, for
// any input: what is not valid JSON gets the error that says where.
func decodeStrictTokens(data []byte, v any) error {
	if err := checkKeysTokens(data, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err == nil {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// CheckDuplicateKeys reports the first key that occurs twice in one object
// anywhere in data, as a *FieldError naming its dotted path (e.g.
// "params.name"), or a syntax error. It is the check DecodeStrict makes,
// without a struct to check the keys against.
func CheckDuplicateKeys(data []byte) error {
	return checkKeys(data, nil, "")
}

func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("field %q: expected %s, got JSON %s", field, te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		key := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &FieldError{Key: key, Reason: "unknown field"}
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// checkKeys walks the token stream of data alongside type t, refusing duplicate
// keys everywhere and case-only matches against struct fields. Valid JSON
// is walked straight over its bytes (scanWalker); anything else by the
// json.Decoder's tokens, whose error names what is wrong.
func checkKeys(data []byte, t reflect.Type, path string) error {
	if json.Valid(data) {
		w := scanWalker{data: data}
		return w.walk(t, path)
	}
	return checkKeysTokens(data, t, path)
}

// checkKeysTokens is checkKeys through the json.Decoder's tokens, for any
// input, valid or not.
func checkKeysTokens(data []byte, t reflect.Type, path string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, data: data}
	return w.walk(t, path)
}

// A walker reads data's tokens, keeping data to see each string as it was sent.
type walker struct {
	dec  *json.Decoder
	data []byte
}

// token reads the next token and, for a string, checks the literal's
// encoding. key is the dotted path the string is (or is the value of).
func (w *walker) token(key string, isKey bool) (json.Token, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, describeJSONError(err)
	}
	if _, ok := tok.(string); ok {
		seg := w.data[start:w.dec.InputOffset()]
		if i := bytes.IndexByte(seg, '"'); i >= 0 {
			if err := literalError(key, seg[i:], isKey); err != nil {
				return nil, err
			}
		}
	}
	return tok, nil
}

// literalError checks the encoding of the string literal lit (quotes
// included), a key of the object at path when isKey is set, else the
// value at path, and returns the *EncodingError naming it, or nil.
func literalError(path string, lit []byte, isKey bool) error {
	detail := badEncoding(lit)
	if detail == "" {
		return nil
	}
	if isKey {
		path = keyPath(path, strconv.Quote(string(unquoteRaw(lit))))
	}
	return &EncodingError{Key: path, InKey: isKey, Detail: detail}
}

// keyPath is key appended to the dotted path parent.
func keyPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// unquoteRaw is a string literal's bytes between the quotes, escapes left as
// they are, so a badly encoded key can be shown with strconv.Quote.
func unquoteRaw(lit []byte) []byte {
	if len(lit) >= 2 {
		return lit[1 : len(lit)-1]
	}
	return lit
}

// badEncoding says what is wrong with the JSON string literal lit (quotes
// included, already accepted by the JSON scanner), or "" when it is text.
func badEncoding(lit []byte) string {
	body := unquoteRaw(lit)
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\' && i+1 < len(body) && body[i+1] == 'u' && i+6 <= len(body):
			r := hex4(body[i+2 : i+6])
			switch {
			case utf16.IsSurrogate(r) && r < 0xdc00: // a high surrogate: a low one must follow
				if i+12 <= len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
					if lo := hex4(body[i+8 : i+12]); lo >= 0xdc00 && lo <= 0xdfff {
						i += 12
						continue
					}
				}
				return fmt.Sprintf("the escape %s at offset %d in the string is a lone UTF-16 surrogate, not a character", body[i:i+6], i)
			case utf16.IsSurrogate(r):
				return fmt.Sprintf("the escape %s at offset %d in the string is a lone UTF-16 surrogate, not a character", body[i:i+6], i)
			}
			i += 6
		case c == '\\':
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Sprintf("byte 0x%02x at offset %d in the string is not valid UTF-8", c, i)
			}
			i += n
		}
	}
	return ""
}

// hex4 is the value of four hex digits (the JSON scanner has checked them).
func hex4(b []byte) rune {
	v, err := strconv.ParseUint(string(b), 16, 32)
	if err != nil {
		return -1
	}
	return rune(v)
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldsOf caches jsonFields by type.
var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the exact JSON names of t's exported fields to their
// types. The map is shared: callers only read it.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := buildJSONFields(t)
	fieldsOf.Store(t, m)
	return m
}

// buildJSONFields is jsonFields, uncached.
func buildJSONFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		out[name] = f.Type
	}
	return out
}

// object is what both walks check of one JSON object's keys: the fields
// of the struct it decodes into, or the element type of a map, and the
// keys seen so far.
type object struct {
	fields map[string]reflect.Type
	elem   reflect.Type
	seen   map[string]bool
}

// newObject starts the checks of an object decoded into t (nil or
// json.RawMessage: keys checked for duplicates only).
func newObject(t reflect.Type) object {
	var o object
	if t != nil && t != rawMessageType {
		switch t.Kind() {
		case reflect.Struct:
			o.fields = jsonFields(t)
		case reflect.Map:
			o.elem = t.Elem()
		}
	}
	return o
}

// key checks the object's next key (at the dotted path kp) and returns
// the type its value decodes into.
func (o *object) key(key, kp string) (reflect.Type, error) {
	if o.seen[key] {
		return nil, &FieldError{Key: kp, Reason: "duplicate key"}
	}
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	o.seen[key] = true
	if o.fields == nil {
		return o.elem, nil
	}
	if ft, ok := o.fields[key]; ok {
		return ft, nil
	}
	for name := range o.fields {
		if strings.EqualFold(name, key) {
			return nil, &FieldError{Key: kp, Reason: "key differs only in case from field", Field: name}
		}
	}
	return nil, &FieldError{Key: kp, Reason: "unknown field"}
}

// arrayElem is the element type of the slice or array t, else nil.
func arrayElem(t reflect.Type) reflect.Type {
	if t != nil && t != rawMessageType && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

func (w *walker) walk(t reflect.Type, path string) error {
	dec := w.dec
	tok, err := w.token(path, false)
	if err != nil {
		return err
	}
	t = deref(t)
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	switch d {
	case '{':
		o := newObject(t)
		for dec.More() {
			kt, err := w.token(path, true)
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			kp := keyPath(path, key)
			next, err := o.key(key, kp)
			if err != nil {
				return err
			}
			if err := w.walk(next, kp); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return describeJSONError(err)
		}
	case '[':
		elem := arrayElem(t)
		for i := 0; dec.More(); i++ {
			if err := w.walk(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return describeJSONError(err)
		}
	}
	return nil
}

// scanWalker is walker over data that json.Valid has accepted, reading it
// byte by byte instead of through json.Decoder.Token, which decodes every
// string (a tool's whole output, the second time over) only for the walk
// to drop it. It checks the same things in the same order and returns the
// same errors; TestScanWalkerMatchesTokens holds the two to that.
type scanWalker struct {
	data []byte
	i    int
}

// space skips white space.
func (w *scanWalker) space() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// literal returns the string literal at w.i, quotes included, and moves
// past it.
func (w *scanWalker) literal() []byte {
	start := w.i
	j := w.i + 1
	for j < len(w.data) {
		switch w.data[j] {
		case '\\':
			j += 2
			continue
		case '"':
			w.i = j + 1
			return w.data[start:w.i]
		}
		j++
	}
	w.i = len(w.data)
	return w.data[start:]
}

// keyText is the text of the key literal lit (valid, and valid UTF-8).
func keyText(lit []byte) string {
	body := unquoteRaw(lit)
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

func (w *scanWalker) walk(t reflect.Type, path string) error {
	w.space()
	if w.i >= len(w.data) {
		return nil
	}
	t = deref(t)
	switch w.data[w.i] {
	case '"':
		return literalError(path, w.literal(), false)
	case '{':
		w.i++
		o := newObject(t)
		for {
			w.space()
			switch w.data[w.i] {
			case '}':
				w.i++
				return nil
			case ',':
				w.i++
				w.space()
			}
			lit := w.literal()
			if err := literalError(path, lit, true); err != nil {
				return err
			}
			k := keyText(lit)
			kp := keyPath(path, k)
			next, err := o.key(k, kp)
			if err != nil {
				return err
			}
			w.space()
			w.i++ // ':'
			if err := w.walk(next, kp); err != nil {
				return err
			}
		}
	case '[':
		w.i++
		elem := arrayElem(t)
		for n := 0; ; n++ {
			w.space()
			switch w.data[w.i] {
			case ']':
				w.i++
				return nil
			case ',':
				w.i++
			}
			if err := w.walk(elem, fmt.Sprintf("%s[%d]", path, n)); err != nil {
				return err
			}
		}
	default: // a number, true, false or null
		for w.i < len(w.data) {
			switch w.data[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			w.i++
		}
		return nil
	}
}
