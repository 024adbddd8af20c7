package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sameCheck runs both walkers over data for type t and reports a
// difference, if any.
func sameCheck(data []byte, t reflect.Type) (string, bool) {
	slow := checkKeysTokens(data, t, "")
	w := scanWalker{data: data}
	fast := w.walk(t, "")
	if !reflect.DeepEqual(slow, fast) {
		return fmt.Sprintf("tokens: %#v (%v)\nscan:   %#v (%v)", slow, slow, fast, fast), false
	}
	return "", true
}

// genJSON writes a random JSON value, leaning on what the checks look at:
// the struct's own keys, their case variants, duplicates, escapes in keys,
// bytes that are not UTF-8, lone surrogates, nesting and white space.
func genJSON(r *rand.Rand, b *strings.Builder, keys []string, depth int) {
	ws := func() {
		if r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t", "\r\n  "}[r.IntN(4)])
		}
	}
	str := func(key bool) {
		b.WriteByte('"')
		n := r.IntN(6)
		if key && len(keys) > 0 && r.IntN(3) > 0 {
			k := keys[r.IntN(len(keys))]
			switch r.IntN(6) {
			case 0:
				k = strings.ToUpper(k)
			case 1:
				k = strings.ReplaceAll(k, "_", `\u005f`) // the same key, escaped
			case 2:
				k = `\u00` + fmt.Sprintf("%02x", k[0]) + k[1:]
			}
			b.WriteString(k)
			n = 0
		}
		for range n {
			switch r.IntN(12) {
			case 0:
				b.WriteString(`\n`)
			case 1:
				b.WriteString(`\ud83d\ude00`)
			case 2:
				b.WriteString(`\ud800`) // a lone surrogate
			case 3:
				b.WriteByte(0xff) // not UTF-8
			case 4:
				b.WriteString("é")
			case 5:
				b.WriteString(`\"\\\/`)
			case 6:
				b.WriteString(`\ufffd`)
			default:
				b.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		b.WriteByte('"')
	}
	ws()
	switch k := r.IntN(8); {
	case depth > 3 || k < 3:
		switch r.IntN(5) {
		case 0:
			b.WriteString("12.5e3")
		case 1:
			b.WriteString("true")
		case 2:
			b.WriteString("null")
		default:
			str(false)
		}
	case k < 6:
		b.WriteByte('{')
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			str(true)
			ws()
			b.WriteByte(':')
			genJSON(r, b, keys, depth+1)
		}
		ws()
		b.WriteByte('}')
	default:
		b.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			genJSON(r, b, keys, depth+1)
		}
		b.WriteByte(']')
	}
	ws()
}

// fieldNames lists the JSON names of t's fields and of the structs
// within it.
func fieldNames(t reflect.Type, seen map[reflect.Type]bool, out []string) []string {
	t = deref(t)
	if t == nil || seen[t] {
		return out
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Struct:
		for name, ft := range buildJSONFields(t) {
			out = append(out, name)
			out = fieldNames(ft, seen, out)
		}
	case reflect.Slice, reflect.Array, reflect.Map:
		out = fieldNames(t.Elem(), seen, out)
	}
	return out
}

// TestScanWalkerMatchesTokens: on valid JSON the byte-level walker refuses
// exactly what the token walker refuses, with the same error, for the
// wire's own types.
func TestScanWalkerMatchesTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []reflect.Type{reflect.TypeFor[ToolInput](), reflect.TypeFor[ToolOutput](), reflect.TypeFor[ErrorReport]()} {
		keys := fieldNames(typ, map[reflect.Type]bool{}, nil)
		refused, valid := 0, 0
		for range 20000 {
			var b strings.Builder
			genJSON(r, &b, keys, 0)
			data := []byte(b.String())
			if !json.Valid(data) {
				continue
			}
			valid++
			if diff, ok := sameCheck(data, typ); !ok {
				t.Fatalf("%s, input %q:\n%s", typ, data, diff)
			}
			if checkKeysTokens(data, typ, "") != nil {
				refused++
			}
		}
		// The generator must reach both sides, or the test proves nothing.
		if valid < 5000 || refused < valid/10 || refused > valid*9/10 {
			t.Fatalf("%s: %d valid inputs, %d refused: the generator does not cover both sides", typ, valid, refused)
		}
	}
}

// FuzzScanWalker holds the byte-level walker to the token walker on any
// input json.Valid accepts. go test -fuzz FuzzScanWalker ./wire runs it
// beyond its seeds.
func FuzzScanWalker(f *testing.F) {
	for _, s := range []string{
		`{"tool":"read_file","args":{"path":"x"},"context":{"call_id":"c1"}}`,
		`{"tool":"a","tool":"b"}`, `{"Tool":"a"}`, `{"context":{"secrets":{"A":"1","A":"2"}}}`,
		`{"t\u006fol":"x"}`, `{"tool":"\ud800"}`, "{\"tool\":\"\xff\"}", `[1, {"a":[true,null]}]`,
		`{"content":"a\nb","meta":{"limits_hit":["time"],"bytes":4096}}`, ` "x" `, `12`,
	} {
		f.Add([]byte(s))
	}
	types := []reflect.Type{reflect.TypeFor[ToolInput](), reflect.TypeFor[ToolOutput]()}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		for _, typ := range types {
			if diff, ok := sameCheck(data, typ); !ok {
				t.Fatalf("%s, input %q:\n%s", typ, data, diff)
			}
		}
	})
}

// BenchmarkDecodeStrict decodes a read_file answer of 4 KiB and one of 256
// KiB strictly, beside json.Unmarshal of the same bytes (what the checks
// add to a plain decode).
func BenchmarkDecodeStrict(b *testing.B) {
	for _, n := range []int{4 << 10, 256 << 10} {
		data, err := json.Marshal(ToolOutput{Content: strings.Repeat("airlock\n", n/8), Meta: Meta{Bytes: int64(n)}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("strict-%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for range b.N {
				var o ToolOutput
				if err := DecodeStrict(data, &o); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("unmarshal-%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for range b.N {
				var o ToolOutput
				if err := json.Unmarshal(data, &o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeStrictMatchesTokens: DecodeStrict, which decodes valid JSON
// once and walks its bytes, refuses what the token path refuses, with the
// same message, valid JSON or not, and decodes the same value.
func TestDecodeStrictMatchesTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := fieldNames(reflect.TypeFor[ToolInput](), map[reflect.Type]bool{}, nil)
	accepted, typeErrs := 0, 0
	for i := range 20000 {
		var b strings.Builder
		genJSON(r, &b, keys, 0)
		data := []byte(b.String())
		if i%5 == 0 && len(data) > 2 {
			data = data[:r.IntN(len(data))] // cut: mostly not JSON any more
		}
		var fast, slow ToolInput
		ef, es := DecodeStrict(data, &fast), decodeStrictTokens(data, &slow)
		if (ef == nil) != (es == nil) || ef != nil && ef.Error() != es.Error() {
			t.Fatalf("input %q:\nDecodeStrict: %v\ntokens:       %v", data, ef, es)
		}
		if ef == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("input %q: decoded %+v, tokens %+v", data, fast, slow)
		}
		if ef == nil {
			accepted++
		} else if strings.Contains(ef.Error(), "expected") {
			typeErrs++
		}
	}
	// Both outcomes and the decoder's own refusals must be reached.
	if accepted < 200 || typeErrs < 200 {
		t.Fatalf("%d inputs accepted, %d refused for a wrong type: the generator does not reach them", accepted, typeErrs)
	}
}
