package audit_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestSetRedactCoversEveryField: with SetRedact, no text field of a record
// reaches the file unredacted, whichever field it is: the test fills every
// string (and slice of strings, the arguments, the capsule's fields) of
// Record by reflection, so a field added later is covered too, and the
// caller's slices are left as they were.
func TestSetRedactCoversEveryField(t *testing.T) {
	const secret = "S3CRET-v4lue"
	dir := t.TempDir()
	l, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l.SetRedact(func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") })
	var rec audit.Record
	risks := fill(t, reflect.ValueOf(&rec).Elem(), "x"+secret+"y")
	if risks == 0 {
		t.Fatal("no field filled")
	}
	given := append([]string(nil), rec.Risks...)
	if err := l.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the record holds the secret: %s", b)
	}
	if n := strings.Count(string(b), "[redacted]"); n < risks {
		t.Errorf("%d fields redacted, want %d: %s", n, risks, b)
	}
	if !reflect.DeepEqual(rec.Risks, given) {
		t.Errorf("the caller's slice changed: %q", rec.Risks)
	}
}

// fill sets every text field of v to text and returns how many it set.
func fill(t *testing.T, v reflect.Value, text string) int {
	t.Helper()
	n := 0
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeOf(json.RawMessage(nil)):
			f.SetBytes([]byte(`{"a":"` + text + `"}`))
			n++
		case f.Kind() == reflect.String:
			f.SetString(text)
			n++
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			s := reflect.MakeSlice(f.Type(), 2, 2)
			s.Index(0).SetString(text)
			s.Index(1).SetString(text)
			f.Set(s)
			n += 2
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			p := reflect.New(f.Type().Elem())
			n += fill(t, p.Elem(), text)
			f.Set(p)
		case f.Kind() == reflect.Struct && f.Type().PkgPath() != "time":
			n += fill(t, f, text)
		}
	}
	return n
}
