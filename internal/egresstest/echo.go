package egresstest

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"strings"
	"unicode/utf16"
)

// EchoEncoders spell a value as encoders that servers use write it, for
// /echo-auth?enc=NAME: a server may echo what it was sent in any of them.
//
//	dotnet      a JSON string as .NET's System.Text.Json writes it by default:
//	            + < > & ' ` and non-ASCII as \uXXXX in upper-case hex
//	dotnet-url  .NET's HttpUtility.UrlEncode: bytes as %xx in lower-case hex
//	gohtml      Go's html/template in HTML text: + as &#43;
//	upper       upper-cased, as an error page that shouts what it quotes
//	base64      the header's bytes in base64, as a debug endpoint dumps a request
//	hex         the header's bytes in lower-case hex, as a hex dump shows them
var EchoEncoders = map[string]func(string) string{
	"upper":  strings.ToUpper,
	"base64": func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) },
	"hex":    func(v string) string { return hex.EncodeToString([]byte(v)) },
	"dotnet": func(v string) string {
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range v {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || r >= 0x7f || strings.ContainsRune("+<>&'`", r):
				for _, u := range utf16.Encode([]rune{r}) {
					fmt.Fprintf(&b, "\\u%04X", u)
				}
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String()
	},
	"dotnet-url": func(v string) string {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			c := v[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-_.!*()", c) >= 0:
				b.WriteByte(c)
			case c == ' ':
				b.WriteByte('+')
			default:
				fmt.Fprintf(&b, "%%%02x", c)
			}
		}
		return b.String()
	},
	"gohtml": func(v string) string {
		var b strings.Builder
		template.Must(template.New("echo").Parse("{{.}}")).Execute(&b, v)
		return b.String()
	},
}
