package jsonsubset

import "testing"

func TestCoversValue(t *testing.T) {
	tests := []struct {
		name       string
		have, want any
		covers     bool
	}{
		{"empty object wanted, key absent", map[string]any{}, map[string]any{"a": map[string]any{}}, true},
		{"empty list wanted, key absent", map[string]any{}, map[string]any{"a": []any{}}, true},
		{"null wanted", map[string]any{"a": "x"}, map[string]any{"a": nil}, true},
		{"extra field in have", map[string]any{"a": "x", "b": "y"}, map[string]any{"a": "x"}, true},
		{"object wanted, scalar there", map[string]any{"a": "x"}, map[string]any{"a": map[string]any{"b": "c"}}, false},
		{"list wanted, object there", map[string]any{}, []any{"x"}, false},
		{"list shorter in have", []any{"x"}, []any{"x", "y"}, false},
		{"list longer in have", []any{"x", "y"}, []any{"x"}, false},
		{"scalar differs", "1", "2", false},
		{"missing field", map[string]any{}, map[string]any{"a": "x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CoversValue(tc.have, tc.want); got != tc.covers {
				t.Errorf("CoversValue = %v, want %v", got, tc.covers)
			}
		})
	}
}

func TestCoversNumbersAsWritten(t *testing.T) {
	type spec struct {
		Replicas int32   `json:"replicas"`
		Ratio    float64 `json:"ratio,omitempty"`
	}
	if !Covers(spec{Replicas: 3, Ratio: 0.5}, spec{Replicas: 3}) {
		t.Error("equal replicas, ratio only in have: want covered")
	}
	if Covers(spec{Replicas: 3}, spec{Replicas: 4}) {
		t.Error("different replicas reported covered")
	}
	if Covers(make(chan int), spec{}) {
		t.Error("a value that cannot be encoded must cover nothing")
	}
}
