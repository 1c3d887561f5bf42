package runningreplicas

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name    string
		in      Replicas
		want    string
		wantErr string
	}{
		{name: "nothing runs yet", in: Replicas{}, want: `{}`},
		{name: "keys sorted, a zero count encoded as given",
			in:   Replicas{Workers: map[string]int32{"gpu-group": 2, "cpu": 0}, Serve: map[string]int32{"app1/Model": 3, "app1/Ingress": 1}},
			want: `{"workers":{"cpu":0,"gpu-group":2},"serve":{"app1/Ingress":1,"app1/Model":3}}`},
		{name: "held Pods beside the running ones",
			in:   Replicas{Workers: map[string]int32{"gpu": 1}, Held: map[string]int32{"gpu": 3}},
			want: `{"workers":{"gpu":1},"held":{"gpu":3}}`},
		{name: "negative count", in: Replicas{Workers: map[string]int32{"g": -1}}, wantErr: "negative"},
		{name: "negative held", in: Replicas{Held: map[string]int32{"g": -1}}, wantErr: `held["g"]: negative`},
		{name: "empty name", in: Replicas{Serve: map[string]int32{"": 1}}, wantErr: "empty name"},
		{name: "too many entries", in: Replicas{Serve: counts(MaxEntries + 1)}, wantErr: "more than 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Format(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Format() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Format() = %q, %v; want %q", got, err, tt.want)
			}
			back, err := Parse(got)
			if err != nil {
				t.Fatalf("Parse(Format()) error = %v", err)
			}
			if diff := cmp.Diff(tt.in, back, cmp.Comparer(sameCounts)); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Replicas
		wantErr string
	}{
		{name: "the documented example", in: `{"workers":{"gpu-group":2},"serve":{"app1/Model":3}}`,
			want: Replicas{Workers: map[string]int32{"gpu-group": 2}, Serve: map[string]int32{"app1/Model": 3}}},
		{name: "empty object", in: `{}`, want: Replicas{}},
		{name: "unknown fields are a newer spoke's", in: `{"workers":{"g":1},"pending":{"x":1}}`,
			want: Replicas{Workers: map[string]int32{"g": 1}}},
		{name: "whitespace around", in: " {\"serve\":{\"a/b\":0}}\n", want: Replicas{Serve: map[string]int32{"a/b": 0}}},
		{name: "empty string", in: ``, wantErr: "not a JSON object"},
		{name: "null", in: `null`, wantErr: "not a JSON object"},
		{name: "a list", in: `[1,2]`, wantErr: "not a JSON object"},
		{name: "truncated", in: `{"workers":{"g":1}`, wantErr: "running replicas"},
		{name: "data after the object", in: `{"workers":{}} {}`, wantErr: "running replicas"},
		{name: "negative count", in: `{"workers":{"g":-3}}`, wantErr: "negative"},
		{name: "count beyond int32", in: `{"serve":{"a/b":2147483648}}`, wantErr: "running replicas"},
		{name: "fractional count", in: `{"serve":{"a/b":1.5}}`, wantErr: "running replicas"},
		{name: "count as a string", in: `{"serve":{"a/b":"3"}}`, wantErr: "running replicas"},
		{name: "workers not an object", in: `{"workers":3}`, wantErr: "running replicas"},
		{name: "empty name", in: `{"workers":{"":1}}`, wantErr: "empty name"},
		{name: "name too long", in: fmt.Sprintf(`{"workers":{%q:1}}`, strings.Repeat("g", MaxKeyBytes+1)), wantErr: "more than 200"},
		{name: "too many entries", in: mustFormatUnchecked(Replicas{Workers: counts(600), Serve: counts(401)}), wantErr: "more than 1000"},
		{name: "held counts among the entries", in: `{"held":{"h":1},` + mustFormatUnchecked(Replicas{Workers: counts(600), Serve: counts(400)})[1:],
			wantErr: "more than 1000"},
		{name: "too long", in: `{"workers":{}}` + strings.Repeat(" ", MaxBytes), wantErr: "bytes, more than"},
		{name: "deeply nested", in: `{"workers":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `}`,
			wantErr: "running replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse() = %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(sameCounts)); diff != "" {
				t.Errorf("Parse() (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParse: no input panics Parse, and what it accepts formats back to a value it accepts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"workers":{"g":2},"serve":{"a/b":3}}`, `{"serve":{"a/b":-1}}`, `null`, `{"workers":[]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		out, err := Format(r)
		if err != nil {
			t.Fatalf("Format of a parsed value: %v", err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("Parse(Format(Parse(%q))) = %v", s, err)
		}
	})
}

// counts returns n distinct names with count 1.
func counts(n int) map[string]int32 {
	out := make(map[string]int32, n)
	for i := range n {
		out[fmt.Sprintf("k%d", i)] = 1
	}
	return out
}

// mustFormatUnchecked encodes r without Format's bounds, as a hostile member could.
func mustFormatUnchecked(r Replicas) string {
	var b strings.Builder
	b.WriteString(`{"workers":{`)
	writeCounts(&b, r.Workers)
	b.WriteString(`},"serve":{`)
	writeCounts(&b, r.Serve)
	b.WriteString(`}}`)
	return b.String()
}

func writeCounts(b *strings.Builder, m map[string]int32) {
	first := true
	for k, v := range m {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(b, "%q:%d", k, v)
	}
}

// sameCounts treats a nil and an empty map alike: both say nothing runs there.
func sameCounts(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
