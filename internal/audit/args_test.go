package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAbridge: a string past the cap shows runs of blanks and of one
// character as counts and keeps its head and tail around a marked cut;
// the result is valid JSON and the rest of the value is as it was.
func TestAbridge(t *testing.T) {
	var mixed strings.Builder // no run of 16: cut, not counted
	for i := 0; mixed.Len() < 10_000; i++ {
		mixed.WriteString("ab"[i%2:i%2+1] + "c")
	}
	tests := []struct {
		name string
		in   string
		want string // "" means unchanged
	}{
		{"small", `{"command":"ls    x"}`, ""},
		{"short strings in a long value", `{"a":"` + strings.Repeat("x", 3000) + `","b":"` + strings.Repeat("y", 3000) + `"}`, ""},
		{"blanks before the payload",
			`{"command":"ls ` + strings.Repeat(" ", 4100) + `; echo HIDDEN"}`,
			`{"command":"ls…[4101 blanks]…; echo HIDDEN"}`},
		{"blanks of every kind, escaped or not",
			`{"command":"true` + strings.Repeat(`\n\t \u00a0\u200b`+"\u2003\u3164", 800) + `rm -rf x"}`,
			`{"command":"true…[5600 blanks]…rm -rf x"}`},
		{"one character repeated",
			`{"path":"f","content":"` + strings.Repeat("A", 5000) + `!"}`,
			`{"path":"f","content":"…[5000× A]…!"}`},
		{"an escape repeated",
			`{"c":"` + strings.Repeat(`\"`, 3000) + `"}`,
			`{"c":"…[3000× \"]…"}`},
		{"padding that is not a run: head and tail",
			`{"command":"echo start; ` + mixed.String() + `; echo PAYLOAD","n":[1,"short"]}`,
			`{"command":"echo start; ` + mixed.String()[:2048-len("echo start; ")] +
				`…[cut; ` + itoa(len("echo start; ; echo PAYLOAD")+mixed.Len()) + ` bytes in all]…` +
				mixed.String()[mixed.Len()-(2048-len("; echo PAYLOAD")):] + `; echo PAYLOAD","n":[1,"short"]}`},
		{"not JSON", `{"command":"` + strings.Repeat(" ", 5000), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Abridge(json.RawMessage(tt.in), MaxArgString)
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if cut != (tt.want != "") {
				t.Errorf("cut = %v, want %v", cut, tt.want != "")
			}
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("Abridge (-want +got):\n%s", diff)
			}
			if json.Valid([]byte(tt.in)) && !json.Valid(got) {
				t.Errorf("not valid JSON: %.300s", got)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestAbridgeCutsBetweenEscapes: a cut never falls inside an escape or a
// character, and what is kept is at most the cap and its marker.
func TestAbridgeCutsBetweenEscapes(t *testing.T) {
	long := strings.Repeat("é\\n\\u00e9\\\"x\\ud83d\\ude00", 2000)
	raw := json.RawMessage(`{"path":"f","content":"` + long + `","n":[1,"short"]}`)
	got, cut := Abridge(raw, MaxArgString)
	if !cut || !json.Valid(got) {
		t.Fatalf("cut %v, valid %v: %.300s", cut, json.Valid(got), got)
	}
	var v struct {
		Path, Content string
		N             []any
	}
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	if v.Path != "f" || len(v.N) != 2 || !strings.Contains(v.Content, "…[cut; "+itoa(len(long))+" bytes in all]…") || len(v.Content) > MaxArgString+64 {
		t.Errorf("path %q, n %v, content %.80s… (%d bytes)", v.Path, v.N, v.Content, len(v.Content))
	}
	if strings.ContainsRune(v.Content, '\uFFFD') {
		t.Errorf("a character was cut in two: %q", v.Content)
	}
}

// TestSetArgs: abridged arguments carry the length and hash of the whole;
// arguments kept whole carry neither.
func TestSetArgs(t *testing.T) {
	var r Record
	small := json.RawMessage(`{"command":"ls"}`)
	r.SetArgs(small)
	if string(r.Args) != string(small) || r.ArgsBytes != 0 || r.ArgsSHA256 != "" {
		t.Errorf("small arguments: %s, %d, %q", r.Args, r.ArgsBytes, r.ArgsSHA256)
	}
	long := json.RawMessage(`{"command":"ls ` + strings.Repeat(" ", 5000) + `; echo HIDDEN"}`)
	r.SetArgs(long)
	sum := sha256.Sum256(long)
	if r.ArgsBytes != len(long) || r.ArgsSHA256 != hex.EncodeToString(sum[:]) || !strings.Contains(string(r.Args), "; echo HIDDEN") {
		t.Errorf("long arguments: %s, %d, %q", r.Args, r.ArgsBytes, r.ArgsSHA256)
	}
}

func TestAbridgeText(t *testing.T) {
	in := "ls <" + strings.Repeat("\t", 5000) + "> & echo HIDDEN"
	if got, want := AbridgeText(in, MaxArgString), "ls <…[5000 blanks]…> & echo HIDDEN"; got != want {
		t.Errorf("AbridgeText = %q, want %q", got, want)
	}
	if got := AbridgeText("short", MaxArgString); got != "short" {
		t.Errorf("AbridgeText(short) = %q", got)
	}
}

// FuzzAbridge: valid JSON stays valid, and is returned as it is when
// nothing was abridged.
func FuzzAbridge(f *testing.F) {
	f.Add(`{"a":"`+strings.Repeat(`x\u00e9 `, 30)+`"}`, 16)
	f.Add(`["\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00`+strings.Repeat(" ", 20)+`"]`, 8)
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max < 8 || max > 1<<12 || !json.Valid([]byte(in)) {
			return
		}
		got, cut := Abridge(json.RawMessage(in), max)
		if !json.Valid(got) {
			t.Fatalf("Abridge(%q, %d) = %q: not valid JSON", in, max, got)
		}
		if !cut && string(got) != in {
			t.Fatalf("Abridge(%q, %d) = %q but says it changed nothing", in, max, got)
		}
	})
}

// TestAbridgeKeepsHeadAndTail: for long strings of every kind of character
// and escape, in runs long and short, the abridged string is the start and
// the end of the string with its runs counted (CountRuns), as much of each
// as fits, around the cut.
func TestAbridgeKeepsHeadAndTail(t *testing.T) {
	units := []string{"a", "b", "c", " ", `\n`, `\t`, "é", `\u00e9`, `\ud83d\ude00`, `\"`, `\\`, "\u200b", `\u0000`, "日"}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		var b strings.Builder
		for b.Len() < 5000+rng.IntN(40000) {
			u := units[rng.IntN(len(units))]
			b.WriteString(strings.Repeat(u, 1+rng.IntN(40)*rng.IntN(2)))
		}
		raw := json.RawMessage(`{"s":"` + b.String() + `"}`)
		got, cut := Abridge(raw, MaxArgString)
		if !json.Valid(got) {
			t.Fatalf("%d: not valid JSON: %.200s", n, got)
		}
		counted := string(CountRuns(raw))
		counted = counted[len(`{"s":"`) : len(counted)-2]
		s := string(got[len(`{"s":"`) : len(got)-2])
		if len(counted) <= MaxArgString {
			if !cut || s != counted {
				t.Fatalf("%d: %q, want the counted string whole", n, s)
			}
			continue
		}
		h, tl, ok := strings.Cut(s, "…[cut; "+itoa(len(b.String()))+" bytes in all]…")
		if !ok || !strings.HasPrefix(counted, h) || !strings.HasSuffix(counted, tl) {
			t.Fatalf("%d: %.100q … %.100q is not the counted string's head and tail around the cut", n, h, tl)
		}
		if len(h) > MaxArgString/2 || len(h) < MaxArgString/2-64 || len(tl) > MaxArgString/2 || len(tl) < MaxArgString/2-64 {
			t.Errorf("%d: head %d and tail %d bytes; want each near %d", n, len(h), len(tl), MaxArgString/2)
		}
	}
}
