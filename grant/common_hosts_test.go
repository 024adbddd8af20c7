package grant

import (
	"slices"
	"testing"
)

// TestCommonHostPatterns: of two lists of host patterns, only what both
// allow remains, never more than either.
func TestCommonHostPatterns(t *testing.T) {
	for _, tc := range []struct {
		a, b, want []string
	}{
		{[]string{"a.test"}, []string{"a.test", "b.test"}, []string{"a.test"}},
		{[]string{"*.a.test"}, []string{"x.a.test"}, []string{"x.a.test"}},
		{[]string{"x.a.test"}, []string{"*.a.test"}, []string{"x.a.test"}},
		{[]string{"a.test:8080"}, []string{"a.test"}, nil},
		{[]string{"a.test:443"}, []string{"a.test"}, []string{"a.test:443"}},
		{[]string{"*.a.test:443"}, []string{"x.a.test"}, nil},
		{[]string{"127.0.0.1:8080"}, []string{"127.0.0.1:8080", "127.0.0.1:9090"}, []string{"127.0.0.1:8080"}},
		{[]string{"b.test"}, nil, nil},
	} {
		if got := CommonHostPatterns(tc.a, tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("CommonHostPatterns(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}
