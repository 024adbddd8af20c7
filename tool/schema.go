package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// schemaFor derives a JSON schema from an args struct. Field tags:
//
//	json:"name,omitempty"   the property name; omitempty marks it optional
//	desc:"..."              the property's description
//	enum:"a,b,c"            allowed string values
//	min:"0" max:"600"       numeric bounds
//
// A pointer field is its element (optional when tagged so; nil means absent),
// a slice of structs is an array of objects derived the same way.
func schemaFor(v any) json.RawMessage {
	t := reflect.TypeOf(v)
	b, err := json.Marshal(objectSchema(t))
	if err != nil {
		panic("tool: schema for " + t.Name() + ": " + err.Error())
	}
	return b
}

// objectSchema is the schema of struct type t.
func objectSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for _, af := range argFields(t) {
		f, name := af.field, af.name
		p := typeSchema(f.Type)
		if d := f.Tag.Get("desc"); d != "" {
			p["description"] = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			p["enum"] = strings.Split(e, ",")
		}
		for _, k := range []string{"min", "max"} {
			if s := f.Tag.Get(k); s != "" {
				n, err := strconv.ParseInt(s, 10, 64)
				if err == nil {
					p[map[string]string{"min": "minimum", "max": "maximum"}[k]] = n
				}
			}
		}
		props[name] = p
		if !af.optional {
			required = append(required, name)
		}
	}
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// typeSchema is the schema of one field's type.
func typeSchema(t reflect.Type) map[string]any {
	p := map[string]any{}
	switch t.Kind() {
	case reflect.Pointer:
		return typeSchema(t.Elem())
	case reflect.String:
		p["type"] = "string"
	case reflect.Bool:
		p["type"] = "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		p["type"] = "integer"
	case reflect.Float32, reflect.Float64:
		p["type"] = "number"
	case reflect.Slice:
		p["type"] = "array"
		if t.Elem().Kind() == reflect.Struct {
			p["items"] = objectSchema(t.Elem())
		} else {
			p["items"] = typeSchema(t.Elem())
		}
	case reflect.Map:
		p["type"] = "object"
		p["additionalProperties"] = map[string]any{"type": "string"}
	}
	return p
}

// argField is one JSON-visible field of an args struct.
type argField struct {
	field    reflect.StructField
	name     string // its JSON name
	optional bool   // tagged omitempty or omitzero
}

// argFields lists the exported, JSON-visible fields of struct type t.
func argFields(t reflect.Type) []argField {
	var out []argField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		out = append(out, argField{field: f, name: name, optional: optional})
	}
	return out
}

// requiredFields lists the JSON names of v's fields without omitempty or
// omitzero: the ones the schema marks required.
func requiredFields(v any) []string {
	var out []string
	for _, af := range argFields(reflect.TypeOf(v)) {
		if !af.optional {
			out = append(out, af.name)
		}
	}
	return out
}

// checkRequired refuses raw (a JSON object, already strictly decoded) when it
// lacks a required key, so an omitted argument is not taken as its zero value.
func checkRequired(raw json.RawMessage, required []string) error {
	if len(required) == 0 {
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return fmt.Errorf("arguments must be a JSON object: %w", err)
	}
	for _, k := range required {
		if _, ok := keys[k]; !ok {
			return fmt.Errorf("field %q: required, but missing", k)
		}
	}
	return nil
}
