package tool

import (
	"encoding/json"
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
func schemaFor(v any) json.RawMessage {
	t := reflect.TypeOf(v)
	props := map[string]any{}
	var required []string
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
		p := map[string]any{}
		switch f.Type.Kind() {
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
			p["items"] = map[string]any{"type": "string"}
		case reflect.Map:
			p["type"] = "object"
			p["additionalProperties"] = map[string]any{"type": "string"}
		}
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
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
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
	b, err := json.Marshal(s)
	if err != nil {
		panic("tool: schema for " + t.Name() + ": " + err.Error())
	}
	return b
}
