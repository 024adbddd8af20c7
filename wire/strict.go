package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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

// DecodeStrict decodes data into v, which must be a pointer to a struct (or a
// value whose nested structs follow the same rules). It refuses, naming the key:
// unknown fields, duplicate keys at any depth, keys that match a field only when
// case is ignored (encoding/json would silently accept them), and trailing data.
// json.RawMessage values are checked for duplicate keys but not against a struct.
func DecodeStrict(data []byte, v any) error {
	if err := checkKeys(data, reflect.TypeOf(v), ""); err != nil {
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
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		key := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &FieldError{Key: key, Reason: "unknown field"}
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// checkKeys walks the token stream of data alongside type t, refusing duplicate
// keys everywhere and case-only matches against struct fields.
func checkKeys(data []byte, t reflect.Type, path string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walk(dec, t, path)
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonFields maps the exact JSON names of t's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
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

func walk(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return describeJSONError(err)
	}
	t = deref(t)
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	switch d {
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil && t != rawMessageType {
			switch t.Kind() {
			case reflect.Struct:
				fields = jsonFields(t)
			case reflect.Map:
				elem = t.Elem()
			}
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return describeJSONError(err)
			}
			key, _ := kt.(string)
			kp := key
			if path != "" {
				kp = path + "." + key
			}
			if seen[key] {
				return &FieldError{Key: kp, Reason: "duplicate key"}
			}
			seen[key] = true
			var next reflect.Type
			if fields != nil {
				ft, exact := fields[key]
				if !exact {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return &FieldError{Key: kp, Reason: "key differs only in case from field", Field: name}
						}
					}
					return &FieldError{Key: kp, Reason: "unknown field"}
				}
				next = ft
			} else {
				next = elem
			}
			if err := walk(dec, next, kp); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return describeJSONError(err)
		}
	case '[':
		var elem reflect.Type
		if t != nil && t != rawMessageType && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walk(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // ']'
			return describeJSONError(err)
		}
	}
	return nil
}
